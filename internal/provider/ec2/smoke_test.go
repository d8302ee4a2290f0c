package ec2

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/stretchr/testify/require"
)

// TestEC2Smoke creates, confirms (SSH) and deletes one real instance. It
// runs only from scripts/ec2-smoke.sh (HEDDLE_EC2_SMOKE=1), which checks
// for AWS credentials first; it costs a few minutes of the smallest
// instance.
func TestEC2Smoke(t *testing.T) {
	if os.Getenv("HEDDLE_EC2_SMOKE") != "1" {
		t.Skip("a real EC2 smoke test: run scripts/ec2-smoke.sh")
	}
	fields := map[string]string{
		FieldRegion:           os.Getenv("HEDDLE_EC2_REGION"),
		FieldSubnetID:         os.Getenv("HEDDLE_EC2_SUBNET_ID"),
		FieldSecurityGroupIDs: os.Getenv("HEDDLE_EC2_SECURITY_GROUP_IDS"),
		FieldUsePublicIP:      os.Getenv("HEDDLE_EC2_USE_PUBLIC_IP"),
	}
	require.Empty(t, checkFields(fields))
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	key, err := secrets.NewSSHKey(kp.PrivateKey)
	require.NoError(t, err)
	var b [4]byte
	_, _ = rand.Read(b[:])
	cluster := "smoke-" + hex.EncodeToString(b[:])
	p := New(Config{PollInterval: 5 * time.Second})
	req := provider.Request{
		Tenant: "smoke", ClusterID: cluster, Provider: "smoke", Node: domain.Node{ID: cluster + "-1000", ClusterID: cluster},
		Token: "heddle-smoke-" + cluster, Hostname: cluster + "-1000", Flavor: os.Getenv("HEDDLE_EC2_INSTANCE_TYPE"),
		Image: os.Getenv("HEDDLE_EC2_AMI"), SSHUser: os.Getenv("HEDDLE_EC2_SSH_USER"), Fields: fields, Key: key,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, _, err := providertest.Settle(ctx, req, p.Delete); err != nil {
			t.Errorf("delete: %v (terminate the instances tagged %s=%s by hand)", err, TagCluster, cluster)
		}
		if c, err := p.client(ctx, fields); err == nil {
			_, _ = c.DeleteKeyPair(ctx, &awsec2.DeleteKeyPairInput{KeyName: aws.String(KeyPairName("smoke", cluster))})
		}
	})

	start := time.Now()
	created, err := p.Create(ctx, req)
	require.NoError(t, err)
	t.Logf("created %s in %s", created.ProviderID, time.Since(start).Round(time.Millisecond))
	again, err := p.Create(ctx, req)
	require.NoError(t, err)
	require.Equal(t, created.ProviderID, again.ProviderID, "the ClientToken made the repeat idempotent")

	req.Node.ProviderID = created.ProviderID
	progress, polls, err := providertest.Settle(ctx, req, p.Confirm)
	require.NoError(t, err)
	confirmed := progress.Node
	t.Logf("confirmed %s in %d polls at %s (%s) after %s, host key %s", created.ProviderID, polls, confirmed.Addresses[provider.AddressAccess],
		confirmed.Hostname, time.Since(start).Round(time.Second), confirmed.HostKey)
	req.Node.HostKey = confirmed.HostKey

	// The swept view agrees: the cluster "exists", so nothing is doomed.
	rep, err := p.Sweep(ctx, fields, func(context.Context, string, string) (bool, error) { return true, nil }, SweepOptions{DryRun: true})
	require.NoError(t, err)
	require.Empty(t, rep.Terminated)
}
