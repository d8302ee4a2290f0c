package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/domain"
)

// catalogKind reads a KIND argument: a collection's name as the API spells
// it (services, clustertemplates), in the singular too (service), in any
// case.
func catalogKind(arg string) (domain.Kind, error) {
	k := strings.ToLower(arg)
	names := make([]string, len(domain.Kinds))
	for i, kind := range domain.Kinds {
		if k == string(kind) || k+"s" == string(kind) {
			return kind, nil
		}
		names[i] = string(kind)
	}
	return "", fmt.Errorf("%q is not a kind of the catalog; it has %s", arg, strings.Join(names, ", "))
}

func entityPath(kind domain.Kind, name string, rest ...string) string {
	p := "/v1/" + string(kind) + "/" + pathEscape(name)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// completeKindThenName completes KIND, then the names of that kind's
// entities.
func (a *app) completeKindThenName(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		kinds := make([]cobra.Completion, len(domain.Kinds))
		for i, k := range domain.Kinds {
			kinds[i] = string(k)
		}
		return kinds, cobra.ShellCompDirectiveNoFileComp
	case 1:
		if k, err := catalogKind(args[0]); err == nil {
			return a.completeEntities(k)(cmd, args, "")
		}
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

func newCatalogCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Read one catalog entity and its versions, or delete it (import a whole document with heddle apply)",
	}
	var version int
	get := &cobra.Command{
		Use:   "get KIND NAME [--version N]",
		Short: "Print one entity (its latest version, or --version N) as YAML; -o json prints the API's JSON",
		Example: `  heddle catalog get clustertemplates web
  heddle catalog get service nginx --version 1`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeKindThenName,
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := catalogKind(args[0])
			if err != nil {
				return err
			}
			path := entityPath(kind, args[1])
			if version > 0 {
				path = entityPath(kind, args[1], "versions", strconv.Itoa(version))
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			raw, err := c.Do(cmd.Context(), http.MethodGet, path, nil, nil, "")
			if err != nil {
				return err
			}
			if a.jsonOut() {
				return a.printRaw(cmd.OutOrStdout(), raw)
			}
			// An entity is a document, not a row: YAML is how people
			// write it (heddle apply -f), so it is how it is shown.
			y, err := yaml.JSONToYAML(raw)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(y)
			return err
		},
	}
	get.Flags().IntVar(&version, "version", 0, "this version instead of the latest")

	var pf pageFlags
	versions := &cobra.Command{
		Use:               "versions KIND NAME",
		Short:             "List an entity's versions, newest first",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeKindThenName,
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := catalogKind(args[0])
			if err != nil {
				return err
			}
			raw, err := pf.list(a, cmd, entityPath(kind, args[1], "versions"), url.Values{})
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, p *api.Page[json.RawMessage]) {
				tw := newTable(w)
				fmt.Fprintf(tw, "VERSION\tNAME\tDESCRIPTION\n")
				for _, item := range p.Items {
					var m domain.Meta
					_ = json.Unmarshal(item, &m)
					fmt.Fprintf(tw, "%d\t%s\t%s\n", m.Version, m.Name, dash(oneLine(m.Description, 60)))
				}
				_ = tw.Flush()
				printMore(w, p.NextCursor)
			})
		},
	}
	pf.register(versions, "versions")

	del := &cobra.Command{
		Use:               "delete KIND NAME",
		Short:             "Delete an entity and all its versions (refused while a live cluster or another entity uses it)",
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: a.completeKindThenName,
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, err := catalogKind(args[0])
			if err != nil {
				return err
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if _, err := c.Do(cmd.Context(), http.MethodDelete, entityPath(kind, args[1]), nil, nil, ""); err != nil {
				return err
			}
			if !a.jsonOut() {
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s/%s\n", kind, args[1])
			}
			return nil
		},
	}
	cmd.AddCommand(get, versions, del)
	return cmd
}
