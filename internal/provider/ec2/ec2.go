package ec2

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/provider"
	"github.com/heddle-io/heddle/internal/sdkbody"
	"github.com/heddle-io/heddle/internal/sshexec"
)

// TypeName is the provider type's name.
const TypeName = "ec2"

// Fields of an ec2 provider.
const (
	FieldRegion             = "region"
	FieldAccessKeyID        = "access_key_id"
	FieldSecretAccessKey    = "secret_access_key"
	FieldSubnetID           = "subnet_id"
	FieldSecurityGroupIDs   = "security_group_ids"
	FieldIAMInstanceProfile = "iam_instance_profile"
	FieldUsePublicIP        = "use_public_ip"
	FieldSSHPort            = "ssh_port"
	FieldEndpoint           = "endpoint"
)

// Tags heddle puts on everything it makes, so that the janitor can find
// what belongs to clusters that no longer exist.
const (
	TagTenant  = "heddle:tenant"
	TagCluster = "heddle:cluster"
	TagNode    = "heddle:node"
)

// Type describes the ec2 provider type.
func Type() provider.Type {
	return provider.Type{
		Name:        TypeName,
		Label:       "Amazon EC2",
		Description: "One EC2 instance per node, launched with the cluster's key pair in the given subnet and security groups, tagged for the janitor.",
		Parameters: provider.Parameters{
			Admin: provider.ParameterSet{
				Fields: map[string]provider.Field{
					FieldRegion:          {Label: "Region", Type: provider.FieldText, Tip: "for example eu-west-1"},
					FieldAccessKeyID:     {Label: "Access key id", Type: provider.FieldText, Tip: "leave both keys empty to use heddle's own role"},
					FieldSecretAccessKey: {Label: "Secret access key", Type: provider.FieldPassword, Sensitive: true},
					FieldSubnetID:        {Label: "Subnet id", Type: provider.FieldText, Override: true, Tip: "empty: the default VPC's default subnet"},
					FieldSecurityGroupIDs: {Label: "Security group ids", Type: provider.FieldText,
						Tip: "comma-separated; they must let heddle's workers reach SSH"},
					FieldIAMInstanceProfile: {Label: "IAM instance profile", Type: provider.FieldText, Tip: "a name or an ARN"},
					FieldUsePublicIP: {Label: "Reach nodes on their public IP", Type: provider.FieldCheckbox, Default: "false",
						Tip: "for workers outside the VPC; the subnet must allow public addresses"},
					FieldSSHPort:  {Label: "SSH port", Type: provider.FieldNumber, Default: "22", Min: 1, Max: 65535},
					FieldEndpoint: {Label: "Endpoint URL", Type: provider.FieldText, Tip: "only for EC2-compatible services such as LocalStack"},
				},
				Required: [][]string{{FieldRegion}},
			},
			User: provider.ParameterSet{Fields: map[string]provider.Field{}},
		},
		Check: checkFields,
	}
}

var (
	regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)
	subnetPattern = regexp.MustCompile(`^subnet-[0-9a-f]{8,17}$`)
	groupPattern  = regexp.MustCompile(`^sg-[0-9a-f]{8,17}$`)
)

