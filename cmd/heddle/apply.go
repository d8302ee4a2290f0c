package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
)

func newApplyCommand(a *app) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Import a catalog document (YAML or JSON) into your tenant",
		Long: `Import a catalog document, as ` + "`GET /v1/catalog`" + ` exports it, into your tenant
(admin). The import is all or nothing, and applying the same document again
changes nothing. -f - reads the document from stdin.`,
		Example: `  heddle apply -f docs/examples/catalog.yaml
  cat catalog.json | heddle apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := readDocument(cmd.InOrStdin(), file)
			if err != nil {
				return err
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			refs := documentRefs(data)
			var before map[catalog.Ref]int
			if !a.jsonOut() {
				before = versions(cmd.Context(), c, refs)
			}
			raw, err := c.Do(cmd.Context(), http.MethodPost, "/v1/catalog", nil, data, documentType(file, data))
			if err != nil {
				return err
			}
			if a.jsonOut() {
				return printJSON(cmd.OutOrStdout(), raw)
			}
			res, err := decodeBody[importResult](raw)
			if err != nil {
				return err
			}
			if res.Unchanged == nil && before != nil && len(res.Updated) > 0 {
				// The server lists an entity the import left as it was
				// under "updated"; its version says whether it changed.
				if after := versions(cmd.Context(), c, res.Updated); after != nil {
					res.split(before, after)
				}
			}
			printImport(cmd.OutOrStdout(), &res, refs)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the catalog document (.yaml, .yml or .json; - for stdin)")
	_ = cmd.MarkFlagRequired("file")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	return cmd
}

func readDocument(stdin io.Reader, file string) ([]byte, error) {
	var (
		data []byte
		err  error
	)
	if file == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the catalog document is empty")
	}
	return data, nil
}

// documentType picks the Content-Type: by the file's extension, else JSON if
// the document starts like JSON, else YAML.
func documentType(file string, data []byte) string {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".json":
		return "application/json"
	case ".yaml", ".yml":
		return "application/yaml"
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return "application/json"
	}
	return "application/yaml"
}

// documentRefs lists the document's entities, or nil if it cannot be read
// here (the server has accepted it; only the "unchanged" list is lost).
func documentRefs(data []byte) []catalog.Ref {
	d, err := catalog.DecodeDocument(data)
	if err != nil {
		return nil
	}
	var refs []catalog.Ref
	add := func(e domain.Entity) {
		refs = append(refs, catalog.Ref{Kind: e.EntityKind(), Name: e.EntityMeta().Name})
	}
	for _, e := range d.Providers {
		add(e)
	}
	for _, e := range d.HardwareTypes {
		add(e)
	}
	for _, e := range d.ImageTypes {
		add(e)
	}
	for _, e := range d.Services {
		add(e)
	}
	for _, e := range d.PartialTemplates {
		add(e)
	}
	for _, e := range d.ClusterTemplates {
		add(e)
	}
	return refs
}

// importResult is the answer to POST /v1/catalog. Unchanged is filled in
// here (or by a server that reports it).
type importResult struct {
	Created   []catalog.Ref `json:"created"`
	Updated   []catalog.Ref `json:"updated"`
	Unchanged []catalog.Ref `json:"unchanged"`
}

// split moves the updated entities whose version did not move to Unchanged.
func (r *importResult) split(before, after map[catalog.Ref]int) {
	updated := []catalog.Ref{}
	r.Unchanged = []catalog.Ref{}
	for _, ref := range r.Updated {
		if v, ok := after[ref]; ok && v == before[ref] {
			r.Unchanged = append(r.Unchanged, ref)
		} else {
			updated = append(updated, ref)
		}
	}
	r.Updated = updated
}

// versions reads the current version of each of refs' entities by listing
// their kinds; nil if that fails.
func versions(ctx context.Context, c *Client, refs []catalog.Ref) map[catalog.Ref]int {
	if len(refs) == 0 {
		return nil
	}
	kinds := map[domain.Kind]bool{}
	for _, r := range refs {
		kinds[r.Kind] = true
	}
	out := map[catalog.Ref]int{}
	for kind := range kinds {
		q := url.Values{}
		for {
			raw, err := c.Do(ctx, http.MethodGet, "/v1/"+pathEscape(string(kind)), q, nil, "")
			if err != nil {
				return nil
			}
			p, err := decodeBody[page[domain.Meta]](raw)
			if err != nil {
				return nil
			}
			for _, m := range p.Items {
				out[catalog.Ref{Kind: kind, Name: m.Name}] = m.Version
			}
			if p.NextCursor == "" {
				break
			}
			q.Set("cursor", p.NextCursor)
		}
	}
	return out
}

func printImport(w io.Writer, res *importResult, all []catalog.Ref) {
	written := map[catalog.Ref]bool{}
	tw := newTable(w)
	for _, r := range res.Created {
		written[r] = true
		fmt.Fprintf(tw, "created\t%s/%s\n", r.Kind, r.Name)
	}
	for _, r := range res.Updated {
		written[r] = true
		fmt.Fprintf(tw, "updated\t%s/%s\n", r.Kind, r.Name)
	}
	unchanged := 0
	for _, r := range res.Unchanged {
		written[r] = true
		unchanged++
		fmt.Fprintf(tw, "unchanged\t%s/%s\n", r.Kind, r.Name)
	}
	// Entities of the document the answer does not name were left alone.
	for _, r := range all {
		if !written[r] {
			unchanged++
			fmt.Fprintf(tw, "unchanged\t%s/%s\n", r.Kind, r.Name)
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "%d created, %d updated, %d unchanged\n", len(res.Created), len(res.Updated), unchanged)
}
