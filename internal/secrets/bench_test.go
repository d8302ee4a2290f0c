package secrets

import (
	"context"
	"testing"
)

// BenchmarkOpenClusterKey is what a worker pays per task to unseal the
// cluster's key: the data key is cached after the first open, so this is
// AES-GCM plus parsing the OpenSSH key.
func BenchmarkOpenClusterKey(b *testing.B) {
	kr, _ := setup(b)
	ctx := context.Background()
	ck, err := NewClusterKey(ctx, kr, "acme", "c1")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ck.Open(ctx, kr, "acme", "c1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSealField is sealing one provider field with the local key.
func BenchmarkSealField(b *testing.B) {
	kr, _ := setup(b)
	ctx := context.Background()
	bind := Binding{"tenant": "acme", "provider": "aws", "field": "secret_access_key"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kr.SealString(ctx, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", bind); err != nil {
			b.Fatal(err)
		}
	}
}