func checkFields(f map[string]string) domain.Problems {
	var ps domain.Problems
	add := func(field, code, msg string) {
		ps = append(ps, domain.Problem{Field: field, Code: code, Message: msg})
	}
	if r := f[FieldRegion]; r != "" && !regionPattern.MatchString(r) {
		add(FieldRegion, domain.CodeInvalid, fmt.Sprintf("%q is not an AWS region name (like eu-west-1)", r))
	}
	if s := f[FieldSubnetID]; s != "" && !subnetPattern.MatchString(s) {
		add(FieldSubnetID, domain.CodeInvalid, fmt.Sprintf("%q is not a subnet id (subnet-...)", s))
	}
	for _, g := range splitList(f[FieldSecurityGroupIDs]) {
		if !groupPattern.MatchString(g) {
			add(FieldSecurityGroupIDs, domain.CodeInvalid, fmt.Sprintf("%q is not a security group id (sg-...)", g))
		}
	}
	if f[FieldAccessKeyID] == "" && f[FieldSecretAccessKey] != "" {
		add(FieldAccessKeyID, domain.CodeRequired, "is required with a secret access key")
	}
	if f[FieldAccessKeyID] != "" && f[FieldSecretAccessKey] == "" {
		add(FieldSecretAccessKey, domain.CodeRequired, "is required with an access key id")
	}
	if e := f[FieldEndpoint]; e != "" && !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
		add(FieldEndpoint, domain.CodeInvalid, fmt.Sprintf("%q is not an http or https URL", e))
	}
	return ps
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// API is the part of the EC2 client the provider calls; *ec2.Client has it.
type API interface {
	RunInstances(ctx context.Context, in *awsec2.RunInstancesInput, opts ...func(*awsec2.Options)) (*awsec2.RunInstancesOutput, error)
	DescribeInstances(ctx context.Context, in *awsec2.DescribeInstancesInput, opts ...func(*awsec2.Options)) (*awsec2.DescribeInstancesOutput, error)
	TerminateInstances(ctx context.Context, in *awsec2.TerminateInstancesInput, opts ...func(*awsec2.Options)) (*awsec2.TerminateInstancesOutput, error)
	ImportKeyPair(ctx context.Context, in *awsec2.ImportKeyPairInput, opts ...func(*awsec2.Options)) (*awsec2.ImportKeyPairOutput, error)
	DescribeKeyPairs(ctx context.Context, in *awsec2.DescribeKeyPairsInput, opts ...func(*awsec2.Options)) (*awsec2.DescribeKeyPairsOutput, error)
	DeleteKeyPair(ctx context.Context, in *awsec2.DeleteKeyPairInput, opts ...func(*awsec2.Options)) (*awsec2.DeleteKeyPairOutput, error)
}

// Config tunes the provider.
type Config struct {
	// HTTPClient carries the EC2 calls; nil: the SDK's.
	HTTPClient *http.Client
	// PollInterval is how long after a check that found the instance
	// pending, not answering SSH yet or still shutting down Confirm and
	// Delete ask to be called again; zero means 5 s.
	PollInterval time.Duration
	// BootEstimate is how long after its launch an instance is first
	// expected to run: a confirm that finds one pending and younger asks to
	// be called again when it reaches that age rather than every
	// PollInterval (EC2 instances take 60-90 s; a poll before then finds
	// them pending and costs a delivery, writes and a Lambda invocation).
	// Zero means 50 s, below the fastest boots; negative turns it off.
	BootEstimate time.Duration
	// ViewMaxAge is how old a cluster's instance listing may be for a poll
	// to use it instead of describing again (see views.go); zero means
	// half of PollInterval.
	ViewMaxAge time.Duration
	// DescribeRate and DescribeBurst pace the polls' describes per client
	// (a token bucket); zero means 5 a second and a burst of 10, a share
	// of the account's DescribeInstances rate that leaves room for other
	// users of the account.
	DescribeRate  float64
	DescribeBurst int
	// NewClient builds a client from a provider's fields; nil: New's own,
	// from the fields' region, keys and endpoint (or the default
	// credential chain).
	NewClient func(ctx context.Context, fields map[string]string) (API, error)
}

// EC2 is the ec2 provider.
type EC2 struct {
	cfg     Config
	clients sync.Map // hash of the client fields -> API
	views   views
	// describes counts the polls' DescribeInstances listings (for tests
	// and benchmarks).
	describes atomic.Int64
}

var _ provider.Provider = (*EC2)(nil)

// New returns the provider.
func New(cfg Config) *EC2 {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 5 * time.Second
	}
	if cfg.BootEstimate == 0 {
		cfg.BootEstimate = 50 * time.Second
	}
	if cfg.ViewMaxAge <= 0 {
		cfg.ViewMaxAge = cfg.PollInterval / 2
	}
	if cfg.DescribeRate <= 0 {
		cfg.DescribeRate = 5
	}
	if cfg.DescribeBurst <= 0 {
		cfg.DescribeBurst = 10
	}
	p := &EC2{cfg: cfg}
	if p.cfg.NewClient == nil {
		p.cfg.NewClient = p.newClient
	}
	return p
}

