package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/identity"
)

func newIssuersCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "issuers",
		Aliases: []string{"issuer"},
		Short:   "Manage the identity providers your tenant trusts for sign-in (admin)",
		Long: `An issuer is an OpenID Connect provider (Okta, Entra ID, Google, Keycloak, Dex)
whose ID tokens sign people in: heddle verifies them against the provider's
keys and maps their claims to a tenant and a role with the issuer's rules,
the first that matches deciding. A user appears in the tenant on first
sign-in. An admin manages the issuers of their own tenant; the superadmin's
(the system tenant's) may map people into any tenant. See docs/sign-in.md.`,
	}
	cmd.AddCommand(newIssuersListCommand(a), newIssuersShowCommand(a), newIssuersAddCommand(a), newIssuersRemoveCommand(a))
	return cmd
}

func issuerPath(name string) string { return "/v1/issuers/" + pathEscape(name) }

func newIssuersListCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List your tenant's trusted identity providers",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			items, err := fetchAll[identity.Issuer](cmd.Context(), c, "/v1/issuers", nil)
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), mustJSON(api.Page[identity.Issuer]{Items: items}), func(w io.Writer, p *api.Page[identity.Issuer]) {
				t := newTable(w)
				fmt.Fprintln(t, "NAME\tURL\tAUDIENCE\tUSER CLAIM\tRULES")
				for _, is := range p.Items {
					fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%d\n", is.Name, is.URL, is.Audience, is.UserClaimOrDefault(), len(is.Rules))
				}
				_ = t.Flush()
			})
		},
	}
}

func newIssuersShowCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show one trusted identity provider and its rules",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(a, cmd, http.MethodGet, issuerPath(args[0]), nil, printIssuer)
		},
	}
}

func printIssuer(w io.Writer, is *identity.Issuer) {
	fmt.Fprintf(w, "name        %s\nurl         %s\naudience    %s\nclient id   %s\ncli client  %s\nlabel       %s\nuser claim  %s\nscopes      %s\nrules:\n",
		is.Name, is.URL, is.Audience, is.ClientIDOrAudience(), is.CLIClientIDOrDefault(), is.Label(), is.UserClaimOrDefault(), strings.Join(is.ScopesToAsk(), " "))
	for i, r := range is.Rules {
		fmt.Fprintf(w, "  %d. %s\n", i+1, formatRule(r))
	}
}

// formatRule writes a rule as --rule takes it.
func formatRule(r identity.Rule) string {
	var parts []string
	if r.Claim != "" {
		parts = append(parts, r.Claim+"="+r.Value)
	}
	if r.EmailDomain != "" {
		parts = append(parts, "emailDomain="+r.EmailDomain)
	}
	if r.Tenant != "" {
		parts = append(parts, "tenant="+r.Tenant)
	}
	return strings.Join(append(parts, "role="+string(r.Role)), ",")
}

// parseRule reads a --rule: comma-separated key=value pairs, where role,
// tenant and emailDomain are the rule's fields and any other key is the
// claim it tests ("groups=heddle-admins,role=admin").
func parseRule(s string) (identity.Rule, error) {
	var r identity.Rule
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || k == "" || v == "" {
			return r, fmt.Errorf("--rule %q: %q is not key=value; write e.g. groups=heddle-admins,role=admin or emailDomain=example.com,role=user", s, part)
		}
		switch k {
		case "role":
			r.Role = domain.Role(v)
		case "tenant":
			r.Tenant = v
		case "emailDomain":
			r.EmailDomain = v
		default:
			if r.Claim != "" {
				return r, fmt.Errorf("--rule %q tests two claims (%s and %s); a rule tests one, so give two rules", s, r.Claim, k)
			}
			r.Claim, r.Value = k, v
		}
	}
	if r.Role == "" {
		return r, fmt.Errorf("--rule %q names no role; end it with role=user or role=admin", s)
	}
	return r, nil
}

