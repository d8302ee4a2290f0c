package domain

import "encoding/json"

// Kind names a type of catalog entity. It is also the path segment of the
// entity's REST collection (/v1/services, /v1/clustertemplates, ...).
type Kind string

const (
	KindProvider        Kind = "providers"
	KindHardwareType    Kind = "hardwaretypes"
	KindImageType       Kind = "imagetypes"
	KindService         Kind = "services"
	KindClusterTemplate Kind = "clustertemplates"
	KindPartialTemplate Kind = "partialtemplates"
)

// Kinds lists every catalog kind in the order an import must write them so that
// references always point backwards.
var Kinds = []Kind{KindProvider, KindHardwareType, KindImageType, KindScript, KindService, KindPartialTemplate, KindClusterTemplate}

// Meta is the part every catalog entity shares. Version is assigned by the
// catalog: a PUT writes version max+1, so a client never sets it.
type Meta struct {
	Name        string `json:"name"`
	Label       string `json:"label,omitempty"`
	Description string `json:"description,omitempty"`
	Version     int    `json:"version,omitempty"`
}

// Entity is implemented by every catalog entity.
type Entity interface {
	EntityKind() Kind
	EntityMeta() *Meta
	// Validate checks the entity on its own and returns every problem found.
	Validate() Problems
}

func (m *Meta) EntityMeta() *Meta { return m }

// Link is a labelled URL shown with a service or template (a web UI, docs).
type Link struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// Provider is a place nodes come from: a provider type (local, static, ec2)
// and the administrator's fields for it. Sensitive fields are encrypted at
// rest and never returned.
type Provider struct {
	Meta
	ProviderType string            `json:"providerType"`
	Fields       map[string]string `json:"fields,omitempty"`
}

func (*Provider) EntityKind() Kind { return KindProvider }

// HardwareType maps a provider-neutral size ("small", "large") to each
// provider's flavor.
type HardwareType struct {
	Meta
	ProviderMap map[string]HardwareFlavor `json:"providerMap"`
}

// HardwareFlavor is a hardware type's meaning on one provider.
type HardwareFlavor struct {
	Flavor string `json:"flavor"`
}

func (*HardwareType) EntityKind() Kind { return KindHardwareType }

// ImageType maps a provider-neutral image ("debian-12") to each provider's
// image id and login user.
type ImageType struct {
	Meta
	ProviderMap map[string]ImageRef `json:"providerMap"`
}

// ImageRef is an image type's meaning on one provider.
type ImageRef struct {
	Image   string `json:"image"`
	SSHUser string `json:"sshUser,omitempty"`
}

func (*ImageType) EntityKind() Kind { return KindImageType }

// Action is a node-level step. Create, confirm, bootstrap and delete act on the
// node itself (the provider's job); the others act on one service on a node
// (the automator's job).
type Action string

const (
	ActionCreate     Action = "create"
	ActionConfirm    Action = "confirm"
	ActionBootstrap  Action = "bootstrap"
	ActionInstall    Action = "install"
	ActionConfigure  Action = "configure"
	ActionInitialize Action = "initialize"
	ActionStart      Action = "start"
	ActionStop       Action = "stop"
	ActionRemove     Action = "remove"
	ActionCheck      Action = "check"
	ActionDelete     Action = "delete"
	// ActionProbe is a drift check's look at one node: is the machine
	// there, does it answer with its pinned host key, has it rebooted. No
	// service defines it; heddle carries it out itself.
	ActionProbe Action = "probe"
)

// ServiceActions are the actions a service may define, in lifecycle order.
var ServiceActions = []Action{ActionInstall, ActionConfigure, ActionInitialize, ActionStart, ActionStop, ActionRemove, ActionCheck}

// IsServiceAction reports whether a service definition may carry a.
func (a Action) IsServiceAction() bool {
	for _, s := range ServiceActions {
		if a == s {
			return true
		}
	}
	return false
}

