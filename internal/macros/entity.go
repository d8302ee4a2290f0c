package macros

import (
	"maps"
	"slices"

	"github.com/heddle-io/heddle/internal/domain"
)

// EntityProblems parses every macro a catalog entity holds and reports each
// that does not parse at its field path in the entity: a service's action
// fields (actions.A.fields.F) and a template's default config
// (defaults.config, the message naming the value's path inside it). The
// catalog calls it when an entity is written and the cluster service when a
// cluster is created (under services.S), so a typo, or a '%' meant
// literally, is refused with the same path and sentence at both.
func EntityProblems(e domain.Entity) domain.Problems {
	var ps domain.Problems
	switch e := e.(type) {
	case *domain.Service:
		for _, action := range slices.Sorted(maps.Keys(e.Actions)) {
			fields := e.Actions[action].Fields
			for _, field := range slices.Sorted(maps.Keys(fields)) {
				if _, err := Parse(fields[field]); err != nil {
					ps = append(ps, domain.Problem{Field: "actions." + string(action) + ".fields." + field, Code: domain.CodeInvalid, Message: err.Error()})
				}
			}
		}
	case *domain.ClusterTemplate:
		ps = configProblems(e.Defaults.Config)
	case *domain.PartialTemplate:
		ps = configProblems(e.Defaults.Config)
	}
	return ps
}

func configProblems(config []byte) domain.Problems {
	err := ValidateJSON(config)
	if err == nil {
		return nil
	}
	var ps domain.Problems
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			ps = append(ps, domain.Problem{Field: "defaults.config", Code: domain.CodeInvalid, Message: e.Error()})
		}
		return ps
	}
	return domain.Problems{{Field: "defaults.config", Code: domain.CodeMalformed, Message: "is not JSON: " + err.Error()}}
}
