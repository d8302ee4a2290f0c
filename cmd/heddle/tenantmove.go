package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/tenantmove"
)

// exportManifest is the export directory's table of contents.
type exportManifest struct {
	Format  int                  `json:"format"`
	Tenant  string               `json:"tenant"`
	Pages   []string             `json:"pages"`
	Records int                  `json:"records"`
	Skipped []tenantmove.Skipped `json:"skipped,omitempty"`
}

const exportKeyFile = "export.key"

func newTenantExportCommand(a *app) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "export --out DIR",
		Short: "Save your tenant's whole data, page by page, with its secrets sealed to a key of this directory",
		Long: `Save your tenant's data (admin) through GET /v1/tenant/export: users with their
API keys (as hashes), the catalog with every version, clusters with their
nodes, jobs and tasks, and the static pools' hosts. It works on the local
server and on AWS alike: on DynamoDB it is the backup of one tenant.

DIR must not exist or be empty. It gets export.key, a fresh X25519 key pair
whose public half the server seals every secret to (provider credentials,
cluster SSH keys, hosts' login keys), page-NNNNNN.json and manifest.json,
each readable by its owner alone. Whoever holds export.key with the pages
can read those secrets: keep the directory as you keep the credentials.
Clusters of the local provider are left out, each named with the reason.
The export refuses while a cluster's job runs: wait for it and run again.`,
		Example: `  heddle tenant export --out acme-export`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := emptyDir(out); err != nil {
				return err
			}
			id, err := tenantmove.NewIdentity()
			if err != nil {
				return err
			}
			keyText, _ := id.MarshalText()
			if err := os.WriteFile(filepath.Join(out, exportKeyFile), keyText, 0o600); err != nil {
				return err
			}
			m := exportManifest{Format: tenantmove.Format}
			err = exportPages(cmd.Context(), c, id, func(p *tenantmove.ExportPage, raw []byte) error {
				name := fmt.Sprintf("page-%06d.json", len(m.Pages)+1)
				if err := os.WriteFile(filepath.Join(out, name), raw, 0o600); err != nil {
					return err
				}
				m.Tenant, m.Pages, m.Records = p.Tenant, append(m.Pages, name), m.Records+len(p.Records)
				m.Skipped = append(m.Skipped, p.Skipped...)
				return nil
			})
			if err != nil {
				return err
			}
			mb, _ := json.MarshalIndent(m, "", "  ")
			if err := os.WriteFile(filepath.Join(out, "manifest.json"), append(mb, '\n'), 0o600); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "exported tenant %s: %d records in %d pages to %s\n", m.Tenant, m.Records, len(m.Pages), out)
			printSkipped(w, m.Skipped)
			fmt.Fprintf(w, "%s opens the secrets in the pages: keep the directory private\n", filepath.Join(out, exportKeyFile))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the directory to create (required)")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func newTenantImportCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import DIR",
		Short: "Import a directory of heddle tenant export into your tenant, writing only what is missing",
		Long: `Import what heddle tenant export saved in DIR into the tenant of your key
(admin), which must have the exported tenant's name, through POST
/v1/tenant/import. The secrets are opened here with DIR's export.key and sent
to the server over your authenticated connection, which seals them under its
own key. Every page is checked first: if the tenant holds other data at any
key of the export, nothing is written and the keys are listed. Then each
record is written only where its key is free, so an import that failed half
way finishes when run again, and one run twice writes nothing the second
time.`,
		Example: `  heddle tenant import acme-export`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			dir := args[0]
			keyText, err := os.ReadFile(filepath.Join(dir, exportKeyFile))
			if err != nil {
				return fmt.Errorf("%s is not a tenant export: %w", dir, err)
			}
			id, err := tenantmove.ParseIdentity(keyText)
			if err != nil {
				return err
			}
			var m exportManifest
			mb, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
			if err == nil {
				err = json.Unmarshal(mb, &m)
			}
			if err != nil || len(m.Pages) == 0 {
				return fmt.Errorf("%s/manifest.json is missing or unreadable: export again", dir)
			}
			source := func(ctx context.Context, each func(*tenantmove.ExportPage) error) error {
				for _, name := range m.Pages {
					raw, err := os.ReadFile(filepath.Join(dir, filepath.Base(name)))
					if err != nil {
						return err
					}
					var p tenantmove.ExportPage
					if err := json.Unmarshal(raw, &p); err != nil {
						return fmt.Errorf("%s: not an export page: %w", name, err)
					}
					if err := each(&p); err != nil {
						return err
					}
				}
				return nil
			}
			return importAll(cmd, c, id, source)
		},
	}
	return cmd
}