// client returns a client for the fields, made once per distinct region,
// credentials and endpoint.
func (p *EC2) client(ctx context.Context, fields map[string]string) (API, error) {
	c, _, err := p.keyedClient(ctx, fields)
	return c, err
}

// keyedClient also returns the client's key, which names its describe
// budget and views.
func (p *EC2) keyedClient(ctx context.Context, fields map[string]string) (API, string, error) {
	h := sha256.New()
	for _, k := range []string{FieldRegion, FieldAccessKeyID, FieldSecretAccessKey, FieldEndpoint} {
		h.Write([]byte(fields[k] + "\x00"))
	}
	key := hex.EncodeToString(h.Sum(nil))
	if c, ok := p.clients.Load(key); ok {
		return c.(API), key, nil
	}
	c, err := p.cfg.NewClient(ctx, fields)
	if err != nil {
		return nil, "", err
	}
	actual, _ := p.clients.LoadOrStore(key, c)
	return actual.(API), key, nil
}

func (p *EC2) newClient(ctx context.Context, fields map[string]string) (API, error) {
	region := fields[FieldRegion]
	if region == "" {
		return nil, errors.New("ec2: the provider has no region")
	}
	// The SDK would retry a throttled call inside this one, waiting up to
	// seconds; a poll answers "again after a backoff" instead (views.go),
	// so that no worker waits. Other transient errors are retried as usual.
	opts := awsec2.Options{Region: region, Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
		o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			if throttled(err) {
				return aws.FalseTernary
			}
			return aws.UnknownTernary
		})}, o.Retryables...)
	})}
	if p.cfg.HTTPClient != nil {
		opts.HTTPClient = p.cfg.HTTPClient
	}
	if id := fields[FieldAccessKeyID]; id != "" {
		opts.Credentials = credentials.NewStaticCredentialsProvider(id, fields[FieldSecretAccessKey], "")
	} else {
		// heddle's own role: the Lambda's or the Fargate task's.
		awsCfg, err := config.LoadDefaultConfig(ctx, config.WithRegion(region))
		if err != nil {
			return nil, fmt.Errorf("ec2: AWS credentials: %w", err)
		}
		opts.Credentials = awsCfg.Credentials
	}
	if e := fields[FieldEndpoint]; e != "" {
		opts.BaseEndpoint = aws.String(e)
	}
	// After the SDK has settled its HTTP client: see package sdkbody.
	return awsec2.New(opts, func(o *awsec2.Options) { o.HTTPClient = sdkbody.Guard(o.HTTPClient) }), nil
}

// KeyPairName is the EC2 key pair that holds a cluster's public key.
func KeyPairName(tenant, clusterID string) string { return "heddle-" + tenant + "-" + clusterID }

func tags(pairs ...string) []types.Tag {
	var out []types.Tag
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, types.Tag{Key: aws.String(pairs[i]), Value: aws.String(pairs[i+1])})
	}
	return out
}

func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// maxTokenGenerations bounds how often Create moves on to a fresh token
// because the instance the previous one launched is already terminated.
const maxTokenGenerations = 5

// Create imports the cluster's key pair (once) and launches the node's
// instance with a ClientToken derived from the task: a repeated create
// returns the instance the first one launched. When that instance has
// already been terminated (the node was rolled back and its job retried),
// the next generation of the token launches a new one; the sequence is
// deterministic, so concurrent repeats still agree on one instance.
func (p *EC2) Create(ctx context.Context, req provider.Request) (provider.Node, error) {
	if req.Key == nil || req.Token == "" {
		return provider.Node{}, errors.New("ec2: create needs the cluster's key and a token")
	}
	if req.Image == "" || req.Flavor == "" {
		return provider.Node{}, fmt.Errorf("ec2: node %s needs an image and an instance type (got %q and %q)", req.Node.ID, req.Image, req.Flavor)
	}
	c, err := p.client(ctx, req.Fields)
	if err != nil {
		return provider.Node{}, err
	}
	keyName := KeyPairName(req.Tenant, req.ClusterID)
	if err := importKeyPair(ctx, c, keyName, req); err != nil {
		return provider.Node{}, err
	}
	in := runInput(req, keyName)
	for gen := 1; gen <= maxTokenGenerations; gen++ {
		in.ClientToken = aws.String(tokenGeneration(req.Token, gen))
		out, err := c.RunInstances(ctx, in)
		if err != nil {
			return provider.Node{}, fmt.Errorf("ec2: RunInstances for node %s: %w", req.Node.ID, err)
		}
		if len(out.Instances) != 1 {
			return provider.Node{}, fmt.Errorf("ec2: RunInstances for node %s returned %d instances", req.Node.ID, len(out.Instances))
		}
		inst := out.Instances[0]
		if gone(inst) {
			continue
		}
		return p.facts(req, inst, ""), nil
	}
	return provider.Node{}, fmt.Errorf("ec2: node %s: the instances of %d token generations are all terminated", req.Node.ID, maxTokenGenerations)
}

