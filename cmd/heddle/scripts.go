package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/heddle-io/heddle/client"
	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/catalog"
	"github.com/heddle-io/heddle/internal/domain"
)

func newScriptsCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "scripts",
		Aliases: []string{"script"},
		Short:   "Manage script resources: named, versioned scripts that service actions run",
		Long: `A script resource is a script kept in the catalog under a name, with every
version it ever had. A shell action runs one with the field script_resource
(and script_version to pin a version). A cluster runs the versions that were
the latest when it was created or last synced, whatever is pushed meanwhile.`,
	}
	cmd.AddCommand(newScriptsPushCommand(a), newScriptsListCommand(a), newScriptsShowCommand(a),
		newScriptsVersionsCommand(a), newScriptsDeleteCommand(a))
	return cmd
}

func newScriptsPushCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "push NAME FILE",
		Short: "Upload FILE as the next version of script NAME (admin); the same content changes nothing",
		Example: `  heddle scripts push install-kv install-kv.sh
  generate-script | heddle scripts push install-kv -`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var (
				content []byte
				err     error
			)
			if args[1] == "-" {
				content, err = io.ReadAll(cmd.InOrStdin())
			} else {
				content, err = os.ReadFile(args[1])
			}
			if err != nil {
				return err
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			var header http.Header
			raw, err := c.Do(client.KeepHeader(cmd.Context(), &header), http.MethodPut, "/v1/scripts/"+pathEscape(args[0]), nil, content, "text/plain; charset=utf-8")
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, s *domain.Script) {
				// The same text as the latest version writes nothing, and
				// the push says so rather than naming a version it did not make.
				unchanged := ""
				if header.Get(api.OutcomeHeader) == string(catalog.OutcomeUnchanged) {
					unchanged = " unchanged"
				}
				fmt.Fprintf(w, "script %s version %d%s (%d bytes, sha256 %s)\n", s.Name, s.Version, unchanged, s.Size, shortSum(s.SHA256))
			})
		},
	}
}

func newScriptsListCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the script resources, each at its latest version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return listScripts(a, cmd, "/v1/scripts", "no scripts", true)
		},
	}
}

func newScriptsVersionsCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "versions NAME",
		Short: "List every version of a script",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return listScripts(a, cmd, "/v1/scripts/"+pathEscape(args[0])+"/versions", "no versions", false)
		},
	}
}

// listScripts prints every page of a script listing as a table.
func listScripts(a *app, cmd *cobra.Command, path, none string, withName bool) error {
	c, err := a.client(cmd)
	if err != nil {
		return err
	}
	raw, err := allPages(cmd, c, path, url.Values{})
	if err != nil {
		return err
	}
	return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, page *api.Page[domain.Script]) {
		if len(page.Items) == 0 {
			fmt.Fprintln(w, none)
			return
		}
		tw := newTable(w)
		if withName {
			fmt.Fprintln(tw, "NAME\tVERSION\tBYTES\tSHA256\tDESCRIPTION")
		} else {
			fmt.Fprintln(tw, "VERSION\tBYTES\tSHA256\tDESCRIPTION")
		}
		for _, s := range page.Items {
			if withName {
				fmt.Fprintf(tw, "%s\t", s.Name)
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\n", s.Version, s.Size, shortSum(s.SHA256), dash(oneLine(s.Description, 60)))
		}
		_ = tw.Flush()
	})
}

func newScriptsShowCommand(a *app) *cobra.Command {
	var version int
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Print a script's content (the latest version, or --version N)",
		Example: `  heddle scripts show install-kv
  heddle scripts show install-kv --version 2 > install-kv.v2.sh`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/v1/scripts/" + pathEscape(args[0])
			if version != 0 {
				path += "/versions/" + strconv.Itoa(version)
			}
			return call(a, cmd, http.MethodGet, path, nil, func(w io.Writer, s *domain.Script) {
				_, _ = io.WriteString(w, s.Content)
			})
		},
	}
	cmd.Flags().IntVar(&version, "version", 0, "the version to print (default: the latest)")
	return cmd
}

func newScriptsDeleteCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a script (admin); refused while a service runs it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if _, err := c.Do(cmd.Context(), http.MethodDelete, "/v1/scripts/"+pathEscape(args[0]), nil, nil, ""); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted script %s\n", args[0])
			return nil
		},
	}
}

func shortSum(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return dash(sum)
}

// inlineScriptFiles reads the files a catalog document's scripts name with
// `file:` (relative to the document's directory, dir) into their content,
// so that one import uploads them with the rest. A document without such
// scripts is returned as it is, with ok false.
func inlineScriptFiles(data []byte, dir string) (out []byte, ok bool, err error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, false, nil // the server says what is wrong with it
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(js, &doc) != nil || doc["scripts"] == nil {
		return nil, false, nil
	}
	var scripts []map[string]any
	if json.Unmarshal(doc["scripts"], &scripts) != nil {
		return nil, false, nil
	}
	changed := false
	for i, s := range scripts {
		file, has := s["file"]
		if !has {
			continue
		}
		name, ok := file.(string)
		if !ok || name == "" {
			return nil, false, fmt.Errorf("scripts[%d].file: must name a file, relative to the document", i)
		}
		if _, both := s["content"]; both {
			return nil, false, fmt.Errorf("scripts[%d]: give content or file, not both", i)
		}
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return nil, false, fmt.Errorf("scripts[%d].file: %w", i, err)
		}
		delete(s, "file")
		s["content"] = string(content)
		changed = true
	}
	if !changed {
		return nil, false, nil
	}
	if doc["scripts"], err = json.Marshal(scripts); err != nil {
		return nil, false, err
	}
	out, err = json.Marshal(doc)
	if err != nil {
		return nil, false, errors.New("the document cannot be re-encoded: " + err.Error())
	}
	return out, true, nil
}
