package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/api"
	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/webhooks"
)

func newWebhooksCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "webhooks",
		Aliases: []string{"webhook"},
		Short:   "Register HTTPS endpoints for cluster events and pre-start hooks (admin)",
	}
	cmd.AddCommand(newWebhooksAddCommand(a), newWebhooksListCommand(a), newWebhooksDeleteCommand(a), newWebhooksDeliveriesCommand(a))
	return cmd
}

func newWebhooksAddCommand(a *app) *cobra.Command {
	var req webhooks.Request
	var types []string
	cmd := &cobra.Command{
		Use:   "add URL",
		Short: "Register an endpoint; prints its signing secret, this once",
		Long: `Register an endpoint: heddle POSTs it the tenant's cluster events of the
types named (all when none), signed with the secret this command prints once
(docs/health-events-webhooks.md says how to verify a delivery). With
--pre-start the endpoint is a pre-start hook instead: every job waits, before
it starts, for it to answer 2xx within 10 seconds, and fails with its answer
otherwise. The URL must be https (the local server also takes http to
loopback).`,
		Example: `  heddle webhooks add https://hooks.example.com/heddle --types cluster.status,cluster.verified
  heddle webhooks add https://ops.example.com/may-i --pre-start`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.URL = args[0]
			for _, t := range types {
				req.Types = append(req.Types, events.Type(t))
			}
			return call(a, cmd, http.MethodPost, "/v1/webhooks", req, func(w io.Writer, created *api.CreatedWebhook) {
				fmt.Fprintf(w, "webhook  %s  %s\n", created.ID, created.URL)
				fmt.Fprintf(w, "secret   %s\n", created.Secret)
				fmt.Fprintln(w, "keep the secret now: heddle does not show it again")
			})
		},
	}
	cmd.Flags().StringSliceVar(&types, "types", nil, "event types to send: cluster.status, job.status, cluster.verified, cluster.drift (default: all)")
	cmd.Flags().BoolVar(&req.PreStart, "pre-start", false, "a pre-start hook: jobs start only once it answers 2xx")
	cmd.Flags().StringVar(&req.Description, "description", "", "what the endpoint is for")
	return cmd
}

func newWebhooksListCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the tenant's endpoints",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return call(a, cmd, http.MethodGet, "/v1/webhooks", nil, func(w io.Writer, page *api.Page[webhooks.Endpoint]) {
				if len(page.Items) == 0 {
					fmt.Fprintln(w, "no webhooks")
					return
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "ID\tURL\tTYPES\tPRE-START\tCREATED")
				for _, e := range page.Items {
					var ts []string
					for _, t := range e.Types {
						ts = append(ts, string(t))
					}
					kinds := strings.Join(ts, ",")
					if kinds == "" && !e.PreStart {
						kinds = "all"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", e.ID, e.URL, dash(kinds), e.PreStart, humanTime(e.CreatedAt))
				}
				_ = tw.Flush()
			})
		},
	}
}

func newWebhooksDeleteCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Remove an endpoint; deliveries under way to it give up",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			if _, err := c.Do(cmd.Context(), http.MethodDelete, "/v1/webhooks/"+pathEscape(args[0]), nil, nil, ""); err != nil {
				return err
			}
			if !a.jsonOut() {
				fmt.Fprintf(cmd.OutOrStdout(), "deleted webhook %s\n", args[0])
			}
			return nil
		},
	}
}

func newWebhooksDeliveriesCommand(a *app) *cobra.Command {
	var pf pageFlags
	cmd := &cobra.Command{
		Use:   "deliveries ID",
		Short: "Show an endpoint's delivery log, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw, err := pf.list(a, cmd, "/v1/webhooks/"+pathEscape(args[0])+"/deliveries", url.Values{})
			if err != nil {
				return err
			}
			return printAnswer(a, cmd.OutOrStdout(), raw, func(w io.Writer, page *api.Page[webhooks.Delivery]) {
				if len(page.Items) == 0 {
					fmt.Fprintln(w, "no deliveries")
					return
				}
				tw := newTable(w)
				fmt.Fprintln(tw, "EVENT\tTYPE\tSTATUS\tATTEMPTS\tLAST ANSWER")
				for _, d := range page.Items {
					last := "-"
					if n := len(d.Attempts); n > 0 {
						at := d.Attempts[n-1]
						switch {
						case at.Status != 0:
							last = fmt.Sprintf("%d %s", at.Status, firstLine(at.Answer))
						default:
							last = firstLine(at.Error)
						}
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", d.Event.ID, d.Event.Type, d.Status, len(d.Attempts), strings.TrimSpace(last))
				}
				_ = tw.Flush()
				printMore(w, page.NextCursor)
			})
		},
	}
	pf.register(cmd, "deliveries")
	return cmd
}
