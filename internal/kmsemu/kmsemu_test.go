package kmsemu

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/secrets"
)

const keyARN = "arn:aws:kms:us-east-1:000000000000:key/0b5e7c1a-heddle-local"

type fixture struct {
	client *kms.Client
	url    string
}

func setup(t *testing.T) *fixture {
	t.Helper()
	key, err := secrets.NewLocalKey(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	s, err := New(keyARN, key, "alias/heddle-dev")
	require.NoError(t, err)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &fixture{url: srv.URL, client: kms.New(kms.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("heddle", "heddle", "")})}
}

// The production path: secrets.KMSKey over the SDK's KMS client.
func TestKeyringSealsAndOpensThroughKMS(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	kr := secrets.NewKeyring(secrets.NewKMSKey(f.client, keyARN))
	b := secrets.Binding{"tenant": "acme", "purpose": "cluster-key"}
	sealed, err := kr.Seal(ctx, []byte("a private key"), b)
	require.NoError(t, err)
	got, err := kr.Open(ctx, sealed, b)
	require.NoError(t, err)
	require.Equal(t, "a private key", string(got))

	// Another tenant's binding does not open it.
	_, err = kr.Open(ctx, sealed, secrets.Binding{"tenant": "other", "purpose": "cluster-key"})
	require.ErrorIs(t, err, secrets.ErrOpen)

	// By alias too.
	byAlias := secrets.NewKeyring(secrets.NewKMSKey(f.client, "alias/heddle-dev"))
	sealed, err = byAlias.Seal(ctx, []byte("x"), b)
	require.NoError(t, err)
	_, err = byAlias.Open(ctx, sealed, b)
	require.NoError(t, err)
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	_, err := f.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String("arn:aws:kms:us-east-1:000000000000:key/other"), KeySpec: "AES_256"})
	var notFound interface{ ErrorCode() string }
	require.ErrorAs(t, err, &notFound)
	require.Equal(t, "NotFoundException", notFound.ErrorCode())

	out, err := f.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String(keyARN), KeySpec: "AES_256"})
	require.NoError(t, err)
	_, err = f.client.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String("alias/other"), CiphertextBlob: out.CiphertextBlob})
	require.ErrorContains(t, err, "IncorrectKeyException")
	_, err = f.client.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: []byte("not a blob")})
	require.ErrorContains(t, err, "InvalidCiphertextException")
	_, err = f.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{KeyId: aws.String(keyARN), KeySpec: "AES_128"})
	require.ErrorContains(t, err, "ValidationException")
	_, err = f.client.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(keyARN), Plaintext: []byte("x")})
	require.ErrorContains(t, err, "UnknownOperationException", "a call heddle does not make fails loudly")

	resp, err := testHTTP.Get(f.url)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestNewRefusesANonKeyARN(t *testing.T) {
	t.Parallel()
	key, err := secrets.NewLocalKey(bytes.Repeat([]byte{1}, 32))
	require.NoError(t, err)
	_, err = New("alias/heddle-dev", key)
	require.Error(t, err)
}

func FuzzParseBlob(f *testing.F) {
	f.Add([]byte(blobMagic + "\x05arn:xwrapped"))
	f.Add([]byte(blobMagic + "\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		arn, wrapped, ok := parseBlob(b)
		if ok {
			require.Equal(t, len(b), len(blobMagic)+1+len(arn)+len(wrapped))
		}
	})
}
