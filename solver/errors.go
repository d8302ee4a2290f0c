package solver

import (
	"errors"
	"fmt"
	"strings"
)

// Reason is one thing that stops a request: a machine-readable code, the
// services, template constraints and nodes involved, and a sentence a person
// can act on. Constraints are paths into the template
// ("constraints.services.zookeeper.quantities.min",
// "constraints.layout.cantCoexist[1]").
type Reason struct {
	Code        string   `json:"code"`
	Services    []string `json:"services,omitempty"`
	Constraints []string `json:"constraints,omitempty"`
	Nodes       []string `json:"nodes,omitempty"`
	Message     string   `json:"message"`
}

// Codes of a RequestError's reasons: the request itself is wrong.
const (
	CodeMissingTemplate      = "missing_template"
	CodeInvalidSize          = "invalid_size"
	CodeInvalidCount         = "invalid_count"
	CodeNoProvider           = "no_provider"
	CodeNoServices           = "no_services"
	CodeUnknownService       = "unknown_service"
	CodeIncompatibleService  = "incompatible_service"
	CodeMissingDependency    = "missing_dependency"
	CodeServiceConflict      = "service_conflict"
	CodeUnknownHardwareType  = "unknown_hardware_type"
	CodeUnknownImageType     = "unknown_image_type"
	CodeNoHardwareType       = "no_hardware_type"
	CodeNoImageType          = "no_image_type"
	CodeUnknownNode          = "unknown_node"
	CodeDuplicateNode        = "duplicate_node"
	CodeNodeService          = "node_service_not_on_cluster"
	CodeServiceOnCluster     = "service_on_cluster"
	CodeServiceNotOnCluster  = "service_not_on_cluster"
	CodeRequiredByRemaining  = "required_by_remaining"
	CodeLastServices         = "last_services"
	CodeUnsupportedLayout    = "unsupported_layout"
	CodeTooManyNodes         = "too_many_nodes"
	CodeNodeNumbers          = "node_numbers"
	CodeHardwareUnavailable  = "hardware_unavailable"
	CodeImageUnavailable     = "image_unavailable"
	CodeServiceHardware      = "service_hardware"
	CodeServiceImage         = "service_image"
	CodeMustCoexistBroken    = "must_coexist_broken"
	CodeCantCoexistBroken    = "cant_coexist_broken"
	CodeServiceWithoutNodes  = "service_without_nodes"
	CodeNodeWithoutLayout    = "node_without_layout"
	CodeQuantityBelowMinimum = "quantity_below_minimum"
	CodeQuantityAboveMaximum = "quantity_above_maximum"
)

// Codes of a NoLayoutError's reasons: the constraints cannot all hold.
const (
	CodeSizeOutOfRange   = "size_out_of_range"
	CodeQuantityTooLarge = "quantity_above_size"
	CodeQuantityConflict = "quantity_conflict"
	CodeHardwareConflict = "hardware_conflict"
	CodeImageConflict    = "image_conflict"
	CodeCoexistConflict  = "coexist_conflict"
	CodeCapacity         = "capacity"
	CodeCannotShare      = "cannot_share"
	CodeCannotPack       = "cannot_pack"
	CodeNoRoom           = "no_room"
	CodeBelowMinimum     = "below_minimum"
	CodeAboveMaximum     = "above_maximum"
)

// RequestError means the request cannot be solved as asked: an unknown or
// incompatible service, a missing dependency, a conflict, a bad size or node.
// Nothing about the layout was tried.
type RequestError struct {
	Reasons []Reason
}

func (e *RequestError) Error() string { return "solver: invalid request: " + joinReasons(e.Reasons) }

// NoLayoutError means the request is well formed but no layout satisfies the
// template's constraints. Each reason names constraints that cannot hold
// together; fixing every reason listed is necessary, and the solver reports
// every independent cause it finds.
type NoLayoutError struct {
	Reasons []Reason
}

func (e *NoLayoutError) Error() string { return "solver: no valid layout: " + joinReasons(e.Reasons) }

// ErrTooComplex is matched (errors.Is) by every error that means the solver
// stopped because the work budget ran out: the input is neither solved nor
// proved impossible. A larger Budget may solve it; simpler constraints will.
var ErrTooComplex = errors.New("solver: layout too complex to solve within the work budget")

// TooComplexError says which step ran out of budget.
type TooComplexError struct {
	Budget int64
	Step   string
}

func (e *TooComplexError) Error() string {
	return fmt.Sprintf("solver: %s needs more than the work budget of %d units; simplify the template's layout constraints or raise the budget", e.Step, e.Budget)
}

func (e *TooComplexError) Is(target error) bool { return target == ErrTooComplex }

func joinReasons(rs []Reason) string {
	msgs := make([]string, len(rs))
	for i, r := range rs {
		msgs[i] = r.Message
	}
	return strings.Join(msgs, "; ")
}

func requestError(rs ...Reason) error { return &RequestError{Reasons: rs} }

// budget bounds the work of one request. Every step that can grow faster
// than the input (enumerations, searches) spends from it, so no input runs
// for long: a pathological one gets a TooComplexError instead.
//
// Questions of preference (may this unit have one more node? may one more
// new node copy this layout?) are probes: each may spend only a share of
// what is left above a reserve, and one that runs out of its share counts
// as "no". The answer then stays valid, only less preferred, and the
// reserve is left for laying out what was proved.
type budget struct {
	limit, spent int64
	step         string
	probeEnd     int64 // while probing, the spent level at which the probe stops
}

// probeShare and probeReserve: a probe spends at most 1/probeShare of the
// budget left above limit/probeReserve.
const (
	probeShare   = 8
	probeReserve = 4
)

// errProbeSpent stops a probe that used up its share; it never leaves the
// package.
var errProbeSpent = errors.New("solver: probe ran out of its share of the budget")

func newBudget(limit int64) *budget {
	if limit <= 0 {
		limit = DefaultBudget
	}
	return &budget{limit: limit}
}

func (b *budget) spend(n int64) error {
	b.spent += n
	if b.spent > b.limit {
		step := b.step
		if step == "" {
			step = "solving the layout"
		}
		return &TooComplexError{Budget: b.limit, Step: step}
	}
	if b.probeEnd > 0 && b.spent > b.probeEnd {
		return errProbeSpent
	}
	return nil
}

// probe answers a question of preference within a share of the budget: a
// question it cannot settle in that share gets false.
func (b *budget) probe(question func() (bool, error)) (bool, error) {
	if b.probeEnd > 0 {
		return question()
	}
	share := (b.limit - b.limit/probeReserve - b.spent) / probeShare
	if share <= 0 {
		return false, nil
	}
	b.probeEnd = b.spent + share
	ok, err := question()
	b.probeEnd = 0
	if errors.Is(err, errProbeSpent) {
		return false, nil
	}
	return ok, err
}
