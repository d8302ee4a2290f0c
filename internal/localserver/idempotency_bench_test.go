package localserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/idempotency"
)

// BenchmarkCreate100NodesWithKey is BenchmarkCreate100Nodes with an
// Idempotency-Key on every create, as the public client and the CLI send
// it: the key's claim (a conditional put), its commit (one more item in
// the job's first transaction) and the stored answer (a conditional
// update) on top of the create. Compare the two for the keys' cost.
func BenchmarkCreate100NodesWithKey(b *testing.B) {
	url, admin := benchServer(b)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		req, err := http.NewRequest(http.MethodPost, url+"/v1/clusters", bytes.NewBufferString(fmt.Sprintf(`{"name":"c%d","template":"big","size":100}`, i)))
		require.NoError(b, err)
		req.Header.Set("Authorization", "Bearer "+admin)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(idempotency.Header, fmt.Sprintf("bench-%d", i))
		start := time.Now()
		resp, err := testHTTP.Do(req)
		require.NoError(b, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat = append(lat, time.Since(start))
		if resp.StatusCode != http.StatusAccepted {
			b.Fatalf("create answered %d", resp.StatusCode)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}
