package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// docBlock returns the first fenced block of the given language after
// marker in a docs page, as written.
func docBlock(t *testing.T, path, marker, lang string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(data)
	at := strings.Index(text, marker)
	require.GreaterOrEqual(t, at, 0, "%s has %q", path, marker)
	block := text[at:]
	start := strings.Index(block, "```"+lang+"\n")
	require.GreaterOrEqual(t, start, 0)
	block = block[start+len("```"+lang+"\n"):]
	return block[:strings.Index(block, "```")]
}

// TestDocsWebhookStepsAndPythonVerifier runs docs/health-events-webhooks.md's
// webhook commands as written against a receiver on this machine, then its
// Python verifier, as written, on what the receiver got and on a forgery.
func TestDocsWebhookStepsAndPythonVerifier(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is missing")
	}
	var mu sync.Mutex
	type got struct {
		signature string
		body      []byte
	}
	var received []got
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, got{r.Header.Get("Heddle-Signature"), body})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)

	s := newServer(t)
	admin := s.tenant("acme")
	s.must(admin, "apply", "-f", "../../docs/examples/health-catalog.yaml")
	steps, _ := docSteps(t, "../../docs/health-events-webhooks.md", "### Try the webhooks")
	require.Len(t, steps, 5)
	var webhookID, secret string
	for _, line := range steps {
		line = strings.NewReplacer("RECEIVER_URL", receiver.URL+"/heddle", "WEBHOOK_ID", webhookID).Replace(line)
		t.Logf("$ %s", line)
		args, ok := strings.CutPrefix(line, "bin/heddle ")
		require.True(t, ok, line)
		argv := strings.Fields(args)
		if strings.Contains(line, "webhooks deliveries") {
			// Deliveries are made on the janitor's next pass.
			deadline := time.Now().Add(60 * time.Second)
			for strings.Count(s.must(admin, argv...), "DELIVERED") < 2 {
				require.True(t, time.Now().Before(deadline), "the deliveries did not arrive")
				time.Sleep(200 * time.Millisecond)
			}
		}
		out := s.must(admin, argv...)
		switch {
		case strings.Contains(line, "webhooks add"):
			m := regexp.MustCompile(`(?m)^webhook\s+(wh-\S+)`).FindStringSubmatch(out)
			require.NotNil(t, m, out)
			webhookID = m[1]
			m = regexp.MustCompile(`(?m)^secret\s+(whsec_\S+)`).FindStringSubmatch(out)
			require.NotNil(t, m, out)
			secret = m[1]
		case strings.Contains(line, "webhooks list"):
			require.Contains(t, out, webhookID)
			require.Contains(t, out, "cluster.status")
		case strings.Contains(line, "webhooks deliveries"):
			require.Contains(t, out, "cluster.status  DELIVERED  1")
		case strings.Contains(line, "webhooks delete"):
			require.Contains(t, out, "deleted webhook "+webhookID)
		}
	}

	script := filepath.Join(t.TempDir(), "verify.py")
	require.NoError(t, os.WriteFile(script, []byte(docBlock(t, "../../docs/health-events-webhooks.md", "### Verifying a delivery", "python")), 0o600))
	verify := func(signature string, body []byte) (string, error) {
		cmd := exec.Command("python3", script)
		cmd.Env = append(os.Environ(), "HEDDLE_WEBHOOK_SECRET="+secret, "HEDDLE_SIGNATURE="+signature)
		cmd.Stdin = strings.NewReader(string(body))
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	mu.Lock()
	deliveries := append([]got(nil), received...)
	mu.Unlock()
	require.Len(t, deliveries, 2)
	for _, d := range deliveries {
		out, err := verify(d.signature, d.body)
		require.NoError(t, err, out)
		require.Equal(t, "valid", out)
		out, err = verify(d.signature, append(append([]byte(nil), d.body...), ' '))
		require.Error(t, err, "an altered body is refused")
		require.Equal(t, "forged", out)
	}
	forged := strings.Replace(deliveries[0].signature, "v1=", "v1=0", 1)
	out, err := verify(forged, deliveries[0].body)
	require.Error(t, err)
	require.Equal(t, "forged", out)
}
