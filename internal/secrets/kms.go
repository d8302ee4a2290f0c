package secrets

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// KMSAPI is the part of the KMS client KMSKey calls; *kms.Client has it.
type KMSAPI interface {
	GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, opts ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// KMSKey is a master key in AWS KMS: data keys come from GenerateDataKey and
// are unwrapped by Decrypt, with the binding as the encryption context, so
// the master key never leaves KMS and every unwrap is authorized by IAM and
// recorded by CloudTrail with the tenant and purpose it was for.
type KMSKey struct {
	client KMSAPI
	keyID  string
}

// NewKMSKey uses the KMS key keyID (a key ARN, key id, alias name or alias
// ARN). Use the key's ARN when values are sealed in one place and opened in
// another: the id is recorded in every sealed value.
func NewKMSKey(client KMSAPI, keyID string) *KMSKey {
	return &KMSKey{client: client, keyID: keyID}
}

func (k *KMSKey) ID() string { return "kms:" + k.keyID }

func (k *KMSKey) NewDataKey(ctx context.Context, b Binding) ([]byte, []byte, error) {
	out, err := k.client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId:             aws.String(k.keyID),
		KeySpec:           types.DataKeySpecAes256,
		EncryptionContext: b,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("secrets: KMS GenerateDataKey with %s: %w", k.keyID, err)
	}
	if len(out.Plaintext) != dataKeyLen || len(out.CiphertextBlob) == 0 {
		return nil, nil, fmt.Errorf("secrets: KMS GenerateDataKey with %s returned a %d-byte key", k.keyID, len(out.Plaintext))
	}
	return out.Plaintext, out.CiphertextBlob, nil
}

func (k *KMSKey) UnwrapDataKey(ctx context.Context, wrapped []byte, b Binding) ([]byte, error) {
	out, err := k.client.Decrypt(ctx, &kms.DecryptInput{
		// KeyId pins the key: a blob that names another key is refused by
		// KMS rather than decrypted with whatever key it names.
		KeyId:             aws.String(k.keyID),
		CiphertextBlob:    wrapped,
		EncryptionContext: b,
	})
	var invalid *types.InvalidCiphertextException
	var incorrect *types.IncorrectKeyException
	if errors.As(err, &invalid) || errors.As(err, &incorrect) {
		// A wrong binding or a blob of another key: the value does not open,
		// which callers treat like any other value that does not open.
		return nil, fmt.Errorf("%w: KMS Decrypt with %s: %v", ErrOpen, k.keyID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: KMS Decrypt with %s: %w", k.keyID, err)
	}
	return out.Plaintext, nil
}