// Service is something installed and run on nodes, with its dependencies and
// the scripts that install, configure, start and stop it.
type Service struct {
	Meta
	Dependencies ServiceDependencies      `json:"dependencies"`
	Actions      map[Action]ServiceAction `json:"actions,omitempty"`
	Links        []Link                   `json:"links,omitempty"`
}

func (*Service) EntityKind() Kind { return KindService }

// ServiceDependencies says how a service relates to others on the cluster.
//
//   - Provides: other names this service satisfies ("sql-db").
//   - Conflicts: services that may not be on the same cluster (names only, not
//     provided names).
//   - Install: requires/uses that order install and remove.
//   - Runtime: requires/uses that order initialize, start and stop.
//
// A required service must be on the cluster; a used one only orders actions
// when it is present.
type ServiceDependencies struct {
	Provides  []string      `json:"provides,omitempty"`
	Conflicts []string      `json:"conflicts,omitempty"`
	Install   DependencySet `json:"install"`
	Runtime   DependencySet `json:"runtime"`
}

// DependencySet is one phase's dependencies.
type DependencySet struct {
	Requires []string `json:"requires,omitempty"`
	Uses     []string `json:"uses,omitempty"`
}

// ServiceAction is how one action of a service is carried out: the automator
// type ("shell"), its fields (for the shell automator: script, args), a timeout
// and a retry limit.
type ServiceAction struct {
	Type    string            `json:"type"`
	Fields  map[string]string `json:"fields,omitempty"`
	Timeout Duration          `json:"timeout,omitempty"`
	// Retries is how many times a failed attempt is retried; nil means the
	// default (DefaultRetries), 0 means never.
	Retries *int `json:"retries,omitempty"`
}

// DefaultRetries and DefaultActionTimeout apply when an action sets neither.
const (
	DefaultRetries       = 3
	DefaultActionTimeout = Duration(10 * 60 * 1e9)
)

// RetryLimit returns the action's retries, or the default.
func (a ServiceAction) RetryLimit() int {
	if a.Retries == nil {
		return DefaultRetries
	}
	return *a.Retries
}

// TimeoutOrDefault returns the action's timeout, or the default.
func (a ServiceAction) TimeoutOrDefault() Duration {
	if a.Timeout == 0 {
		return DefaultActionTimeout
	}
	return a.Timeout
}

// ClusterTemplate is what a user creates a cluster from: which services,
// hardware and images are allowed, the defaults, the layout constraints and the
// lease policy. Extends and Includes name partial templates that are merged in
// when the template is resolved.
type ClusterTemplate struct {
	Meta
	TemplateSections
}

func (*ClusterTemplate) EntityKind() Kind { return KindClusterTemplate }

// PartialTemplate is a reusable piece of a template. When Immutable is set, a
// template that includes or extends it may not override the keys it sets.
type PartialTemplate struct {
	Meta
	Immutable bool `json:"immutable,omitempty"`
	TemplateSections
}

func (*PartialTemplate) EntityKind() Kind { return KindPartialTemplate }

// TemplateSections are the parts cluster and partial templates share.
type TemplateSections struct {
	Extends        *TemplateRef   `json:"extends,omitempty"`
	Includes       []TemplateRef  `json:"includes,omitempty"`
	Compatibility  Compatibility  `json:"compatibility"`
	Defaults       Defaults       `json:"defaults"`
	Constraints    Constraints    `json:"constraints"`
	Administration Administration `json:"administration"`
	Links          []Link         `json:"links,omitempty"`
}

// TemplateRef names a partial template, optionally at a fixed version (0 means
// the latest at resolution time).
type TemplateRef struct {
	Name    string `json:"name"`
	Version int    `json:"version,omitempty"`
}

// Compatibility lists what a cluster from this template may use. An empty
// hardware or image list means any.
type Compatibility struct {
	Services      []string `json:"services,omitempty"`
	HardwareTypes []string `json:"hardwareTypes,omitempty"`
	ImageTypes    []string `json:"imageTypes,omitempty"`
}