func tokenGeneration(token string, gen int) string {
	if gen == 1 {
		return token
	}
	return token + "-g" + strconv.Itoa(gen)
}

func gone(inst types.Instance) bool {
	if inst.State == nil {
		return false
	}
	return inst.State.Name == types.InstanceStateNameTerminated || inst.State.Name == types.InstanceStateNameShuttingDown
}

func importKeyPair(ctx context.Context, c API, name string, req provider.Request) error {
	_, err := c.ImportKeyPair(ctx, &awsec2.ImportKeyPairInput{
		KeyName:           aws.String(name),
		PublicKeyMaterial: []byte(req.Key.AuthorizedKey()),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeKeyPair,
			Tags: tags(TagTenant, req.Tenant, TagCluster, req.ClusterID)}},
	})
	if errorCode(err) == "InvalidKeyPair.Duplicate" {
		return nil // imported by an earlier node of the cluster
	}
	if err != nil {
		return fmt.Errorf("ec2: import key pair %s: %w", name, err)
	}
	return nil
}

func runInput(req provider.Request, keyName string) *awsec2.RunInstancesInput {
	f := req.Fields
	in := &awsec2.RunInstancesInput{
		ImageId:      aws.String(req.Image),
		InstanceType: types.InstanceType(req.Flavor),
		MinCount:     aws.Int32(1),
		MaxCount:     aws.Int32(1),
		KeyName:      aws.String(keyName),
		TagSpecifications: []types.TagSpecification{
			{ResourceType: types.ResourceTypeInstance, Tags: tags(TagTenant, req.Tenant, TagCluster, req.ClusterID, TagNode, req.Node.ID, "Name", req.Hostname)},
			{ResourceType: types.ResourceTypeVolume, Tags: tags(TagTenant, req.Tenant, TagCluster, req.ClusterID, TagNode, req.Node.ID)},
		},
	}
	groups := splitList(f[FieldSecurityGroupIDs])
	if f[FieldUsePublicIP] == "true" {
		// A public address can only be asked for on a network interface,
		// which then carries the subnet and groups.
		ni := types.InstanceNetworkInterfaceSpecification{DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: aws.Bool(true), Groups: groups}
		if s := f[FieldSubnetID]; s != "" {
			ni.SubnetId = aws.String(s)
		}
		in.NetworkInterfaces = []types.InstanceNetworkInterfaceSpecification{ni}
	} else {
		in.SecurityGroupIds = groups
		if s := f[FieldSubnetID]; s != "" {
			in.SubnetId = aws.String(s)
		}
	}
	if prof := f[FieldIAMInstanceProfile]; prof != "" {
		if strings.HasPrefix(prof, "arn:") {
			in.IamInstanceProfile = &types.IamInstanceProfileSpecification{Arn: aws.String(prof)}
		} else {
			in.IamInstanceProfile = &types.IamInstanceProfileSpecification{Name: aws.String(prof)}
		}
	}
	return in
}

func (p *EC2) sshPort(fields map[string]string) int {
	if n, err := strconv.Atoi(fields[FieldSSHPort]); err == nil && n > 0 && n < 65536 {
		return n
	}
	return 22
}

