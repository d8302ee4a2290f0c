// Package faults injects the failures a serverless control plane meets in
// production into heddle's tests, against the real emulators: DynamoDB
// Local, fauxqs and the OpenSSH test hosts.
//
// Request level (Injector): an http.RoundTripper, an aws.HTTPClient for an
// SDK client's options, or a reverse proxy (Proxy) in front of an emulator
// for processes the test does not build (the local AWS topology's
// functions). Each request, picked by its X-Amz-Target operation, may get
//
//   - Latency: held before it is sent;
//   - Throttle: answered 400 ThrottlingException without being sent (as
//     DynamoDB and SQS throttle: nothing applied);
//   - ServerError: answered 500 without being sent;
//   - ServerErrorAfter: sent, applied, and its answer replaced by a 500;
//   - TimeoutAfter: sent, applied, and its answer lost (a timeout error for
//     an in-process client; a connection closed without an answer through
//     the proxy);
//   - Reset: the connection reset before the request is sent;
//   - Redeliver (SQS ReceiveMessage): the received messages are made
//     visible again at once (ChangeMessageVisibility 0), so another poller
//     receives them while the first still works on them: the early and
//     duplicate deliveries of an at-least-once queue.
//
// Faults come at random from a seeded source (Rates; the same seed and
// the same sequence of requests give the same faults) or scripted (Arm:
// the next requests of an operation get these faults, in order), which is
// how a test makes one particular write ambiguous. Counts and Events say
// what was injected.
//
// TCP level (TCPProxy): a proxy in front of one address (an OpenSSH host)
// that can drop every connection it carries, stall them (bytes held, not
// lost) for a while, or refuse new ones: SSH sessions cut mid-action and
// networks that hang.
//
// Nothing here is for production: a client is given a fault layer only by
// a test or by heddle-local-aws's --faults.
package faults
