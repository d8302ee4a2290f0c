package tenantmove

import (
	"errors"
	"fmt"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// Format is the version of the export's layout. An import refuses a newer
// one rather than guess at it.
const Format = 1

// Placeholder stands where a sealed value was; the record's Secrets say
// what goes there.
const Placeholder = "heddle-export:secret"

// Page bounds: a page's records carry at most about MaxPageBytes of item
// bodies (one item is at most 400 KB), so its JSON (base64 bodies) stays far
// below the API's 5 MB answer ceiling and an import request below its body
// limit; and a page makes at most MaxPageReads reads, so it answers well
// inside API Gateway's 30 s.
const (
	MaxPageRecords = 500
	MaxPageBytes   = 1 << 20
	// MaxPageReads bounds the store reads of one page (DynamoDB Local
	// answers a query in a few milliseconds, DynamoDB in about ten).
	MaxPageReads = 400
)

// Record is one item of the tenant's data.
type Record struct {
	// PK is the partition key inside the tenant's scope (no "T#tenant#").
	PK       string           `json:"pk"`
	SK       string           `json:"sk"`
	Status   string           `json:"status,omitempty"`
	Counters map[string]int64 `json:"counters,omitempty"`
	Index    *store.IndexKey  `json:"index,omitempty"`
	// Data is the item's body, sealed values replaced by Placeholder.
	Data    []byte   `json:"data"`
	Secrets []Secret `json:"secrets,omitempty"`
}

// Secret is one sealed value of a record. An export fills Boxed; an import
// request carries Value.
type Secret struct {
	// Path is the JSON pointer (RFC 6901) of the value in Data.
	Path string `json:"path"`
	// Boxed is the value sealed to the export's recipient (NaCl anonymous
	// box), base64url.
	Boxed string `json:"boxed,omitempty"`
	// Value is the plaintext, only in an import request.
	Value string `json:"value,omitempty"`
}

// Skipped is a cluster the export leaves out, and why.
type Skipped struct {
	Cluster string `json:"cluster"`
	Reason  string `json:"reason"`
}

// ExportPage is one page of an export.
type ExportPage struct {
	Format  int       `json:"format"`
	Tenant  string    `json:"tenant"`
	Records []Record  `json:"records"`
	Skipped []Skipped `json:"skipped,omitempty"`
	// Next resumes the walk; empty on the last page.
	Next string `json:"next,omitempty"`
}

// ImportRequest is one page given to an import.
type ImportRequest struct {
	Format  int      `json:"format"`
	Tenant  string   `json:"tenant"`
	Records []Record `json:"records"`
	// Check only looks: it reports what would be written, kept or in
	// conflict, and writes nothing.
	Check bool `json:"check,omitempty"`
}

// ImportResult says what an import page did.
type ImportResult struct {
	Written   int        `json:"written"`
	Kept      int        `json:"kept"`
	Conflicts []Conflict `json:"conflicts,omitempty"`
}

// Conflict is a record whose key already holds something else.
type Conflict struct {
	PK     string `json:"pk"`
	SK     string `json:"sk"`
	Reason string `json:"reason"`
}

// Errors a caller maps to answers.
var (
	// ErrBusy: the tenant is in the middle of a change the export cannot
	// carry (a running job, a catalog import); run it again later.
	ErrBusy = errors.New("tenantmove: the tenant is busy")
	// ErrUnknownSecret: a sealed value sits where no binding is known.
	ErrUnknownSecret = errors.New("tenantmove: a sealed value at an unknown place")
	// ErrConflict: the target holds other data at a record's key.
	ErrConflict = errors.New("tenantmove: the target holds other data")
	// ErrQuota: the target tenant's quota cannot take a cluster.
	ErrQuota = errors.New("tenantmove: the target tenant's quota is too small")
)

// ConflictError lists the conflicting records.
type ConflictError struct{ Conflicts []Conflict }

func (e *ConflictError) Error() string {
	parts := make([]string, 0, len(e.Conflicts))
	for i, c := range e.Conflicts {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Conflicts)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("%s / %s: %s", c.PK, c.SK, c.Reason))
	}
	return "the target tenant already holds other data at " + strings.Join(parts, "; ")
}

func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// catalogKinds are the catalog's entity kinds, whose heads live in
// CAT#<kind> and versions in CAT#<kind>#<name>.
// Script resources are among them: a service names its script, so a
// catalog moved without them could create no cluster.
var catalogKinds = []domain.Kind{domain.KindProvider, domain.KindHardwareType, domain.KindImageType,
	domain.KindScript, domain.KindService, domain.KindClusterTemplate, domain.KindPartialTemplate}

// exact and prefixed partitions an export walks and an import accepts.
var (
	exactPartitions  = []string{"USERS", "CAT", "CLUSTERS", "CLUSTERSPECS", "NODESUM", "JOBSUM", "VERIFYDUE"}
	prefixPartitions = []string{"KEYS#", "NODES#", "JOBS#", "TASKS#", "DEFERRED#", "ROLLBACK#", "JOBLISTS#", "SUBMIT#", "HOSTS#", "HOSTCLAIM#", "TASKIDX#"}
)

// carried reports whether pk is a partition an export holds.
func carried(pk string) bool {
	for _, p := range exactPartitions {
		if pk == p {
			return true
		}
	}
	for _, p := range prefixPartitions {
		if rest, ok := strings.CutPrefix(pk, p); ok && rest != "" {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(pk, "CAT#"); ok {
		kind, name, versioned := strings.Cut(rest, "#")
		for _, k := range catalogKinds {
			if string(k) == kind {
				return !versioned || name != ""
			}
		}
	}
	return false
}

// child is a partition (SK empty) or one item (SK set) the walk visits
// under an item.
type child struct {
	PK string `json:"p"`
	SK string `json:"s,omitempty"`
}

// children lists, in walk order, what the walk visits under the item at
// pk/sk; pk "" is the root.
func children(pk, sk string) []child {
	switch {
	case pk == "":
		out := []child{{PK: "USERS"}, {PK: "CAT"}}
		for _, k := range catalogKinds {
			out = append(out, child{PK: "CAT#" + string(k)})
		}
		return append(out, child{PK: "CLUSTERS"})
	case pk == "USERS":
		return []child{{PK: "KEYS#" + sk}}
	case pk == "CAT#"+string(domain.KindProvider):
		return []child{{PK: pk + "#" + sk}, {PK: "HOSTS#" + sk}, {PK: "HOSTCLAIM#" + sk}}
	case strings.HasPrefix(pk, "CAT#") && strings.Count(pk, "#") == 1:
		return []child{{PK: pk + "#" + sk}}
	case pk == "CLUSTERS":
		return []child{{PK: "CLUSTERSPECS", SK: sk}, {PK: "NODESUM", SK: sk}, {PK: "NODES#" + sk}, {PK: "JOBS#" + sk},
			{PK: "VERIFYDUE", SK: sk}}
	case strings.HasPrefix(pk, "JOBS#"):
		return []child{{PK: "JOBSUM", SK: sk}, {PK: "TASKS#" + sk}, {PK: "DEFERRED#" + sk}, {PK: "ROLLBACK#" + sk},
			{PK: "JOBLISTS#" + sk}, {PK: "SUBMIT#" + sk}, {PK: "TASKIDX#" + sk}}
	}
	return nil
}
