package store

import "errors"

// ErrUnknownOutcome marks a write whose outcome the store could not learn:
// a request that may have been applied (a timeout, a 5xx, a connection
// lost after it was sent) whose retry then failed its condition, where the
// item as it is now does not say whether the first attempt wrote it. It is
// never ErrConditionFailed: the caller did not lose a race it can see, and
// must read again before it decides anything. Errors carrying it also wrap
// the last failure.
var ErrUnknownOutcome = errors.New("store: the write's outcome is unknown (it may have been applied)")
