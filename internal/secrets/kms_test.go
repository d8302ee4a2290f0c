package secrets

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/stretchr/testify/require"
)

// fakeKMS answers GenerateDataKey and Decrypt in KMS's JSON protocol
// (awsJson1_1, X-Amz-Target TrentService.*) with the bodies and error shapes
// KMS documents. Its ciphertext blobs are opaque handles to the data keys it
// issued, remembered with their encryption context, so a Decrypt under
// another context fails as KMS's does (InvalidCiphertextException).
type fakeKMS struct {
	keyARN string

	mu       sync.Mutex
	issued   map[string]issuedKey
	decrypts atomic.Int64
	targets  []string
}

type issuedKey struct {
	plaintext []byte
	context   map[string]string
}

func newFakeKMS(t *testing.T) (*fakeKMS, *kms.Client) {
	t.Helper()
	f := &fakeKMS{keyARN: "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab", issued: map[string]issuedKey{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	client := kms.New(kms.Options{
		Region:       "eu-west-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		HTTPClient:   srv.Client(),
	})
	return f, client
}

func (f *fakeKMS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	f.mu.Lock()
	f.targets = append(f.targets, target)
	f.mu.Unlock()
	if r.Header.Get("Content-Type") != "application/x-amz-json-1.1" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		kmsError(w, "UnrecognizedClientException", "The security token included in the request is invalid.")
		return
	}
	body, _ := io.ReadAll(r.Body)
	var in struct {
		KeyId             string
		KeySpec           string
		CiphertextBlob    []byte
		EncryptionContext map[string]string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		kmsError(w, "SerializationException", err.Error())
		return
	}
	switch target {
	case "TrentService.GenerateDataKey":
		if in.KeyId != f.keyARN {
			kmsError(w, "NotFoundException", "Key '"+in.KeyId+"' does not exist")
			return
		}
		if in.KeySpec != "AES_256" {
			kmsError(w, "ValidationException", "KeySpec must be AES_256 here")
			return
		}
		plain := make([]byte, 32)
		handle := make([]byte, 48)
		_, _ = rand.Read(plain)
		_, _ = rand.Read(handle)
		f.mu.Lock()
		f.issued[string(handle)] = issuedKey{plaintext: plain, context: in.EncryptionContext}
		f.mu.Unlock()
		writeJSON(w, map[string]any{"CiphertextBlob": handle, "KeyId": f.keyARN, "Plaintext": plain})
	case "TrentService.Decrypt":
		f.decrypts.Add(1)
		if in.KeyId != f.keyARN {
			kmsError(w, "IncorrectKeyException", "The key ID in the request does not identify a CMK that can perform this operation.")
			return
		}
		f.mu.Lock()
		k, ok := f.issued[string(in.CiphertextBlob)]
		f.mu.Unlock()
		if !ok || !sameContext(k.context, in.EncryptionContext) {
			kmsError(w, "InvalidCiphertextException", "")
			return
		}
		writeJSON(w, map[string]any{"KeyId": f.keyARN, "Plaintext": k.plaintext, "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"})
	default:
		kmsError(w, "UnknownOperationException", "")
	}
}

func sameContext(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

func kmsError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

func TestKMSKeySealsAndOpens(t *testing.T) {
	t.Parallel()
	fake, client := newFakeKMS(t)
	kr := NewKeyring(NewKMSKey(client, fake.keyARN))
	ctx := context.Background()
	b := ClusterKeyBinding("acme", "c1")

	ck, err := NewClusterKey(ctx, kr, "acme", "c1")
	require.NoError(t, err)
	id, err := ck.PrivateKey.MasterKeyID()
	require.NoError(t, err)
	require.Equal(t, "kms:"+fake.keyARN, id)

	key, err := ck.Open(ctx, kr, "acme", "c1")
	require.NoError(t, err)
	require.Equal(t, strings.Fields(ck.AuthorizedKey)[1], strings.Fields(key.AuthorizedKey())[1])
	require.Equal(t, int64(1), fake.decrypts.Load())

	// A second open of the same value uses the cached data key: no KMS call
	// per task.
	_, err = ck.Open(ctx, kr, "acme", "c1")
	require.NoError(t, err)
	require.Equal(t, int64(1), fake.decrypts.Load())

	// A fresh keyring (another worker) asks KMS, which refuses another
	// cluster's context.
	kr2 := NewKeyring(NewKMSKey(client, fake.keyARN))
	_, err = kr2.Open(ctx, ck.PrivateKey, ClusterKeyBinding("acme", "c2"))
	require.ErrorIs(t, err, ErrOpen)
	require.ErrorContains(t, err, "InvalidCiphertextException")
	got, err := kr2.Open(ctx, ck.PrivateKey, b)
	require.NoError(t, err)
	require.Contains(t, string(got), "OPENSSH PRIVATE KEY")

	fake.mu.Lock()
	require.Equal(t, "TrentService.GenerateDataKey", fake.targets[0])
	fake.mu.Unlock()
}

func TestKMSKeyErrors(t *testing.T) {
	t.Parallel()
	fake, client := newFakeKMS(t)
	ctx := context.Background()
	_, err := NewKeyring(NewKMSKey(client, "alias/missing")).SealString(ctx, "x", Binding{"tenant": "a"})
	require.ErrorContains(t, err, "NotFoundException")

	sealed, err := NewKeyring(NewKMSKey(client, fake.keyARN)).SealString(ctx, "x", Binding{"tenant": "a"})
	require.NoError(t, err)
	// Same id in the value, but the keyring's key object asks KMS with
	// another key id: KMS refuses, which is ErrOpen.
	wrongKey := &KMSKey{client: client, keyID: "arn:aws:kms:eu-west-1:111122223333:key/other"}
	env, err := parseSealed(sealed)
	require.NoError(t, err)
	_, err = wrongKey.UnwrapDataKey(ctx, env.wrapped, Binding{"tenant": "a"})
	require.ErrorIs(t, err, ErrOpen)
}
