package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/heddle-io/heddle/internal/access"
)

// BackupFunc writes a consistent copy of the store: it calls begin with the
// copy's size once it knows it, then writes that many bytes to the writer
// begin returns, and says how many it wrote.
type BackupFunc func(ctx context.Context, begin func(size int64) io.Writer) (int64, error)

// BackupKeyHeader names, in GET /v1/backup's answer, the master key that
// seals the store's secrets (its id, never the key).
const BackupKeyHeader = "Heddle-Master-Key-Id"

// CodeNotSupported answers a route this deployment does not serve.
const CodeNotSupported = "not_supported"

// getBackup streams a consistent copy of the embedded store (a bbolt file)
// to a superadmin: `heddle backup` saves it next to the master key. The
// copy is one read transaction's view, so writes go on while it streams.
// It holds every tenant's data, the secrets still sealed.
func (s *Server) getBackup(w http.ResponseWriter, r *http.Request, _ access.Principal) error {
	if s.backup == nil {
		return newError(http.StatusNotImplemented, CodeNotSupported,
			"this deployment keeps its data in DynamoDB, which is backed up by point-in-time recovery; see infra/README.md (Backups)")
	}
	start := time.Now()
	begun := false
	n, err := s.backup(r.Context(), func(size int64) io.Writer {
		begun = true
		// The length up front: a copy cut short reads as one to the
		// client, whose body ends before it.
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="heddle.db"`)
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		if s.backupKey != "" {
			w.Header().Set(BackupKeyHeader, s.backupKey)
		}
		return w
	})
	if err != nil && !begun {
		return fmt.Errorf("starting the backup: %w", err)
	}
	if err != nil {
		// The status line is out; cutting the stream short is all that
		// is left, and the client checks the length it was told.
		s.log.ErrorContext(r.Context(), "backup failed", slog.String("requestId", requestID(r.Context())), slog.Any("error", err))
		panic(http.ErrAbortHandler)
	}
	s.log.InfoContext(r.Context(), "backup streamed", slog.Int64("bytes", n), slog.Duration("took", time.Since(start)))
	return nil
}
