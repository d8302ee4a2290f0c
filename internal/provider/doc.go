// Package provider defines how heddle gets nodes: the Provider interface
// that the local, static and ec2 provider types implement (create, confirm,
// delete), and the Registry of provider types with the parameters each one
// declares, so that the API validates a provider entity against its type and
// a UI can draw the form for it.
//
// The contract every provider keeps:
//   - Create is idempotent on Request.Token, which the dispatcher derives from
//     the task: a retried or duplicated create returns the node the first one
//     made and never makes a second (EC2's ClientToken, the local provider's
//     token file, the static pool's claim item).
//   - Create returns as soon as the provider accepted the request; it never
//     waits for the machine to boot.
//   - Confirm checks once: the node runs and answers one short SSH login
//     with the cluster's key (ConfirmSSH, bounded by ProbeTimeout), and it
//     reports its addresses and its host key, which the engine records on
//     the node and every later task pins; or it answers Progress.Again
//     (booting, not answering yet, throttled). The dispatcher parks the
//     attempt and whichever worker is free calls again after the delay,
//     with Request.Poll set to the previous answer's Progress.Poll: nothing
//     is kept in memory between checks (invariant 12).
//   - Delete is idempotent and likewise answers Again until the provider
//     says the node is gone; deleting a node that is already gone succeeds.
//
// A provider reports what it learned as a Node; the dispatcher records the
// SSH port, sudo policy and working directory among the node's properties
// (PropSSHPort, PropNoSudo, PropWorkDir) and EndpointOf reads them back for
// the automator.
//
// Sensitive fields (credentials, keys) are sealed at rest with the secrets
// package: SealFields before a provider is stored (the catalog does it when
// configured with catalog.WithProviders), OpenFields when a worker needs
// them, Redact before one is returned by the API.
package provider