func newIssuersAddCommand(a *app) *cobra.Command {
	var is identity.Issuer
	var rules []string
	var file string
	cmd := &cobra.Command{
		Use:   "add NAME --url URL --audience CLIENT_ID --rule RULE... | add -f FILE",
		Short: "Trust an identity provider (or replace the one of that name with --replace)",
		Long: `Trust an identity provider. Each --rule is comma-separated key=value pairs:
role (user or admin; superadmin only for the system tenant), tenant (only the
superadmin's issuers may name another tenant), emailDomain (the email claim
ends in @domain and is not unverified), and at most one other key, a claim the
token must carry with that value (or hold it, for a list such as groups).
The first rule that matches decides; a token that matches none is refused.
Each --scope is asked for by heddle login and the dashboard beside openid,
email, profile and offline_access: Dex, for one, puts groups in the ID token
only when the groups scope is asked for.

With -f the issuer is read from a YAML or JSON file (- for stdin) with the
fields of GET /v1/issuers/NAME.`,
		Example: `  heddle issuers add corp --url https://idp.example.com/realms/acme --audience heddle \
    --rule groups=heddle-admins,role=admin --rule emailDomain=example.com,role=user
  heddle issuers add -f issuer.yaml`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file != "" {
				var data []byte
				var err error
				if file == "-" {
					data, err = io.ReadAll(cmd.InOrStdin())
				} else {
					data, err = os.ReadFile(file)
				}
				if err != nil {
					return fmt.Errorf("reading %s: %w", file, err)
				}
				if err := yaml.UnmarshalStrict(data, &is); err != nil {
					return fmt.Errorf("%s: %w", file, err)
				}
			}
			if len(args) == 1 {
				is.Name = args[0]
			}
			for _, s := range rules {
				r, err := parseRule(s)
				if err != nil {
					return err
				}
				is.Rules = append(is.Rules, r)
			}
			replace, _ := cmd.Flags().GetBool("replace")
			method, path := http.MethodPost, "/v1/issuers"
			if replace {
				method, path = http.MethodPut, issuerPath(is.Name)
			}
			return call(a, cmd, method, path, is, func(w io.Writer, got *identity.Issuer) {
				verb := "trusting"
				if replace {
					verb = "updated"
				}
				fmt.Fprintf(w, "%s %s (%s) for tenant %s\n", verb, got.Name, got.URL, got.TenantID)
				printIssuer(w, got)
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "file", "f", "", "read the issuer from a YAML or JSON file (- for stdin)")
	f.StringVar(&is.URL, "url", "", "the issuer URL, exactly as tokens carry it in iss")
	f.StringVar(&is.Audience, "audience", "", "the audience tokens must carry (heddle's client id at the provider)")
	f.StringVar(&is.CLIClientID, "cli-client-id", "", "a public client of its own for heddle login (default: --client-id); its tokens' audience is accepted too")
	f.StringVar(&is.ClientID, "client-id", "", "the public client heddle login and the dashboard sign in with (default: the audience)")
	f.StringVar(&is.DisplayName, "display-name", "", "the dashboard's button label (default: the URL's host)")
	f.StringVar(&is.UserClaim, "user-claim", "", "the claim naming the user (default "+identity.DefaultUserClaim+")")
	f.StringArrayVar(&is.Scopes, "scope", nil, "a scope sign-in asks for beside openid email profile offline_access, e.g. groups for Dex (repeat)")
	f.StringArrayVar(&rules, "rule", nil, "a mapping rule, e.g. groups=heddle-admins,role=admin (repeat; first match wins)")
	f.Bool("replace", false, "replace the issuer of that name instead of adding one")
	return cmd
}

func newIssuersRemoveCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "remove NAME",
		Aliases: []string{"rm"},
		Short:   "Stop trusting an identity provider; its tokens are refused at once (the users it added stay)",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if _, err := c.JSON(cmd.Context(), http.MethodDelete, issuerPath(args[0]), nil, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed issuer %s\n", args[0])
			return nil
		},
	}
}
