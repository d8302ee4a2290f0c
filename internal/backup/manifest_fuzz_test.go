package backup_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/backup"
)

// FuzzReadManifest: whatever a manifest holds, reading it either fails or
// yields one that names plain files in the backup directory, a checksum,
// and a format this heddle reads.
func FuzzReadManifest(f *testing.F) {
	f.Add(`{"format":1,"createdAt":"2026-01-01T00:00:00Z","heddleVersion":"v","store":{"name":"heddle.db","bytes":10,"sha256":"ab"},"masterKey":"master.key"}`)
	f.Add(`{"format":2}`)
	f.Add(`{"format":1,"store":{"name":"../x","sha256":"ab"},"masterKey":"k"}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, raw string) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, backup.ManifestFile), []byte(raw), 0o600))
		m, err := backup.ReadManifest(dir)
		if err != nil {
			return
		}
		require.True(t, m.Format >= 1 && m.Format <= backup.FormatVersion)
		require.NotEmpty(t, m.Store.SHA256)
		for _, name := range []string{m.Store.Name, m.MasterKey} {
			require.NotEmpty(t, name)
			require.False(t, strings.ContainsAny(name, `/\`), name)
			require.NotContains(t, []string{".", ".."}, name)
		}
	})
}
