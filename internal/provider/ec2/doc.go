// Package ec2 is the provider for Amazon EC2 (aws-sdk-go-v2/service/ec2):
// one instance per node.
//
//   - Create imports the cluster's public key as the key pair
//     heddle-<tenant>-<cluster> (once; a duplicate is fine) and calls
//     RunInstances with a ClientToken derived from the task, so a retried
//     create returns the instance the first one launched instead of leaking
//     a second (invariant 8). The instance and its volumes are tagged
//     heddle:tenant, heddle:cluster and heddle:node (and Name); subnet,
//     security groups and instance profile come from the provider's fields,
//     the AMI and instance type from the node's image and hardware types.
//   - Confirm checks once: it finds the node's instance in the cluster's
//     view and answers "again after PollInterval" while it is pending or not
//     listed yet (EC2 is eventually consistent right after a launch); once
//     it runs, one short SSH probe with the cluster's key, and the private
//     address as bind_v4, the private or public one (use_public_ip) as
//     access_v4, the private DNS name and the host key, pinned from then on.
//   - Delete terminates the instance, and any other live instance tagged for
//     the node (a launch whose result was never recorded), then answers
//     "again" until the view lists them terminated.
//   - The view (views.go) is one paged DescribeInstances of every instance
//     tagged for the cluster, shared by every poll of the cluster in this
//     process for ViewMaxAge: the due polls of a 1,000-node create cost one
//     listing per worker per ViewMaxAge, not a describe per node. Describes
//     are paced per client by a token bucket (a poll that finds it empty
//     reads the stale view or asks to be polled later), and a throttled call
//     (RequestLimitExceeded; the SDK's own retry of throttles is turned off,
//     as it would wait inside the call) answers "again" after a backoff that
//     doubles with each throttled answer in a row, counted in the poll state.
//   - Sweep, for the janitor, terminates live instances and deletes key
//     pairs tagged for clusters that no longer exist.
//
// The client's HTTP requests go through sdkbody.Guard, as every AWS client: the
// SDK closes a request body while net/http may still be finishing its
// write, which without the guard breaks the connection under a response
// being read and makes the SDK send the call again (a listing served
// twice).
//
// Credentials: an access key pair in the provider's fields (the secret is a
// sensitive field, sealed at rest), or none to use heddle's own role (the
// worker Lambda's or Fargate task's). The endpoint field points the client
// at an EC2-compatible service (LocalStack).
//
// The tests speak EC2's query protocol to an httptest server that answers
// with XML in the shapes of recorded EC2 responses (testdata/); the SDK's own
// deserializers read them; poll_test.go drives the parked path (shared
// listings, pacing, throttling, delete until terminated) through them.
// scripts/ec2-smoke.sh runs a real create, confirm
// and delete when AWS credentials are present.
package ec2
