package catalog

import (
	"errors"
	"fmt"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

var (
	// ErrNotFound: no live entity (or version) by that name.
	ErrNotFound = errors.New("catalog: not found")
	// ErrPrecondition: an If-Match did not match the latest version.
	ErrPrecondition = errors.New("catalog: the entity changed since it was read")
	// ErrBusy: concurrent writes kept winning; the caller may retry.
	ErrBusy = errors.New("catalog: too many concurrent changes, try again")
	// ErrTooLarge: an entity too large to store in one item (see
	// EntityTooLargeError). Imports have no size limit of their own: one
	// that does not fit in a transaction is staged (see importStaged).
	ErrTooLarge = errors.New("catalog: import too large")
)

func isNotFound(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, store.ErrNotFound)
}

// ReferencedError refuses a delete: these still refer to the entity.
type ReferencedError struct {
	Kind      domain.Kind
	Name      string
	Referrers []Ref
}

func (e *ReferencedError) Error() string {
	names := make([]string, 0, len(e.Referrers))
	for _, r := range e.Referrers {
		names = append(names, string(r.Kind)+"/"+r.Name)
	}
	return fmt.Sprintf("%s %q is still referred to by %s; change or delete those first", singular(e.Kind), e.Name, strings.Join(names, ", "))
}

func singular(k domain.Kind) string {
	switch k {
	case domain.KindProvider:
		return "provider"
	case domain.KindHardwareType:
		return "hardware type"
	case domain.KindImageType:
		return "image type"
	case domain.KindService:
		return "service"
	case domain.KindClusterTemplate:
		return "cluster template"
	case domain.KindPartialTemplate:
		return "partial template"
	}
	return string(k)
}
