package ec2

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/motoserver"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
)

// reachable is moto's EC2 with one change: the instances' private
// addresses, which nothing answers on, name the test's SSH server instead
// (as the recorded fixtures do), so that confirm's SSH probe logs in. Every
// other answer is moto's.
type reachable struct {
	API
	addr string
}

func (r reachable) DescribeInstances(ctx context.Context, in *awsec2.DescribeInstancesInput, opts ...func(*awsec2.Options)) (*awsec2.DescribeInstancesOutput, error) {
	out, err := r.API.DescribeInstances(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	for i := range out.Reservations {
		for j := range out.Reservations[i].Instances {
			inst := &out.Reservations[i].Instances[j]
			if inst.PrivateIpAddress != nil {
				inst.PrivateIpAddress = aws.String(r.addr)
			}
		}
	}
	return out, nil
}

type motoFixture struct {
	ec2    *EC2
	raw    *awsec2.Client // moto's EC2, as is
	fields map[string]string
	key    *secrets.SSHKey
	node   *sshtest.Server
	image  string
}

func setupMoto(t *testing.T) motoFixture {
	t.Helper()
	srv := motoserver.StartForTest(t)
	raw := awsec2.NewFromConfig(srv.AWSConfig())
	ctx := t.Context()
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	key, err := secrets.NewSSHKey(kp.PrivateKey)
	require.NoError(t, err)
	node := sshtest.Start(t, "127.0.0.1:0", nil, key.Signer().PublicKey())

	images, err := raw.DescribeImages(ctx, &awsec2.DescribeImagesInput{Owners: []string{"amazon"}})
	require.NoError(t, err)
	require.NotEmpty(t, images.Images, "moto lists no AMI")
	subnets, err := raw.DescribeSubnets(ctx, &awsec2.DescribeSubnetsInput{})
	require.NoError(t, err)
	require.NotEmpty(t, subnets.Subnets)
	groups, err := raw.DescribeSecurityGroups(ctx, &awsec2.DescribeSecurityGroupsInput{
		Filters: []types.Filter{{Name: aws.String("vpc-id"), Values: []string{aws.ToString(subnets.Subnets[0].VpcId)}}}})
	require.NoError(t, err)
	require.NotEmpty(t, groups.SecurityGroups)

	_, port, _ := strings.Cut(node.Addr, ":")
	fields := map[string]string{
		FieldRegion: motoserver.Region, FieldAccessKeyID: "moto", FieldSecretAccessKey: "moto",
		FieldEndpoint: srv.URL, FieldSubnetID: aws.ToString(subnets.Subnets[0].SubnetId),
		FieldSecurityGroupIDs: aws.ToString(groups.SecurityGroups[0].GroupId), FieldSSHPort: port,
	}
	p := New(Config{PollInterval: 10 * time.Millisecond, BootEstimate: -1})
	newClient := p.cfg.NewClient
	p.cfg.NewClient = func(ctx context.Context, f map[string]string) (API, error) {
		c, err := newClient(ctx, f)
		if err != nil {
			return nil, err
		}
		return reachable{API: c, addr: "127.0.0.1"}, nil
	}
	return motoFixture{ec2: p, raw: raw, fields: fields, key: key, node: node, image: aws.ToString(images.Images[0].ImageId)}
}

func (f motoFixture) request(cluster, node, token string) provider.Request {
	return provider.Request{
		Tenant: "acme", ClusterID: cluster, Provider: "aws-moto", Node: domain.Node{ID: node, ClusterID: cluster},
		Token: token, Hostname: node + ".example.test", Flavor: "t3.micro", Image: f.image,
		SSHUser: "admin", Fields: f.fields, Key: f.key,
	}
}

func tagMap(tags []types.Tag) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

func (f motoFixture) instance(t *testing.T, id string) types.Instance {
	t.Helper()
	out, err := f.raw.DescribeInstances(t.Context(), &awsec2.DescribeInstancesInput{InstanceIds: []string{id}})
	require.NoError(t, err)
	require.Len(t, out.Reservations, 1)
	require.Len(t, out.Reservations[0].Instances, 1)
	return out.Reservations[0].Instances[0]
}

// The ec2 provider's create, confirm and delete against moto's EC2, a real
// implementation of the API heddle did not record: the cluster's key pair
// is imported once with heddle's tags (a second node finds it there), the
// instance carries the tenant, cluster, node and Name tags, confirm polls
// (the parked path: Later until DescribeInstances says running, then the
// SSH probe) and delete terminates and polls until EC2 lists the instance
// terminated; the sweep then finds nothing of the cluster's left but its
// key pair, and removes it once the cluster is gone.
func TestProviderOnMoto(t *testing.T) {
	t.Parallel()
	f := setupMoto(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	req := f.request("c1", "c1-1000", "tok-c1-1000-"+strings.Repeat("x", 28))
	created, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	require.Regexp(t, `^i-[0-9a-f]{17}$`, created.ProviderID) // moto's ids need not start with 0

	inst := f.instance(t, created.ProviderID)
	require.Equal(t, map[string]string{TagTenant: "acme", TagCluster: "c1", TagNode: "c1-1000", "Name": "c1-1000.example.test"}, tagMap(inst.Tags))
	require.Equal(t, KeyPairName("acme", "c1"), aws.ToString(inst.KeyName))
	require.Equal(t, f.image, aws.ToString(inst.ImageId))
	require.Equal(t, types.InstanceTypeT3Micro, inst.InstanceType)
	require.Equal(t, f.fields[FieldSubnetID], aws.ToString(inst.SubnetId))
	require.Equal(t, req.Token, aws.ToString(inst.ClientToken))

	keys, err := f.raw.DescribeKeyPairs(ctx, &awsec2.DescribeKeyPairsInput{KeyNames: []string{KeyPairName("acme", "c1")}})
	require.NoError(t, err)
	require.Len(t, keys.KeyPairs, 1)
	require.Equal(t, map[string]string{TagTenant: "acme", TagCluster: "c1"}, tagMap(keys.KeyPairs[0].Tags))

	// A second node of the cluster: the key pair is there already
	// (InvalidKeyPair.Duplicate, as EC2 answers), and is reused.
	req2 := f.request("c1", "c1-1001", "tok-c1-1001-"+strings.Repeat("x", 28))
	created2, err := f.ec2.Create(ctx, req2)
	require.NoError(t, err)
	require.NotEqual(t, created.ProviderID, created2.ProviderID)

	// Confirm: parked (Later) while pending, done once running and
	// answering SSH, with the address and host key.
	req.Node.ProviderID = created.ProviderID
	progress, polls, err := providertest.Settle(ctx, req, f.ec2.Confirm)
	require.NoError(t, err)
	t.Logf("confirmed in %d polls", polls)
	require.Equal(t, "127.0.0.1", progress.Node.Addresses[provider.AddressAccess])
	require.Equal(t, sshexec.FormatPublicKey(f.node.HostKey.PublicKey()), progress.Node.HostKey)
	require.Equal(t, types.InstanceStateNameRunning, f.instance(t, created.ProviderID).State.Name)

	// Delete both: TerminateInstances, then polls until terminated.
	for _, r := range []provider.Request{req, req2} {
		if r.Node.ProviderID == "" {
			r.Node.ProviderID = created2.ProviderID
		}
		_, _, err := providertest.Settle(ctx, r, f.ec2.Delete)
		require.NoError(t, err)
		require.Equal(t, types.InstanceStateNameTerminated, f.instance(t, r.Node.ProviderID).State.Name)
		// A repeated delete of a terminated instance is done at once.
		again, err := f.ec2.Delete(ctx, r)
		require.NoError(t, err)
		require.False(t, again.Pending())
	}

	// The sweep: while the cluster exists nothing goes; once it is gone,
	// its key pair does (its instances are terminated already).
	rep, err := f.ec2.Sweep(ctx, f.fields, func(context.Context, string, string) (bool, error) { return true, nil }, SweepOptions{MinAge: -1})
	require.NoError(t, err)
	require.Empty(t, rep.Terminated)
	require.Empty(t, rep.KeyPairsDeleted)
	rep, err = f.ec2.Sweep(ctx, f.fields, func(context.Context, string, string) (bool, error) { return false, nil }, SweepOptions{MinAge: -1})
	require.NoError(t, err)
	require.Empty(t, rep.Terminated)
	require.Equal(t, []string{KeyPairName("acme", "c1")}, rep.KeyPairsDeleted)
	keys, err = f.raw.DescribeKeyPairs(ctx, &awsec2.DescribeKeyPairsInput{})
	require.NoError(t, err)
	require.False(t, slices.ContainsFunc(keys.KeyPairs, func(k types.KeyPairInfo) bool { return aws.ToString(k.KeyName) == KeyPairName("acme", "c1") }))
}

// The sweep terminates a live instance of a cluster that is gone, on moto.
func TestSweepOnMoto(t *testing.T) {
	t.Parallel()
	f := setupMoto(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	created, err := f.ec2.Create(ctx, f.request("c2", "c2-1000", "tok-c2-1000-"+strings.Repeat("x", 28)))
	require.NoError(t, err)
	rep, err := f.ec2.Sweep(ctx, f.fields, func(_ context.Context, tenant, cluster string) (bool, error) {
		return !(tenant == "acme" && cluster == "c2"), nil
	}, SweepOptions{MinAge: -1})
	require.NoError(t, err)
	require.Equal(t, []string{created.ProviderID}, rep.Terminated)
	state := f.instance(t, created.ProviderID).State.Name
	require.Contains(t, []types.InstanceStateName{types.InstanceStateNameShuttingDown, types.InstanceStateNameTerminated}, state)
}

// Where moto's EC2 falls short of one thing heddle relies on: it records a
// RunInstances' ClientToken but does not honour it, so a retried create
// launches a second instance where EC2 returns the first (invariant 8).
// heddle's idempotent create is therefore held against the recorded
// fixtures (TestRetriedCreateLaunchesOneInstance), not moto. If moto starts honouring
// the token, this test fails: then assert the same instance here instead.
func TestMotoIgnoresClientToken(t *testing.T) {
	t.Parallel()
	f := setupMoto(t)
	ctx := t.Context()
	req := f.request("c3", "c3-1000", "tok-c3-1000-"+strings.Repeat("x", 28))
	first, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	retried, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	require.NotEqual(t, first.ProviderID, retried.ProviderID,
		"moto now honours ClientToken: assert the same instance in TestProviderOnMoto and drop this test")
	require.Equal(t, aws.ToString(f.instance(t, first.ProviderID).ClientToken), aws.ToString(f.instance(t, retried.ProviderID).ClientToken))
}
