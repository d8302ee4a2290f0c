package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/catalog"
)

func newApplyCommand(a *app) *cobra.Command {
	var (
		file string
		cf   convergeFlags
	)
	cmd := &cobra.Command{
		Use:   "apply -f FILE",
		Short: "Import a catalog document (YAML or JSON) into your tenant",
		Long: `Import a catalog document, as ` + "`GET /v1/catalog`" + ` exports it, into your tenant
(admin). The import is all or nothing, and applying the same document again
changes nothing. -f - reads the document from stdin.

A script resource in the document's scripts list holds its text in content,
or names a file with file: (relative to the document; to the current
directory with -f -), which apply reads and uploads with the rest.

A document may also declare clusters (a clusters list: name, template,
templateVersion, size, services, config, lease). apply then converges them:
it creates what is missing and, for a cluster that exists, previews and runs
the operations that bring it to the declaration (sync, remove-services,
shrink, reconfigure, add-services, expand), one job at a time. A cluster
apply makes is marked managedBy: apply; apply changes no other cluster
unless --adopt, and --prune deletes the clusters it manages that the
document no longer declares (asking on a terminal unless --yes). heddle
diff -f shows the plan and changes nothing.`,
		Example: `  heddle apply -f docs/examples/catalog.yaml
  cat catalog.json | heddle apply -f -
  heddle apply -f docs/examples/clusters.yaml --prune --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := readDocument(cmd.InOrStdin(), file)
			if err != nil {
				return err
			}
			contentType := documentType(file, data)
			dir := "."
			if file != "-" {
				dir = filepath.Dir(file)
			}
			inlined, ok, err := inlineScriptFiles(data, dir)
			if err != nil {
				return err
			}
			if ok {
				data, contentType = inlined, "application/json"
			}
			doc, err := parseDesired(data)
			if err != nil {
				return err
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if doc.Declared {
				return a.converge(cmd, c, doc, cf, false)
			}
			var ans answer
			res, err := c.ImportCatalog(ans.keep(cmd.Context()), data, contentType)
			if err != nil {
				return err
			}
			return printValue(a, cmd.OutOrStdout(), &ans, res, printImport)
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the catalog document (.yaml, .yml or .json; - for stdin)")
	_ = cmd.MarkFlagRequired("file")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml", "json")
	cf.register(cmd, true)
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

func printImport(w io.Writer, res *catalog.ImportResult) {
	tw := newTable(w)
	for _, group := range []struct {
		what string
		refs []catalog.Ref
	}{{"created", res.Created}, {"updated", res.Updated}, {"unchanged", res.Unchanged}} {
		for _, r := range group.refs {
			fmt.Fprintf(tw, "%s\t%s/%s\n", group.what, r.Kind, r.Name)
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "%d created, %d updated, %d unchanged\n", len(res.Created), len(res.Updated), len(res.Unchanged))
}
