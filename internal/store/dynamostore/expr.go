package dynamostore

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/heddle-io/heddle/internal/store"
)

// expr collects the names and values of the expressions of one request.
// Every attribute name goes through a placeholder: no reserved-word surprises
// and no injection through counter names.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
	nameOf map[string]string
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}, nameOf: map[string]string{}}
}

func (e *expr) name(attr string) string {
	if p, ok := e.nameOf[attr]; ok {
		return p
	}
	p := "#n" + strconv.Itoa(len(e.names))
	e.names[p] = attr
	e.nameOf[attr] = p
	return p
}

func (e *expr) value(v types.AttributeValue) string {
	p := ":v" + strconv.Itoa(len(e.values))
	e.values[p] = v
	return p
}

// Names and Values return nil when empty, as DynamoDB refuses empty maps.
func (e *expr) Names() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

func (e *expr) Values() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

// condition renders c as a ConditionExpression with the meaning of
// store.Condition.Holds; "" for the zero condition.
func (e *expr) condition(c store.Condition) string {
	var parts []string
	if c.MustNotExist {
		parts = append(parts, "attribute_not_exists("+e.name(attrPK)+")")
	}
	if c.MustExist || c.Version != 0 || len(c.StatusIn) > 0 || len(c.CountersAtLeast) > 0 {
		// Stated outright: the status and counter tests below can hold on
		// an absent item (an absent attribute counts as "" or 0).
		parts = append(parts, "attribute_exists("+e.name(attrPK)+")")
	}
	if c.Version != 0 {
		parts = append(parts, e.name(attrVersion)+" = "+e.value(num(c.Version)))
	}
	if len(c.StatusIn) > 0 {
		st := e.name(attrStatus)
		var in []string
		emptyOK := false
		for _, s := range c.StatusIn {
			if s == emptyStatus {
				emptyOK = true
				continue
			}
			in = append(in, e.value(str(s)))
		}
		var alts []string
		if emptyOK {
			// The empty status is never stored: it is the absent attribute.
			alts = append(alts, "attribute_not_exists("+st+")")
		}
		if len(in) > 0 {
			alts = append(alts, st+" IN ("+strings.Join(in, ", ")+")")
		}
		parts = append(parts, "("+strings.Join(alts, " OR ")+")")
	}
	for _, name := range slices.Sorted(maps.Keys(c.CountersAtLeast)) {
		min := c.CountersAtLeast[name]
		attr := e.name(counterPrefix + name)
		test := attr + " >= " + e.value(num(min))
		if min <= 0 {
			test = "(attribute_not_exists(" + attr + ") OR " + test + ")"
		}
		parts = append(parts, test)
	}
	return strings.Join(parts, " AND ")
}

// putGuard adds to a put's condition the test that the item is still at the
// version the new one was numbered from (see doc.go), unless cond already
// says as much.
func (e *expr) putGuard(cond store.Condition, prior int64) string {
	switch {
	case prior == 0 && cond.MustNotExist, prior != 0 && cond.Version == prior:
		return ""
	case prior == 0:
		return "attribute_not_exists(" + e.name(attrPK) + ")"
	default:
		return e.name(attrVersion) + " = " + e.value(num(prior))
	}
}

func and(parts ...string) string {
	var nonEmpty []string
	for _, p := range parts {
		if p != "" {
			nonEmpty = append(nonEmpty, p)
		}
	}
	return strings.Join(nonEmpty, " AND ")
}

// update renders ch as an UpdateExpression. It always bumps the version:
// ADD on an absent v starts from 0, so a created item gets version 1.
func (e *expr) update(ch store.Changes) string {
	var set, remove, add []string
	add = append(add, e.name(attrVersion)+" "+e.value(num(1)))
	if ch.Data != nil {
		if len(ch.Data) == 0 {
			remove = append(remove, e.name(attrData))
		} else {
			set = append(set, e.name(attrData)+" = "+e.value(&types.AttributeValueMemberB{Value: ch.Data}))
		}
	}
	if ch.Status != nil {
		if *ch.Status == "" {
			remove = append(remove, e.name(attrStatus))
		} else {
			set = append(set, e.name(attrStatus)+" = "+e.value(str(*ch.Status)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ch.Add)) {
		add = append(add, e.name(counterPrefix+name)+" "+e.value(num(ch.Add[name])))
	}
	for _, name := range slices.Sorted(maps.Keys(ch.Set)) {
		set = append(set, e.name(counterPrefix+name)+" = "+e.value(num(ch.Set[name])))
	}
	if ch.Index != nil {
		set = append(set,
			e.name(attrIndexPK)+" = "+e.value(str(ch.Index.Partition)),
			e.name(attrIndexSK)+" = "+e.value(str(ch.Index.Sort)))
	}
	if ch.ClearIndex {
		remove = append(remove, e.name(attrIndexPK), e.name(attrIndexSK))
	}
	var clauses []string
	if len(set) > 0 {
		clauses = append(clauses, "SET "+strings.Join(set, ", "))
	}
	if len(remove) > 0 {
		clauses = append(clauses, "REMOVE "+strings.Join(remove, ", "))
	}
	clauses = append(clauses, "ADD "+strings.Join(add, ", "))
	return strings.Join(clauses, " ")
}
