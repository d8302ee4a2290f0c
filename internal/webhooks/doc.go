// Package webhooks delivers a tenant's cluster events to the HTTPS
// endpoints its admins register, signed, through the queue, with retries.
//
// # Registration
//
// An endpoint has a URL, the event types it wants (all when empty) and a
// secret made at registration, shown once and kept sealed by the keyring
// (KMS in AWS, the local key file locally). URLs must be https; the local
// server also takes http to a loopback address.
//
// # Delivery
//
// Events are written by the engine's transactions into an outbox (see
// package events). The dispatcher (Dispatch: after a change in the local
// server, and on every janitor pass) reads the outbox, writes one delivery
// record per subscribed endpoint (DELIVERIES#<endpoint>/<event id>, only if
// absent) and sends a queue message for each. A worker handles the message
// (Deliver): one POST with the event as its body, then the record says
// DELIVERED, or PENDING with the next attempt after an exponential backoff
// (the message comes back then), or GAVE_UP after MaxAttempts. Nothing of a
// delivery happens in an API request. A record waiting for its next attempt
// is indexed by when it is due (HOOKDUE#<shard>); the janitor re-sends the
// message of one overdue by ResendAfter (a lost message, or a worker of an
// older version that dropped it). Records of ended deliveries expire with
// the events.
//
// # Bounds and SSRF
//
// An attempt takes at most the client's Timeout (connection, TLS, headers
// and a bounded read of the answer); redirects are not followed; the dialer
// checks the address it is about to dial (a net.Dialer Control hook, so a
// name that resolves to a private address, or is rebound to one, is refused
// too): loopback, private (RFC 1918, fc00::/7), link-local (169.254/16,
// fe80::/10, the cloud metadata address among them), CGNAT, multicast and
// unspecified addresses are refused unless the operator allows them.
//
// # Signature
//
// Every delivery carries Heddle-Signature: t=<unix seconds>,v1=<hex>, where
// v1 is HMAC-SHA256 with the endpoint's secret over "<t>.<body>"; Verify
// checks it (and refuses a timestamp more than Tolerance away, a replay).
// Heddle-Delivery is the idempotency id (the same for every attempt of one
// delivery) and Heddle-Event the event's type.
package webhooks
