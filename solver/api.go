package solver

import "github.com/heddle-io/heddle/internal/domain"

// DefaultBudget is the work budget of a request that sets none. One unit is
// one step of an enumeration or search (a few tens of nanoseconds), so the
// default bounds any request to well under 100 ms on one core.
const DefaultBudget int64 = 1_000_000

// FirstNodeNum is the Num of a new cluster's first node; later nodes count up
// from the highest Num the cluster has.
const FirstNodeNum = 1000

// Catalog is the part of a tenant's catalog the solver reads: every service,
// hardware type and image type a template may name, by name.
type Catalog struct {
	Services      map[string]*domain.Service
	HardwareTypes map[string]*domain.HardwareType
	ImageTypes    map[string]*domain.ImageType
}

// CreateRequest asks for the layout of a new cluster.
type CreateRequest struct {
	// ClusterID prefixes node ids: node n is "<ClusterID>-<n>".
	ClusterID string
	// Template is the resolved template (extends and includes merged).
	Template *domain.ClusterTemplate
	Catalog  Catalog
	// Provider defaults to Template.Defaults.Provider.
	Provider string
	// Size is the number of nodes, 1 to domain.MaxClusterSize.
	Size int
	// Services defaults to Template.Defaults.Services.
	Services []string
	// HardwareType and ImageType are preferences: every node whose services
	// allow the type gets it. Empty means the template's default. A named type
	// must exist, be compatible with the template and exist on the provider.
	HardwareType string
	ImageType    string
	// Budget bounds the work, in units; 0 means DefaultBudget.
	Budget int64
}

// Cluster is an existing cluster as the solver needs it.
type Cluster struct {
	ID string
	// Template is the resolved template the cluster was created or last
	// synced with.
	Template *domain.ClusterTemplate
	Provider string
	Services []string
	// Nodes are the cluster's nodes; only ID, Num and NodeLayout are read.
	Nodes []domain.Node
}

// ExpandRequest asks for Count more nodes. Existing nodes keep exactly what
// they run; new nodes copy existing node layouts where the constraints allow.
type ExpandRequest struct {
	Cluster      Cluster
	Catalog      Catalog
	Count        int
	HardwareType string
	ImageType    string
	Budget       int64
}

// ShrinkRequest asks to remove nodes: either the nodes named in NodeIDs, or
// Count nodes chosen by the solver (highest Num first).
type ShrinkRequest struct {
	Cluster Cluster
	Count   int
	NodeIDs []string
	Budget  int64
}

// AddServicesRequest asks to add services to a cluster, onto its existing
// nodes and, when MaxNewNodes > 0, onto at most that many new nodes.
type AddServicesRequest struct {
	Cluster     Cluster
	Catalog     Catalog
	Services    []string
	MaxNewNodes int
	Budget      int64
}

// RemoveServicesRequest asks to take services off a cluster.
type RemoveServicesRequest struct {
	Cluster  Cluster
	Catalog  Catalog
	Services []string
}

// SyncRequest asks whether a cluster's current layout satisfies another
// version of its template.
type SyncRequest struct {
	Cluster  Cluster
	Template *domain.ClusterTemplate
	Catalog  Catalog
}

// Layout is a solved cluster layout.
type Layout struct {
	// Groups are the distinct node layouts of the whole cluster after the
	// change and how many nodes have each, in a canonical order: fewest nodes
	// first, then most services, then by hardware, image and service names.
	Groups []Group
	// Nodes is every node of the cluster after the change, by Num. Existing
	// nodes keep their id, Num and every field the solver does not change.
	// New nodes have ID "<cluster id>-<Num>", status PLANNED, and their
	// flavor, image and SSH user from the provider's entries of their types.
	Nodes []domain.Node
	// NewNodes and RemovedNodes are the ids of the nodes the change creates
	// and deletes, by Num.
	NewNodes     []string
	RemovedNodes []string
	// Changed lists existing nodes whose services change, by Num.
	Changed []NodeChange
}

// Group is one node layout and the number of nodes that have it.
type Group struct {
	domain.NodeLayout
	Count int `json:"count"`
}

// NodeChange is what an operation adds to and removes from one existing node.
type NodeChange struct {
	ID      string   `json:"id"`
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}
