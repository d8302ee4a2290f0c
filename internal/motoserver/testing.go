package motoserver

import (
	"context"
	"os"
	"testing"
)

// RequirePython is the interpreter with moto for a test. Without one the
// test fails under CI=true (CI's image has moto, so its absence is a broken
// image, not a reason to pass) and skips elsewhere, saying how to get it.
func RequirePython(t testing.TB) string {
	t.Helper()
	py, err := Python()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs moto: %v", err)
		}
		t.Skipf("moto is not installed: %v", err)
	}
	return py
}

// StartForTest starts a moto_server for t (see RequirePython when moto is
// missing) and stops it when t ends, passed or failed. Its output goes to
// t.Log only if t fails.
func StartForTest(t testing.TB) *Server {
	t.Helper()
	RequirePython(t)
	s, err := Start(context.Background(), nil)
	if err != nil {
		t.Fatalf("moto_server: %v", err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("moto_server's output:\n%s", tail(s.Logs(), 8000))
		}
	})
	return s
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
