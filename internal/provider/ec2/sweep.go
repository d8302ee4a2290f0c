package ec2

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// ClusterExists tells the sweep whether a tenant's cluster still exists
// (is not TERMINATED). It must answer true when in doubt: a false answer
// terminates the cluster's instances.
type ClusterExists func(ctx context.Context, tenant, clusterID string) (bool, error)

// SweepOptions tune a sweep.
type SweepOptions struct {
	// MinAge spares instances launched less than this long ago, so that a
	// node launched for a cluster whose record is not yet visible is never
	// swept; zero means 15 minutes.
	MinAge time.Duration
	// DryRun reports what would be terminated without terminating it.
	DryRun bool
	Now    func() time.Time
}

// SweepReport says what a sweep found and did.
type SweepReport struct {
	Examined        int      // live instances tagged by heddle
	Terminated      []string // instance ids (would be, in a dry run)
	KeyPairsDeleted []string
	Clusters        int // distinct clusters seen
}

// Sweep finds the live instances and key pairs heddle tagged for clusters
// that no longer exist and removes them: the janitor's defence against
// leaks that no task accounts for (a delete that failed for good, a
// create's instance whose record was lost, a cluster row removed by hand).
// It asks exists once per cluster.
func (p *EC2) Sweep(ctx context.Context, fields map[string]string, exists ClusterExists, opts SweepOptions) (SweepReport, error) {
	if opts.MinAge == 0 {
		opts.MinAge = 15 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c, err := p.client(ctx, fields)
	if err != nil {
		return SweepReport{}, err
	}
	instances, err := listInstances(ctx, c, []types.Filter{
		{Name: aws.String("tag-key"), Values: []string{TagCluster}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	})
	if err != nil {
		return SweepReport{}, fmt.Errorf("ec2: sweep: list instances: %w", err)
	}
	var rep SweepReport
	verdicts := map[[2]string]bool{}
	ask := func(tenant, cluster string) (bool, error) {
		k := [2]string{tenant, cluster}
		if v, ok := verdicts[k]; ok {
			return v, nil
		}
		v, err := exists(ctx, tenant, cluster)
		if err != nil {
			return true, fmt.Errorf("ec2: sweep: does cluster %s/%s exist: %w", tenant, cluster, err)
		}
		verdicts[k] = v
		return v, nil
	}
	var doomed []string
	cutoff := opts.Now().Add(-opts.MinAge)
	for _, inst := range instances {
		tenant, cluster := tagValue(inst.Tags, TagTenant), tagValue(inst.Tags, TagCluster)
		if tenant == "" || cluster == "" {
			continue // not one of heddle's (a tag-key match alone)
		}
		rep.Examined++
		ok, err := ask(tenant, cluster)
		if err != nil {
			return rep, err
		}
		if ok || inst.LaunchTime == nil || inst.LaunchTime.After(cutoff) {
			continue
		}
		doomed = append(doomed, aws.ToString(inst.InstanceId))
	}

	keys, err := c.DescribeKeyPairs(ctx, &awsec2.DescribeKeyPairsInput{Filters: []types.Filter{{Name: aws.String("tag-key"), Values: []string{TagCluster}}}})
	if err != nil {
		return rep, fmt.Errorf("ec2: sweep: list key pairs: %w", err)
	}
	var doomedKeys []string
	for _, k := range keys.KeyPairs {
		tenant, cluster := tagValue(k.Tags, TagTenant), tagValue(k.Tags, TagCluster)
		if tenant == "" || cluster == "" {
			continue
		}
		ok, err := ask(tenant, cluster)
		if err != nil {
			return rep, err
		}
		if !ok && (k.CreateTime == nil || k.CreateTime.Before(cutoff)) {
			doomedKeys = append(doomedKeys, aws.ToString(k.KeyName))
		}
	}
	rep.Clusters = len(verdicts)
	slices.Sort(doomed)
	slices.Sort(doomedKeys)
	rep.Terminated, rep.KeyPairsDeleted = doomed, doomedKeys
	if opts.DryRun {
		return rep, nil
	}
	if err := terminate(ctx, c, doomed); err != nil {
		return rep, fmt.Errorf("ec2: sweep: %w", err)
	}
	for _, name := range doomedKeys {
		if _, err := c.DeleteKeyPair(ctx, &awsec2.DeleteKeyPairInput{KeyName: aws.String(name)}); err != nil && errorCode(err) != "InvalidKeyPair.NotFound" {
			return rep, fmt.Errorf("ec2: sweep: delete key pair %s: %w", name, err)
		}
	}
	return rep, nil
}

func tagValue(ts []types.Tag, key string) string {
	for _, t := range ts {
		if aws.ToString(t.Key) == key {
			return aws.ToString(t.Value)
		}
	}
	return ""
}