// facts reads an instance's addresses: bind is the private address, access
// the public one when the provider says so.
func (p *EC2) facts(req provider.Request, inst types.Instance, hostKey string) provider.Node {
	n := provider.Node{
		ProviderID: aws.ToString(inst.InstanceId),
		Flavor:     req.Flavor, Image: req.Image, SSHUser: req.SSHUser, SSHPort: p.sshPort(req.Fields),
		Hostname: req.Hostname, HostKey: hostKey,
	}
	if dns := aws.ToString(inst.PrivateDnsName); dns != "" {
		n.Hostname = dns
	}
	private, public := aws.ToString(inst.PrivateIpAddress), aws.ToString(inst.PublicIpAddress)
	if private != "" || public != "" {
		n.Addresses = map[string]string{provider.AddressBind: private, provider.AddressAccess: private}
		if req.Fields[FieldUsePublicIP] == "true" {
			n.Addresses[provider.AddressAccess] = public
		}
	}
	return n
}

// Confirm checks once: it reads the node's instance in the cluster's view
// (see views.go) and, once the instance runs, probes SSH once with the
// cluster's key; ready, it reports the addresses and host key. Pending (or
// not listed yet: EC2 is eventually consistent right after a launch), not
// answering SSH yet, paced or throttled, it asks to be called again.
func (p *EC2) Confirm(ctx context.Context, req provider.Request) (provider.Progress, error) {
	c, clientKey, err := p.keyedClient(ctx, req.Fields)
	if err != nil {
		return provider.Progress{}, err
	}
	all, err := p.clusterInstances(ctx, c, clientKey, req.Tenant, req.ClusterID)
	if wait, ok := p.retryLater(err, req.Poll, ""); ok {
		return wait, nil
	}
	if err != nil {
		return provider.Progress{}, fmt.Errorf("ec2: describe cluster %s's instances for node %s: %w", req.ClusterID, req.Node.ID, err)
	}
	var inst *types.Instance
	for _, i := range nodeInstances(all, req.Node.ID, req.Node.ProviderID) {
		if req.Node.ProviderID != "" && aws.ToString(i.InstanceId) != req.Node.ProviderID {
			continue // another launch for the node: the recorded one is confirmed
		}
		if inst == nil || gone(*inst) {
			inst = &i
		}
	}
	if inst == nil {
		return provider.Later(p.cfg.PollInterval, "", fmt.Sprintf("node %s's instance %s is not listed yet", req.Node.ID, req.Node.ProviderID)), nil
	}
	id := aws.ToString(inst.InstanceId)
	state := types.InstanceStateNamePending // a listing without a state: not running yet
	if inst.State != nil {
		state = inst.State.Name
	}
	switch state {
	case types.InstanceStateNameRunning:
	case types.InstanceStateNameTerminated, types.InstanceStateNameShuttingDown:
		return provider.Progress{}, fmt.Errorf("ec2: node %s's instance %s is %s", req.Node.ID, id, state)
	case types.InstanceStateNameStopped, types.InstanceStateNameStopping:
		return provider.Progress{}, fmt.Errorf("ec2: node %s's instance %s is %s; start it or delete the node", req.Node.ID, id, state)
	default:
		again := p.cfg.PollInterval
		if launched := aws.ToTime(inst.LaunchTime); !launched.IsZero() {
			again = max(again, p.cfg.BootEstimate-time.Since(launched))
		}
		return provider.Later(again, "", fmt.Sprintf("node %s's instance %s is %s", req.Node.ID, id, state)), nil
	}
	n := p.facts(req, *inst, "")
	access := n.Addresses[provider.AddressAccess]
	if access == "" {
		return provider.Progress{}, fmt.Errorf("ec2: instance %s of node %s runs but has no address to reach it on (use_public_ip is %q)", n.ProviderID, req.Node.ID, req.Fields[FieldUsePublicIP])
	}
	progress, err := provider.ConfirmSSH(ctx, req.SSH, sshexec.Target{
		Node: req.Node.ID, Address: joinHostPort(access, n.SSHPort), User: req.SSHUser, Key: req.Key.Signer(), HostKey: req.Node.HostKey,
	}, n, p.cfg.PollInterval, "")
	if err != nil {
		return provider.Progress{}, fmt.Errorf("ec2: confirm instance %s: %w", n.ProviderID, err)
	}
	return progress, nil
}

