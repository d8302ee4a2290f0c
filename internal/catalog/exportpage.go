package catalog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// A big catalog is exported in pages (GET /v1/catalog?limit=&cursor=), so
// no answer grows with the catalog: 500 entities carrying scripts of up to
// 400 KB each would be far over the API's answer ceiling as one document.
//
// Each page is a document of the next entities in document order (kind by
// kind as Document lists them, each kind by name), at most limit of them
// and about maxBytes of stored data (always at least one). The pages of
// one export are one snapshot: the cursor names the catalog revision the
// first page was read at, and a page read at another revision is refused
// (ErrChanged): export again from the first page.

// ErrChanged: the catalog changed between two pages of one export.
var ErrChanged = errors.New("catalog: the catalog changed since the first page of this export; export again from the first page")

// ExportPage returns one page of the tenant's catalog as a document, and
// the cursor of the next page ("" after the last). cursor is "" for the
// first page, else what the previous page returned.
func (c *Catalog) ExportPage(ctx context.Context, tenant string, limit, maxBytes int, cursor string) (*Document, string, error) {
	rev, kind, after, err := parseExportCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	s := c.scoped(tenant)
	var (
		d    *Document
		next string
	)
	err = c.snapshot(ctx, s, func() error {
		var version int64
		it, err := s.Get(ctx, revisionKey)
		switch {
		case err == nil:
			version = it.Version
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		if cursor != "" && version != rev {
			return ErrChanged
		}
		d, next, err = exportPage(ctx, s, kind, after, limit, maxBytes)
		if next != "" {
			next = strconv.FormatInt(version, 10) + "/" + next
		}
		return err
	})
	return d, next, err
}

// exportPage reads the entities after (kind, after), where after is a name
// of kind domain.Kinds[kind] ("" for its first), and returns the next
// position as "<kind>/<name>".
func exportPage(ctx context.Context, s store.Store, kind int, after string, limit, maxBytes int) (*Document, string, error) {
	d := &Document{APIVersion: DocumentAPIVersion}
	count, size := 0, 0
	for ; kind < len(domain.Kinds); kind, after = kind+1, "" {
		k := domain.Kinds[kind]
		for {
			page, err := s.Query(ctx, "CAT#"+string(k), store.Query{After: after, Limit: min(limit-count+1, store.MaxPageSize)})
			if err != nil {
				return nil, "", err
			}
			for _, it := range page.Items {
				if it.Status != statusLive {
					after = it.Key.SK
					continue
				}
				if count == limit || (count > 0 && size+len(it.Data) > maxBytes) {
					return d, strconv.Itoa(kind) + "/" + after, nil
				}
				e, err := decodeEntity(k, it.Data)
				if err != nil {
					return nil, "", err
				}
				e.EntityMeta().Version = 0
				d.add(e)
				count++
				size += len(it.Data)
				after = it.Key.SK
			}
			if page.Next == "" {
				break
			}
		}
	}
	return d, "", nil
}

// add puts e in its kind's list.
func (d *Document) add(e domain.Entity) {
	switch v := e.(type) {
	case *domain.Provider:
		d.Providers = append(d.Providers, v)
	case *domain.HardwareType:
		d.HardwareTypes = append(d.HardwareTypes, v)
	case *domain.ImageType:
		d.ImageTypes = append(d.ImageTypes, v)
	case *domain.Script:
		d.Scripts = append(d.Scripts, v)
	case *domain.Service:
		d.Services = append(d.Services, v)
	case *domain.PartialTemplate:
		d.PartialTemplates = append(d.PartialTemplates, v)
	case *domain.ClusterTemplate:
		d.ClusterTemplates = append(d.ClusterTemplates, v)
	}
}

// ErrBadExportCursor: an export cursor that ExportPage did not make.
var ErrBadExportCursor = fmt.Errorf("%w: not an export cursor", store.ErrBadCursor)

// parseExportCursor reads "<revision>/<kind>/<name>".
func parseExportCursor(cursor string) (rev int64, kind int, after string, err error) {
	if cursor == "" {
		return 0, 0, "", nil
	}
	parts := strings.SplitN(cursor, "/", 3)
	if len(parts) != 3 {
		return 0, 0, "", ErrBadExportCursor
	}
	rev, err1 := strconv.ParseInt(parts[0], 10, 64)
	kind, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || rev < 0 || kind < 0 || kind >= len(domain.Kinds) {
		return 0, 0, "", ErrBadExportCursor
	}
	return rev, kind, parts[2], nil
}

// Append adds the entities of page, a later page of the same export, to d.
func (d *Document) Append(page *Document) {
	d.APIVersion = page.APIVersion
	d.Providers = append(d.Providers, page.Providers...)
	d.HardwareTypes = append(d.HardwareTypes, page.HardwareTypes...)
	d.ImageTypes = append(d.ImageTypes, page.ImageTypes...)
	d.Scripts = append(d.Scripts, page.Scripts...)
	d.Services = append(d.Services, page.Services...)
	d.PartialTemplates = append(d.PartialTemplates, page.PartialTemplates...)
	d.ClusterTemplates = append(d.ClusterTemplates, page.ClusterTemplates...)
}