// Defaults are used when a create request does not say otherwise.
type Defaults struct {
	Services     []string        `json:"services,omitempty"`
	Provider     string          `json:"provider,omitempty"`
	HardwareType string          `json:"hardwareType,omitempty"`
	ImageType    string          `json:"imageType,omitempty"`
	DNSSuffix    string          `json:"dnsSuffix,omitempty"`
	Config       json.RawMessage `json:"config,omitempty"`
}

// Constraints restrict layouts.
type Constraints struct {
	Size     SizeConstraint               `json:"size"`
	Layout   LayoutConstraint             `json:"layout"`
	Services map[string]ServiceConstraint `json:"services,omitempty"`
}

// SizeConstraint bounds the node count. Max 0 means no bound beyond the
// server's own limit (MaxClusterSize).
type SizeConstraint struct {
	Min int `json:"min,omitempty"`
	Max int `json:"max,omitempty"`
}

// MaxClusterSize is the most nodes any cluster may have.
const MaxClusterSize = 10000

// LayoutConstraint groups services per node. Every must-coexist group, reduced
// to the services on the cluster, must be all on a node or none of it there.
// A cant-coexist group forbids the whole set on one node (any proper subset is
// fine).
type LayoutConstraint struct {
	MustCoexist [][]string `json:"mustCoexist,omitempty"`
	CantCoexist [][]string `json:"cantCoexist,omitempty"`
}

// ServiceConstraint restricts where one service may run and how many nodes
// run it.
type ServiceConstraint struct {
	HardwareTypes []string `json:"hardwareTypes,omitempty"`
	ImageTypes    []string `json:"imageTypes,omitempty"`
	Quantities    Quantity `json:"quantities"`
}

// Quantity bounds how many nodes run a service. Max 0 means no upper bound.
type Quantity struct {
	Min int `json:"min,omitempty"`
	Max int `json:"max,omitempty"`
}

// Administration holds the template's operational policies.
type Administration struct {
	Lease LeasePolicy `json:"lease"`
	// VerifyEvery, when set, has the janitor verify the cluster's health
	// this long after the last verification ended (at least a minute).
	VerifyEvery Duration `json:"verifyEvery,omitempty"`
	// DriftEvery, when set, has the janitor check the cluster for drift
	// this long after its create or its last drift check ended (at least a
	// minute); 0 turns periodic checks off. Absent: DefaultDriftEvery of
	// the cluster's provider type, which a cluster records in its resolved
	// template.
	DriftEvery *Duration `json:"driftEvery,omitempty"`
	// Repair says what heddle does about the drift a check finds (see
	// RepairPolicy); absent: report it only.
	Repair *RepairPolicy `json:"repair,omitempty"`
	// Autoscale, when set, has the janitor size the cluster (see
	// Autoscale); a cluster may narrow it (PUT /v1/clusters/{id}/autoscale).
	Autoscale *Autoscale `json:"autoscale,omitempty"`
}

// LeasePolicy: Initial is the lease a new cluster gets, Max the longest a
// cluster may live from its creation, Step the most one extension may add.
// Zero means unlimited (Initial 0: the cluster never expires).
type LeasePolicy struct {
	Initial Duration `json:"initial,omitempty"`
	Max     Duration `json:"max,omitempty"`
	Step    Duration `json:"step,omitempty"`
}

// NewEntity returns an empty entity of kind k, or nil for an unknown kind.
func NewEntity(k Kind) Entity {
	switch k {
	case KindProvider:
		return &Provider{}
	case KindHardwareType:
		return &HardwareType{}
	case KindImageType:
		return &ImageType{}
	case KindScript:
		return &Script{}
	case KindService:
		return &Service{}
	case KindClusterTemplate:
		return &ClusterTemplate{}
	case KindPartialTemplate:
		return &PartialTemplate{}
	}
	return nil
}
