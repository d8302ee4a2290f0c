package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/domain"
)

func userPath(name string, rest ...string) string {
	p := "/v1/users/" + pathEscape(name)
	for _, r := range rest {
		p += "/" + pathEscape(r)
	}
	return p
}

func newUsersCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "users",
		Aliases: []string{"user"},
		Short:   "Manage your tenant's users and their roles (admin)",
	}
	roles := cobra.FixedCompletions([]string{"user", "admin"}, cobra.ShellCompDirectiveNoFileComp)

	var pf pageFlags
	list := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List your tenant's users",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := pf.list(a, cmd, "/v1/users", url.Values{})
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, p *api.Page[domain.User]) {
				tw := newTable(w)
				fmt.Fprintf(tw, "USER\tROLE\tCREATED\n")
				for _, u := range p.Items {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", u.Name, u.Role, humanTime(u.CreatedAt))
				}
				_ = tw.Flush()
				printMore(w, p.NextCursor)
			})
		},
	}
	pf.register(list, "users")

	var role string
	create := &cobra.Command{
		Use:   "create NAME [--role user|admin]",
		Short: "Add a user to your tenant (then give them a key: heddle keys create NAME)",
		Example: `  heddle users create bob
  heddle keys create bob`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(a, cmd, http.MethodPost, "/v1/users", domain.User{Name: args[0], Role: domain.Role(role)}, func(w io.Writer, u *domain.User) {
				fmt.Fprintf(w, "created user %s (%s); give them a key with: heddle keys create %s\n", u.Name, u.Role, u.Name)
			})
		},
	}
	create.Flags().StringVar(&role, "role", "user", "user or admin")
	_ = create.RegisterFlagCompletionFunc("role", roles)

	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Remove a user and every key of theirs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if _, err := c.Do(cmd.Context(), http.MethodDelete, userPath(args[0]), nil, nil, ""); err != nil {
				return err
			}
			if !a.jsonOut() {
				fmt.Fprintf(cmd.OutOrStdout(), "deleted user %s and their keys\n", args[0])
			}
			return nil
		},
	}

	setRole := &cobra.Command{
		Use:   "role NAME user|admin",
		Short: "Give a user another role; their keys carry it from their next request",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(a, cmd, http.MethodPut, userPath(args[0]), api.SetRoleRequest{Role: domain.Role(args[1])}, func(w io.Writer, u *domain.User) {
				fmt.Fprintf(w, "user %s is now %s\n", u.Name, u.Role)
			})
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return roles(cmd, args, "")
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
	}
	cmd.AddCommand(list, create, del, setRole)
	return cmd
}

func newKeysCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "keys",
		Aliases: []string{"key"},
		Short:   "List, create and revoke a user's API keys (admins any user's, users their own)",
	}
	var pf pageFlags
	list := &cobra.Command{
		Use:     "list USER",
		Aliases: []string{"ls"},
		Short:   "List a user's keys (their secrets are never shown again)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := pf.list(a, cmd, userPath(args[0], "keys"), url.Values{})
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, p *api.Page[domain.APIKey]) {
				if len(p.Items) == 0 {
					fmt.Fprintf(w, "%s has no keys\n", args[0])
					return
				}
				tw := newTable(w)
				fmt.Fprintf(tw, "KEY\tUSER\tCREATED\n")
				for _, k := range p.Items {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", k.ID, k.User, humanTime(k.CreatedAt))
				}
				_ = tw.Flush()
				printMore(w, p.NextCursor)
			})
		},
	}
	pf.register(list, "keys")

	create := &cobra.Command{
		Use:   "create USER",
		Short: "Make a new API key for a user and print its secret, the only time it is shown",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(a, cmd, http.MethodPost, userPath(args[0], "keys"), nil, func(w io.Writer, k *domain.APIKey) {
				fmt.Fprintf(w, "The API key %s of %s is shown only now; keep it:\n\n  %s\n", k.ID, k.User, k.Secret)
			})
		},
	}

	revoke := &cobra.Command{
		Use:     "revoke USER KEY",
		Aliases: []string{"delete"},
		Short:   "Revoke a key: it stops working at once",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if _, err := c.Do(cmd.Context(), http.MethodDelete, userPath(args[0], "keys", args[1]), nil, nil, ""); err != nil {
				return err
			}
			if !a.jsonOut() {
				fmt.Fprintf(cmd.OutOrStdout(), "revoked key %s of %s\n", args[1], args[0])
			}
			return nil
		},
	}
	cmd.AddCommand(list, create, revoke)
	return cmd
}

// confirm asks on stdin when it is a terminal whether to go on; with no
// terminal to ask on (a script, a pipe) it refuses unless yes, so nothing
// is destroyed unasked.
func confirm(cmd *cobra.Command, yes bool, question string) error {
	if yes {
		return nil
	}
	in, ok := cmd.InOrStdin().(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return fmt.Errorf("%s: there is no terminal to ask on, so nothing was done; add --yes", question)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s [y/N] ", question)
	answer, _ := bufio.NewReader(in).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return errors.New("not confirmed; nothing was done")
	}
	return nil
}
