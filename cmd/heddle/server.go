package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/heddle-io/heddle/internal/access"
	"github.com/heddle-io/heddle/internal/localserver"
)

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func newServerCommand() *cobra.Command {
	cfg := localserver.Config{}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run heddle as one local process on the embedded store",
		Long: `Run heddle as one local process: the /v1 API on a local port over an embedded
bbolt database in the data directory. On its first start it creates the
superadmin and prints its API key once (or uses HEDDLE_BOOTSTRAP_KEY).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg.BootstrapKey = os.Getenv("HEDDLE_BOOTSTRAP_KEY")
			cfg.Version = buildVersion()
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			srv, err := localserver.Start(ctx, cfg)
			if err != nil {
				return err
			}
			printWelcome(cmd, srv, cfg)
			select {
			case <-ctx.Done():
			case err := <-waitErr(srv):
				return err
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "heddle: shutting down")
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return srv.Shutdown(shutdownCtx)
		},
	}
	cmd.Flags().StringVar(&cfg.DataDir, "data-dir", envOr("HEDDLE_DATA_DIR", ".heddle"), "where the embedded store lives (HEDDLE_DATA_DIR)")
	cmd.Flags().StringVar(&cfg.Listen, "listen", envOr("HEDDLE_LISTEN", "127.0.0.1:7070"), "address for the API (HEDDLE_LISTEN)")
	cmd.Flags().IntVar(&cfg.TenantRequestsPerMinute, "tenant-requests-per-minute", 3000, "each tenant's API requests per minute; more answer 429 (0: no limit)")
	cmd.Flags().IntVar(&cfg.AuthFailuresPerMinute, "auth-failures-per-minute", 10, "failed authentications per minute from one address before it is answered 429 (0: no limit)")
	return cmd
}

func waitErr(srv *localserver.Server) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- srv.Wait() }()
	return ch
}

func printWelcome(cmd *cobra.Command, srv *localserver.Server, cfg localserver.Config) {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "heddle %s serving %s/v1 (data in %s)\n", cfg.Version, srv.URL(), srv.DataDir)
	key := "$HEDDLE_KEY"
	if srv.BootstrapSecret != "" {
		key = srv.BootstrapSecret
		fmt.Fprintf(out, "\nCreated the superadmin. Its API key is shown only now; keep it:\n\n  export HEDDLE_KEY=%s\n\n", srv.BootstrapSecret)
	}
	fmt.Fprintf(out, `Try:
  curl -s %[1]s/v1/status
  curl -s -H "Authorization: Bearer %[2]s" %[1]s/v1/me
  curl -s -H "Authorization: Bearer %[2]s" -H "Content-Type: application/yaml" \
       --data-binary @docs/examples/catalog.yaml %[1]s/v1/catalog
  curl -s -H "Authorization: Bearer %[2]s" %[1]s/v1/clustertemplates/web/resolved
The API is described at %[1]s/v1/openapi.json; the dashboard is at %[1]s/
(log in with a key). Stop with Ctrl-C.
`, srv.URL(), key)
}

func newKeygenCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "Print a fresh API key (for HEDDLE_BOOTSTRAP_KEY)",
		Args:  cobra.NoArgs,
		Run:   func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), access.NewKeySecret()) },
	}
}
