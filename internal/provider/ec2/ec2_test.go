package ec2

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/provider/providertest"
	"github.com/heddle-io/heddle/internal/secrets"
	"github.com/heddle-io/heddle/internal/sshexec"
	"github.com/heddle-io/heddle/internal/sshexec/sshtest"
	"github.com/stretchr/testify/require"
)

type fixture struct {
	fake *fakeEC2
	ec2  *EC2
	key  *secrets.SSHKey
	node *sshtest.Server // the instance's SSH server, on 127.0.0.1
}

func setup(t testing.TB) fixture {
	t.Helper()
	fake := newFakeEC2(t)
	kp, err := sshexec.GenerateKeyPair()
	require.NoError(t, err)
	key, err := secrets.NewSSHKey(kp.PrivateKey)
	require.NoError(t, err)
	// Every instance's private address is this server: the SSH probe of
	// confirm really logs in.
	node := sshtest.Start(t, "127.0.0.1:0", nil, key.Signer().PublicKey())
	fake.privateIP, fake.publicIP = "127.0.0.1", "127.0.0.1"
	return fixture{fake: fake, ec2: New(Config{HTTPClient: fake.srv.Client(), PollInterval: 10 * time.Millisecond}), key: key, node: node}
}

func (f fixture) fields() map[string]string {
	_, port, _ := strings.Cut(f.node.Addr, ":")
	return map[string]string{
		FieldRegion: "eu-west-1", FieldAccessKeyID: "AKIDEXAMPLE", FieldSecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		FieldEndpoint: f.fake.srv.URL, FieldSubnetID: "subnet-0a1b2c3d4e5f60718", FieldSecurityGroupIDs: "sg-0123456789abcdef0, sg-0fedcba9876543210",
		FieldIAMInstanceProfile: "heddle-node", FieldSSHPort: port,
	}
}

func (f fixture) request(node string) provider.Request {
	return provider.Request{
		Tenant: "acme", ClusterID: "c1", Provider: "aws-prod", Node: domain.Node{ID: node, ClusterID: "c1"},
		Token: "tok" + strings.Repeat("x", 37), Hostname: "zk-1000.example.test", Flavor: "t3.micro", Image: "ami-0abcdef1234567890",
		SSHUser: "admin", Fields: f.fields(), Key: f.key,
	}
}

// confirm drives Confirm through its polls.
func (f fixture) confirm(ctx context.Context, req provider.Request) (provider.Node, error) {
	p, _, err := providertest.Settle(ctx, req, f.ec2.Confirm)
	return p.Node, err
}