// retryLater turns a describe or terminate that was paced or throttled
// into a later poll: paced, after PollInterval; throttled, after a backoff
// that doubles with each throttled answer in a row, counted in the poll
// state after phase.
func (p *EC2) retryLater(err error, poll, phase string) (provider.Progress, bool) {
	switch {
	case errors.Is(err, errPaced):
		// Not EC2's answer: the throttling count stays as it was.
		return provider.Later(p.cfg.PollInterval, poll, "waiting for this worker's EC2 describe budget"), true
	case throttled(err):
		_, count, _ := strings.Cut(poll, ":")
		n := throttles(count) + 1
		return provider.Later(p.backoff(n), phase+":"+strconv.Itoa(n), fmt.Sprintf("EC2 throttled the request (%d in a row): %v", n, err)), true
	}
	return provider.Progress{}, false
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

var liveStates = []string{"pending", "running", "stopping", "stopped"}

func listInstances(ctx context.Context, c API, filters []types.Filter) ([]types.Instance, error) {
	var out []types.Instance
	in := &awsec2.DescribeInstancesInput{Filters: filters}
	for {
		page, err := c.DescribeInstances(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// deletePhase is Delete's poll state once it has asked for termination.
const deletePhase = "terminating"

// Delete terminates the node's instance, and any other live instance
// tagged for the node (one whose create result was lost), then checks on
// later polls, in the cluster's view, until none of them is left but
// terminated. An instance already gone is not an error.
func (p *EC2) Delete(ctx context.Context, req provider.Request) (provider.Progress, error) {
	c, clientKey, err := p.keyedClient(ctx, req.Fields)
	if err != nil {
		return provider.Progress{}, err
	}
	phase, _, _ := strings.Cut(req.Poll, ":")
	all, err := p.clusterInstances(ctx, c, clientKey, req.Tenant, req.ClusterID)
	if wait, ok := p.retryLater(err, req.Poll, phase); ok {
		return wait, nil
	}
	if err != nil {
		return provider.Progress{}, fmt.Errorf("ec2: find node %s's instances: %w", req.Node.ID, err)
	}
	mine := nodeInstances(all, req.Node.ID, req.Node.ProviderID)
	var ids, ending []string
	if phase != deletePhase && req.Node.ProviderID != "" && !slices.ContainsFunc(mine, func(i types.Instance) bool { return aws.ToString(i.InstanceId) == req.Node.ProviderID }) {
		// Not listed is no proof of absence right after a launch: the first
		// call terminates the recorded instance whatever the view says.
		ids = append(ids, req.Node.ProviderID)
	}
	for _, inst := range mine {
		id := aws.ToString(inst.InstanceId)
		switch {
		case inst.State != nil && inst.State.Name == types.InstanceStateNameTerminated:
		case inst.State != nil && inst.State.Name == types.InstanceStateNameShuttingDown:
			ending = append(ending, id)
		case !slices.Contains(ids, id):
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		err := terminate(ctx, c, ids)
		if wait, ok := p.retryLater(err, req.Poll, phase); ok {
			return wait, nil
		}
		if err != nil {
			return provider.Progress{}, err
		}
		ending = append(ending, ids...)
	}
	if len(ending) == 0 {
		return provider.Done(provider.Node{}), nil
	}
	// Nothing waits for a terminated node as it waits for a booting one
	// (only the job's end): checked half as often.
	return provider.Later(2*p.cfg.PollInterval, deletePhase, fmt.Sprintf("node %s's instances %s are shutting down", req.Node.ID, strings.Join(ending, ", "))), nil
}

func terminate(ctx context.Context, c API, ids []string) error {
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 1000)]
		ids = ids[len(batch):]
		_, err := c.TerminateInstances(ctx, &awsec2.TerminateInstancesInput{InstanceIds: batch})
		if errorCode(err) == "InvalidInstanceID.NotFound" && len(batch) > 1 {
			// One unknown id fails the whole call: terminate one by one.
			for _, id := range batch {
				if err := terminate(ctx, c, []string{id}); err != nil {
					return err
				}
			}
			continue
		}
		if err != nil && errorCode(err) != "InvalidInstanceID.NotFound" {
			return fmt.Errorf("ec2: terminate %s: %w", strings.Join(batch, ", "), err)
		}
	}
	return nil
}
