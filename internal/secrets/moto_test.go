package secrets_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/motoserver"
	"github.com/heddle-io/heddle/internal/secrets"
)

// newMotoKey makes a symmetric key in moto's KMS, known also by alias.
func newMotoKey(t *testing.T, c *kms.Client, alias string) string {
	t.Helper()
	out, err := c.CreateKey(t.Context(), &kms.CreateKeyInput{Description: aws.String("heddle test")})
	require.NoError(t, err)
	_, err = c.CreateAlias(t.Context(), &kms.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: out.KeyMetadata.KeyId})
	require.NoError(t, err)
	return aws.ToString(out.KeyMetadata.Arn)
}

// The functions' production KMS path (secrets.KMSKey: GenerateDataKey and
// Decrypt with the binding as the encryption context) against moto's KMS,
// a KMS heddle did not write: values seal and open by the key's ARN and
// alias, a wrong binding does not open (ErrOpen, as KMS answers
// InvalidCiphertextException), and a value sealed under one key's id is
// not opened by another's.
func TestKMSKeyOnMoto(t *testing.T) {
	t.Parallel()
	srv := motoserver.StartForTest(t)
	c := kms.NewFromConfig(srv.AWSConfig())
	ctx := context.Background()
	arn := newMotoKey(t, c, "alias/heddle-ci")

	b := secrets.Binding{"tenant": "acme", "purpose": "node-key"}
	for _, id := range []string{arn, "alias/heddle-ci"} {
		kr := secrets.NewKeyring(secrets.NewKMSKey(c, id))
		sealed, err := kr.SealString(ctx, "s3cret", b)
		require.NoError(t, err, id)
		got, err := kr.OpenString(ctx, sealed, b)
		require.NoError(t, err, id)
		require.Equal(t, "s3cret", got.Reveal())

		// Another tenant's binding: KMS refuses the data key.
		_, err = kr.OpenString(ctx, sealed, secrets.Binding{"tenant": "other", "purpose": "node-key"})
		require.ErrorIs(t, err, secrets.ErrOpen, id)
		_, err = kr.OpenString(ctx, sealed, secrets.Binding{"tenant": "acme"})
		require.ErrorIs(t, err, secrets.ErrOpen, id)
	}

	// The data key KMS hands out is AES-256 and unwraps to itself.
	k := secrets.NewKMSKey(c, arn)
	plain, wrapped, err := k.NewDataKey(ctx, b)
	require.NoError(t, err)
	require.Len(t, plain, 32)
	again, err := k.UnwrapDataKey(ctx, wrapped, b)
	require.NoError(t, err)
	require.Equal(t, plain, again)

	// A keyring of another key does not open the value: it never asks KMS
	// for a key it does not hold.
	other := secrets.NewKeyring(secrets.NewKMSKey(c, newMotoKey(t, c, "alias/heddle-other")))
	sealed, err := secrets.NewKeyring(k).SealString(ctx, "s3cret", b)
	require.NoError(t, err)
	_, err = other.OpenString(ctx, sealed, b)
	require.ErrorIs(t, err, secrets.ErrOpen)
}

// Where moto's KMS answers otherwise than AWS's: Decrypt of a ciphertext of
// one key with another key's KeyId is IncorrectKeyException in AWS (which
// KMSKey reads as ErrOpen, kms_test.go's fake) but AccessDeniedException in
// moto 5.2.1. heddle meets this only with a sealed value whose recorded key
// id was altered (the keyring picks the key by that id before calling KMS),
// where either answer refuses to open it. If moto starts answering as AWS
// does, this test fails: then drop it and the note in docs/architecture.md.
func TestMotoKMSIncorrectKeyDiffers(t *testing.T) {
	t.Parallel()
	srv := motoserver.StartForTest(t)
	c := kms.NewFromConfig(srv.AWSConfig())
	ctx := context.Background()
	a := secrets.NewKMSKey(c, newMotoKey(t, c, "alias/a"))
	bARN := newMotoKey(t, c, "alias/b")
	bind := secrets.Binding{"tenant": "acme"}
	_, wrapped, err := a.NewDataKey(ctx, bind)
	require.NoError(t, err)

	_, err = secrets.NewKMSKey(c, bARN).UnwrapDataKey(ctx, wrapped, bind)
	require.Error(t, err)
	var api smithy.APIError
	require.True(t, errors.As(err, &api), "%v", err)
	require.Equal(t, "AccessDeniedException", api.ErrorCode(), "moto now answers %s: see the comment", api.ErrorCode())
	require.NotErrorIs(t, err, secrets.ErrOpen)
}