func newMigrateCommand(a *app) *cobra.Command {
	var to, toKey string
	cmd := &cobra.Command{
		Use:   "migrate --to ENDPOINT",
		Short: "Move your tenant from this deployment (heddle server) to another (AWS), resumable",
		Long: `Move the tenant of your key from this deployment (--endpoint, --key, as
every command) to the deployment at --to, with --to-key (HEDDLE_TO_KEY), an
admin key of a tenant of the same name there (on AWS: heddle tenants create
with the superadmin's key, as infra/README.md says). Users with their API
keys (carried as hashes: everyone keeps their key and changes the
endpoint), the catalog with every version, clusters with their nodes, jobs
and tasks, and the static pools' hosts go across; the clusters are then
managed from the target. Secrets are sealed by the source to a key pair
this command makes and keeps in memory only; it opens them and sends them
to the target's API over your authenticated connection, which seals them
under its own key (KMS on AWS). Nothing is written to disk.

Clusters of the local provider are skipped, each named with the reason:
their nodes are processes of this machine. The catalog's local providers go
across but cannot create nodes on AWS.

Every page is checked against the target first; if the target's tenant
holds other data at a key, nothing is written and the keys are listed.
Then each record is written only where its key is free: a migrate that
failed half way (a lost connection, the target's quota) finishes what is
missing when run again. Stop changing the tenant on the source while it
runs, and stop using the source for it after.`,
		Example: `  HEDDLE_TO_KEY=hdl_... heddle migrate --to https://abc123.execute-api.eu-west-1.amazonaws.com`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := a.client(cmd)
			if err != nil {
				return err
			}
			if toKey == "" {
				toKey = os.Getenv("HEDDLE_TO_KEY")
			}
			if toKey == "" {
				return errors.New("no key for the target: pass --to-key or set HEDDLE_TO_KEY to an admin key of the tenant there")
			}
			dst := NewClient(to, toKey)
			if a.httpClient != nil {
				dst.HTTP = a.httpClient
			}
			srcMe, err := whoAmI(cmd.Context(), src, "this deployment (--endpoint)")
			if err != nil {
				return err
			}
			dstMe, err := whoAmI(cmd.Context(), dst, "the target (--to "+to+")")
			if err != nil {
				return err
			}
			if strings.TrimRight(src.Endpoint, "/") == strings.TrimRight(dst.Endpoint, "/") {
				return fmt.Errorf("--to %s is this deployment itself; give the target's endpoint", to)
			}
			if srcMe.Tenant != dstMe.Tenant {
				return fmt.Errorf("your key here is of tenant %q and --to-key is of tenant %q; create tenant %q on the target and use its admin's key", srcMe.Tenant, dstMe.Tenant, srcMe.Tenant)
			}
			id, err := tenantmove.NewIdentity()
			if err != nil {
				return err
			}
			source := func(ctx context.Context, each func(*tenantmove.ExportPage) error) error {
				return exportPages(ctx, src, id, func(p *tenantmove.ExportPage, _ []byte) error { return each(p) })
			}
			fmt.Fprintf(cmd.OutOrStdout(), "moving tenant %s from %s to %s\n", srcMe.Tenant, src.Endpoint, dst.Endpoint)
			return importAll(cmd, dst, id, source)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the target deployment's API endpoint (required)")
	cmd.Flags().StringVar(&toKey, "to-key", "", "an admin key of the tenant on the target (HEDDLE_TO_KEY)")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

type me struct {
	Tenant string `json:"tenant"`
	User   string `json:"user"`
	Role   string `json:"role"`
}

// whoAmI asks GET /v1/me, so a wrong endpoint or key fails before anything
// is read or written.
func whoAmI(ctx context.Context, c *Client, what string) (me, error) {
	raw, err := c.Do(ctx, http.MethodGet, "/v1/me", nil, nil, "")
	if err != nil {
		return me{}, fmt.Errorf("%s: %w", what, err)
	}
	var m me
	if err := json.Unmarshal(raw, &m); err != nil || m.Tenant == "" {
		return me{}, fmt.Errorf("%s did not answer as a heddle API does (GET /v1/me); check the endpoint", what)
	}
	if m.Role != "admin" && m.Role != "superadmin" {
		return me{}, fmt.Errorf("%s: your key is of user %s, role %s; an export and an import need an admin's key", what, m.User, m.Role)
	}
	return m, nil
}

// exportPages reads every page of the tenant's export, sealed to id.
func exportPages(ctx context.Context, c *Client, id *tenantmove.Identity, each func(*tenantmove.ExportPage, []byte) error) error {
	cursor := ""
	for {
		q := url.Values{"recipient": {id.Recipient().String()}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		raw, err := c.Do(ctx, http.MethodGet, "/v1/tenant/export", q, nil, "")
		if err != nil {
			return fmt.Errorf("exporting: %w", err)
		}
		var p tenantmove.ExportPage
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("exporting: the answer is not an export page: %w", err)
		}
		if err := each(&p, raw); err != nil {
			return err
		}
		if p.Next == "" {
			return nil
		}
		cursor = p.Next
	}
}

// importAll checks every page of source against the target, then imports
// them; source is read twice.
func importAll(cmd *cobra.Command, dst *Client, id *tenantmove.Identity, source func(context.Context, func(*tenantmove.ExportPage) error) error) error {
	ctx := cmd.Context()
	w := cmd.OutOrStdout()
	send := func(p *tenantmove.ExportPage, check bool) (tenantmove.ImportResult, error) {
		if err := id.Unbox(p.Records); err != nil {
			return tenantmove.ImportResult{}, err
		}
		raw, err := dst.JSON(ctx, http.MethodPost, "/v1/tenant/import", nil,
			tenantmove.ImportRequest{Format: p.Format, Tenant: p.Tenant, Records: p.Records, Check: check})
		if err != nil {
			return tenantmove.ImportResult{}, err
		}
		return decodeBody[tenantmove.ImportResult](raw)
	}
	var conflicts []tenantmove.Conflict
	var skipped []tenantmove.Skipped
	missing := 0
	err := source(ctx, func(p *tenantmove.ExportPage) error {
		res, err := send(p, true)
		conflicts = append(conflicts, res.Conflicts...)
		skipped = append(skipped, p.Skipped...)
		missing += res.Written
		return err
	})
	if err != nil {
		return fmt.Errorf("checking the target: %w", err)
	}
	if len(conflicts) > 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "the target's tenant already holds other data at %d keys; nothing was written:\n", len(conflicts))
		sort.Slice(conflicts, func(i, j int) bool { return conflicts[i].PK+conflicts[i].SK < conflicts[j].PK+conflicts[j].SK })
		for _, c := range conflicts {
			fmt.Fprintf(cmd.ErrOrStderr(), "  %s / %s: %s\n", c.PK, c.SK, c.Reason)
		}
		return errors.New("import into a tenant that holds none of this data, or remove it there first")
	}
	var total tenantmove.ImportResult
	err = source(ctx, func(p *tenantmove.ExportPage) error {
		res, err := send(p, false)
		total.Written += res.Written
		total.Kept += res.Kept
		return err
	})
	if err != nil {
		fmt.Fprintf(w, "stopped after writing %d records (%d were there already); fix the cause and run the same command again: it writes only what is missing\n", total.Written, total.Kept)
		return fmt.Errorf("importing: %w", err)
	}
	fmt.Fprintf(w, "imported: %d records written, %d already there\n", total.Written, total.Kept)
	printSkipped(w, skipped)
	return nil
}

func printSkipped(w io.Writer, skipped []tenantmove.Skipped) {
	for _, s := range skipped {
		fmt.Fprintf(w, "skipped cluster %s: %s\n", s.Cluster, s.Reason)
	}
}

// emptyDir makes dir (0700) or accepts an empty one.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty; give a new directory", dir)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.MkdirAll(dir, 0o700)
}
