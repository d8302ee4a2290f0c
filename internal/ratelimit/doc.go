// Package ratelimit counts requests per key (a tenant, a source address) in
// fixed windows and says when one is over its limit and for how long.
//
// Two Limiters share one meaning: Memory keeps the counts in the process (the
// local server, which is one process), Stored keeps them in the store, one
// item per key, so the limit holds across every API Lambda instance of a
// deployment. A fixed window, not a token bucket: a stored token bucket needs
// a read then a conditional write per request, a fixed window one update that
// adds and returns the count. The price is the window edge: a client may
// spend its limit at the end of one window and again at the start of the
// next, so over any window's length it sees at most twice the limit.
//
// Nothing a key counted outlives its use: Memory drops the counts of ended
// windows (when it holds many), and every Stored item carries
// store.CounterExpires a window after its window ends, which DynamoDB's time
// to live acts on, so the items of sources that failed to authenticate once
// and never came back go by themselves. Forget removes a key's count at
// once (a deleted tenant's).
package ratelimit