// del drives Delete through its polls.
func (f fixture) del(ctx context.Context, req provider.Request) error {
	_, _, err := providertest.Settle(ctx, req, f.ec2.Delete)
	return err
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCreateConfirmDelete(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.pendingDescribes = 2
	ctx := testCtx(t)
	req := f.request("c1-1000")

	created, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	require.Regexp(t, instanceIDPattern, created.ProviderID)
	require.Equal(t, "t3.micro", created.Flavor)
	require.Equal(t, "admin", created.SSHUser)

	imports := f.fake.calls("ImportKeyPair")
	require.Len(t, imports, 1)
	require.Equal(t, "heddle-acme-c1", imports[0].Get("KeyName"))
	material, err := base64.StdEncoding.DecodeString(imports[0].Get("PublicKeyMaterial"))
	require.NoError(t, err)
	require.Equal(t, f.key.AuthorizedKey(), string(material))
	require.Equal(t, "key-pair", imports[0].Get("TagSpecification.1.ResourceType"))

	runs := f.fake.calls("RunInstances")
	require.Len(t, runs, 1)
	run := runs[0]
	require.Equal(t, req.Token, run.Get("ClientToken"))
	require.Equal(t, "ami-0abcdef1234567890", run.Get("ImageId"))
	require.Equal(t, "t3.micro", run.Get("InstanceType"))
	require.Equal(t, "heddle-acme-c1", run.Get("KeyName"))
	require.Equal(t, "subnet-0a1b2c3d4e5f60718", run.Get("SubnetId"))
	require.Equal(t, []string{"sg-0123456789abcdef0", "sg-0fedcba9876543210"}, list(run, "SecurityGroupId"))
	require.Equal(t, "heddle-node", run.Get("IamInstanceProfile.Name"))
	specs := tagSpecs(run)
	require.ElementsMatch(t, []fakeTag{{TagTenant, "acme"}, {TagCluster, "c1"}, {TagNode, "c1-1000"}, {"Name", "zk-1000.example.test"}}, specs["instance"])
	require.ElementsMatch(t, []fakeTag{{TagTenant, "acme"}, {TagCluster, "c1"}, {TagNode, "c1-1000"}}, specs["volume"])

	// Requests are signed for the region with the provider's key.
	require.Contains(t, f.fake.auth[0], "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
	require.Contains(t, f.fake.auth[0], "/eu-west-1/ec2/aws4_request")

	req.Node.ProviderID = created.ProviderID
	confirmed, err := f.confirm(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", confirmed.Addresses[provider.AddressAccess])
	require.Equal(t, "127.0.0.1", confirmed.Addresses[provider.AddressBind])
	require.Equal(t, "ip-10-0-1-1.eu-west-1.compute.internal", confirmed.Hostname)
	require.Equal(t, sshexec.FormatPublicKey(f.node.HostKey.PublicKey()), confirmed.HostKey, "the host key seen by the SSH probe")
	require.GreaterOrEqual(t, len(f.fake.calls("DescribeInstances")), 3, "pending, pending, running")

	req.Node.HostKey = confirmed.HostKey
	require.NoError(t, f.del(ctx, req))
	terms := f.fake.calls("TerminateInstances")
	require.Len(t, terms, 1)
	require.Equal(t, []string{created.ProviderID}, list(terms[0], "InstanceId"))
	require.Equal(t, "terminated", f.fake.states()[created.ProviderID], "polled until EC2 says it is gone")
	require.NoError(t, f.del(ctx, req), "deleting again succeeds")
}

func TestRetriedCreateLaunchesOneInstance(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	req := f.request("c1-1000")
	first, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	second, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	require.Equal(t, first.ProviderID, second.ProviderID)
	require.Len(t, f.fake.states(), 1, "one instance for two creates")
	require.Len(t, f.fake.keyNames(), 1, "the duplicate key pair import is accepted")

	// Another node of the cluster shares the key pair, has its own token.
	other := f.request("c1-1001")
	other.Token = "tok" + strings.Repeat("y", 37)
	third, err := f.ec2.Create(ctx, other)
	require.NoError(t, err)
	require.NotEqual(t, first.ProviderID, third.ProviderID)
	require.Len(t, f.fake.keyNames(), 1)
}

func TestCreateAfterTheFirstInstanceWasTerminated(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	req := f.request("c1-1000")
	first, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	req.Node.ProviderID = first.ProviderID
	require.NoError(t, f.del(ctx, req)) // rolled back
	f.fake.states()

	// The job is retried: same task, same token. EC2 returns the
	// terminated instance for it; the next generation launches anew.
	req.Node.ProviderID = ""
	again, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	require.NotEqual(t, first.ProviderID, again.ProviderID)
	runs := f.fake.calls("RunInstances")
	require.Equal(t, req.Token+"-g2", runs[len(runs)-1].Get("ClientToken"))
	repeat, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	require.Equal(t, again.ProviderID, repeat.ProviderID, "and a repeat agrees on it")
	require.LessOrEqual(t, len(req.Token+"-g5"), 64, "within EC2's ClientToken limit")
}

func TestConfirmWaitsOutEventualConsistency(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.notFoundDescribes = 2
	f.fake.pendingDescribes = 1
	ctx := testCtx(t)
	req := f.request("c1-1000")
	created, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	req.Node.ProviderID = created.ProviderID
	_, err = f.confirm(ctx, req)
	require.NoError(t, err)
}

func TestConfirmWithoutARecordedInstanceFindsItByTags(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	req := f.request("c1-1000")
	created, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	confirmed, err := f.confirm(ctx, req) // Node.ProviderID empty
	require.NoError(t, err)
	require.Equal(t, created.ProviderID, confirmed.ProviderID)
}

func TestConfirmFailsClearly(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	req := f.request("c1-1000")
	created, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	req.Node.ProviderID = created.ProviderID

	// A pinned host key the node does not present.
	req.Node.HostKey = sshexec.FormatPublicKey(sshtest.NewHostKey(t).PublicKey())
	_, err = f.confirm(ctx, req)
	var hk *sshexec.HostKeyError
	require.ErrorAs(t, err, &hk)
	require.Contains(t, err.Error(), "c1-1000")

	// Terminated under us.
	req.Node.HostKey = ""
	require.NoError(t, f.del(ctx, req))
	_, err = f.confirm(ctx, req)
	require.Regexp(t, `instance i-\w+ is (shutting-down|terminated)`, err.Error())

	// A public address asked for but the instance has none.
	noPub := f.request("c1-1001")
	noPub.Token = "tok" + strings.Repeat("z", 37)
	f.fake.mu.Lock()
	f.fake.publicIP = ""
	f.fake.mu.Unlock()
	noPub.Fields[FieldUsePublicIP] = "true"
	c2, err := f.ec2.Create(ctx, noPub)
	require.NoError(t, err)
	noPub.Node.ProviderID = c2.ProviderID
	_, err = f.confirm(ctx, noPub)
	require.ErrorContains(t, err, "no address to reach it on")
}

func TestPublicAddress(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	req := f.request("c1-1000")
	req.Fields[FieldUsePublicIP] = "true"
	req.Fields[FieldIAMInstanceProfile] = "arn:aws:iam::111122223333:instance-profile/heddle-node"
	f.fake.privateIP = "10.0.1.17"
	created, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	run := f.fake.calls("RunInstances")[0]
	require.Equal(t, "true", run.Get("NetworkInterface.1.AssociatePublicIpAddress"))
	require.Equal(t, "0", run.Get("NetworkInterface.1.DeviceIndex"))
	require.Equal(t, "subnet-0a1b2c3d4e5f60718", run.Get("NetworkInterface.1.SubnetId"))
	require.Equal(t, []string{"sg-0123456789abcdef0", "sg-0fedcba9876543210"}, list(run, "NetworkInterface.1.SecurityGroupId"))
	require.Empty(t, run.Get("SubnetId"), "the subnet moves to the network interface")
	require.Equal(t, "arn:aws:iam::111122223333:instance-profile/heddle-node", run.Get("IamInstanceProfile.Arn"))
	req.Node.ProviderID = created.ProviderID
	confirmed, err := f.confirm(ctx, req)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", confirmed.Addresses[provider.AddressAccess], "reached on the public address")
	require.Equal(t, "10.0.1.17", confirmed.Addresses[provider.AddressBind])
}

func TestDeleteFindsALaunchWhoseResultWasLost(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	req := f.request("c1-1000")
	created, err := f.ec2.Create(ctx, req)
	require.NoError(t, err)
	// The worker died before the engine recorded ProviderID; the rollback
	// deletes the node as recorded.
	require.NoError(t, f.del(ctx, req))
	require.Equal(t, "terminated", f.fake.states()[created.ProviderID])
}

func TestEC2ErrorsSurface(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := testCtx(t)
	f.fake.failAction["RunInstances"] = fakeError{"UnauthorizedOperation", "You are not authorized to perform this operation."}
	_, err := f.ec2.Create(ctx, f.request("c1-1000"))
	require.ErrorContains(t, err, "UnauthorizedOperation")
	require.ErrorContains(t, err, "node c1-1000")

	f.fake.failAction["ImportKeyPair"] = fakeError{"InvalidKey.Format", "Key is not in valid OpenSSH public key format"}
	_, err = f.ec2.Create(ctx, f.request("c1-1000"))
	require.ErrorContains(t, err, "import key pair heddle-acme-c1")

	// Terminating an unknown id as part of a batch falls back to one by
	// one; alone it is already gone.
	req := f.request("c1-1000")
	req.Node.ProviderID = "i-0ffffffffffffffff"
	require.NoError(t, f.del(ctx, req))

	noKey := f.request("c1-1000")
	noKey.Key = nil
	_, err = f.ec2.Create(ctx, noKey)
	require.Error(t, err)
	noImage := f.request("c1-1000")
	noImage.Image = ""
	_, err = f.ec2.Create(ctx, noImage)
	require.ErrorContains(t, err, "needs an image and an instance type")
}

func TestSweep(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fake.pageSize = 2 // several pages
	ctx := testCtx(t)
	old := time.Now().Add(-2 * time.Hour)
	live := f.fake.seed("running", old, TagTenant, "acme", TagCluster, "c1", TagNode, "c1-1000")
	gone1 := f.fake.seed("running", old, TagTenant, "acme", TagCluster, "c2", TagNode, "c2-1000")
	gone2 := f.fake.seed("stopped", old, TagTenant, "acme", TagCluster, "c2", TagNode, "c2-1001")
	young := f.fake.seed("running", time.Now(), TagTenant, "acme", TagCluster, "c3", TagNode, "c3-1000")
	otherTenant := f.fake.seed("running", old, TagTenant, "beta", TagCluster, "c1", TagNode, "c1-1000")
	notOurs := f.fake.seed("running", old, "team", "data")
	done := f.fake.seed("terminated", old, TagTenant, "acme", TagCluster, "c9", TagNode, "c9-1000")
	f.fake.seedKeyPair("heddle-acme-c1", TagTenant, "acme", TagCluster, "c1")
	f.fake.seedKeyPair("heddle-acme-c2", TagTenant, "acme", TagCluster, "c2")
	f.fake.seedKeyPair("someone-elses")

	existing := map[string]bool{"acme/c1": true, "beta/c1": false}
	var asked []string
	exists := func(_ context.Context, tenant, cluster string) (bool, error) {
		asked = append(asked, tenant+"/"+cluster)
		return existing[tenant+"/"+cluster], nil
	}

	dry, err := f.ec2.Sweep(ctx, f.fields(), exists, SweepOptions{DryRun: true})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{gone1, gone2, otherTenant}, dry.Terminated)
	require.Equal(t, []string{"heddle-acme-c2"}, dry.KeyPairsDeleted)
	require.Equal(t, 5, dry.Examined)
	require.Equal(t, 4, dry.Clusters, "each cluster asked about once")
	require.Len(t, asked, 4)
	require.Empty(t, f.fake.calls("TerminateInstances"), "a dry run changes nothing")

	rep, err := f.ec2.Sweep(ctx, f.fields(), exists, SweepOptions{})
	require.NoError(t, err)
	require.Equal(t, dry.Terminated, rep.Terminated)
	states := f.fake.states()
	require.Equal(t, "running", states[live])
	require.Equal(t, "shutting-down", states[gone1])
	require.Equal(t, "shutting-down", states[gone2])
	require.Equal(t, "running", states[young], "too young to judge")
	require.Equal(t, "running", states[notOurs])
	require.Equal(t, "terminated", states[done])
	require.Equal(t, []string{"heddle-acme-c1", "someone-elses"}, f.fake.keyNames())

	// A predicate that fails stops the sweep before anything is removed.
	boom := errors.New("store down")
	_, err = f.ec2.Sweep(ctx, f.fields(), func(context.Context, string, string) (bool, error) { return false, boom }, SweepOptions{})
	require.ErrorIs(t, err, boom)
}

func TestTypeValidation(t *testing.T) {
	t.Parallel()
	r := provider.NewRegistry()
	require.NoError(t, r.Register(Type(), New(Config{})))
	ok := &domain.Provider{ProviderType: TypeName, Fields: map[string]string{FieldRegion: "eu-west-1", FieldSubnetID: "subnet-0a1b2c3d", FieldSecurityGroupIDs: "sg-0123456789abcdef0"}}
	require.Empty(t, r.Validate(ok))
	bad := &domain.Provider{ProviderType: TypeName, Fields: map[string]string{
		FieldRegion: "Europe", FieldSubnetID: "net-1", FieldSecurityGroupIDs: "sg-0123456789abcdef0,default",
		FieldAccessKeyID: "AKID", FieldUsePublicIP: "yes", FieldSSHPort: "0", FieldEndpoint: "localhost:4566",
	}}
	got := map[string]string{}
	for _, p := range r.Validate(bad) {
		got[p.Field] = p.Code
	}
	require.Equal(t, map[string]string{
		"fields.region": domain.CodeInvalid, "fields.subnet_id": domain.CodeInvalid, "fields.security_group_ids": domain.CodeInvalid,
		"fields.secret_access_key": domain.CodeRequired, "fields.use_public_ip": domain.CodeInvalid, "fields.ssh_port": domain.CodeInvalid,
		"fields.endpoint": domain.CodeInvalid,
	}, got)
	missing := r.Validate(&domain.Provider{ProviderType: TypeName})
	require.Len(t, missing, 1)
	require.Equal(t, "fields.region", missing[0].Field)

	// A sealed secret passes: its content was checked before sealing.
	sealed := &domain.Provider{ProviderType: TypeName, Fields: map[string]string{FieldRegion: "eu-west-1", FieldAccessKeyID: "AKID", FieldSecretAccessKey: secrets.SealedPrefix + "AQ"}}
	require.Empty(t, r.Validate(sealed))
}

func TestClientsAreSharedPerCredentials(t *testing.T) {
	t.Parallel()
	made := 0
	p := New(Config{NewClient: func(context.Context, map[string]string) (API, error) {
		made++
		return awsec2.New(awsec2.Options{Region: "eu-west-1"}), nil
	}})
	for i := range 3 {
		_, err := p.client(context.Background(), map[string]string{FieldRegion: "eu-west-1", FieldAccessKeyID: "A" + strconv.Itoa(i%2)})
		require.NoError(t, err)
	}
	require.Equal(t, 2, made)
}
