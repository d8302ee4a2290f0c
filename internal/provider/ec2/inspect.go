package ec2

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/heddle-io/heddle/internal/provider"
)

var _ provider.Inspector = (*EC2)(nil)

// Inspect reads the node's recorded instance in the cluster's shared
// listing (views.go: one DescribeInstances serves every node of the
// cluster a drift check probes, within ViewMaxAge): terminated, shutting
// down or no longer listed is gone; stopped or stopping is stopped. A
// paced or throttled listing says nothing (MachineUnknown): the probe then
// relies on SSH.
func (p *EC2) Inspect(ctx context.Context, req provider.Request) (provider.MachineState, string, error) {
	c, clientKey, err := p.keyedClient(ctx, req.Fields)
	if err != nil {
		return "", "", err
	}
	all, err := p.clusterInstances(ctx, c, clientKey, req.Tenant, req.ClusterID)
	if errors.Is(err, errPaced) || throttled(err) {
		return provider.MachineUnknown, "EC2 paced or throttled the listing", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("ec2: describe cluster %s's instances for node %s: %w", req.ClusterID, req.Node.ID, err)
	}
	id := req.Node.ProviderID
	for _, inst := range all {
		if aws.ToString(inst.InstanceId) != id || id == "" {
			continue
		}
		state := types.InstanceStateNamePending
		if inst.State != nil {
			state = inst.State.Name
		}
		detail := fmt.Sprintf("instance %s is %s", id, state)
		switch state {
		case types.InstanceStateNameTerminated, types.InstanceStateNameShuttingDown:
			return provider.MachineGone, detail, nil
		case types.InstanceStateNameStopped, types.InstanceStateNameStopping:
			return provider.MachineStopped, detail, nil
		}
		return provider.MachineRunning, detail, nil
	}
	return provider.MachineGone, fmt.Sprintf("instance %s of node %s is not listed: terminated long enough ago that EC2 dropped it", id, req.Node.ID), nil
}
