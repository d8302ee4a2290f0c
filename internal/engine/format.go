package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/heddle-io/heddle/internal/store"
)

// FormatVersion is the format of the jobs, task items and queue messages
// this code writes. It goes up by one whenever a change makes code from
// before it misread what the change writes (the job whose first tasks live
// in chunk items, for instance). Code meets a higher number only while a
// deployment runs two releases side by side, and then it leaves the thing
// to the newer release (see handBack): it never drops, fails or rewrites
// it. Lower numbers are read as they always were.
//
//	1  everything written before formats were recorded: no marker at all
//	2  chunked submissions (deferred task chunk items, staged lists), and the
//	   marker itself: a "fmt" counter on job and task items, Format on
//	   messages
//	3  webhook deliveries and pre-start hooks: messages for the ~hook and
//	   ~prestart pseudo-clusters, which code of format 2 would take for
//	   tasks it cannot find and drop, and jobs held PENDING for their hooks
//	4  drift checks: probe tasks and check tasks of a drift job, which code
//	   of format 3 would fail as actions it does not know, ending the
//	   check FAILED
//	5  per-node deletions: a delete task's success marks its node DELETED
//	   and counts it on the job (nodesDeleted), whose end gives its quota
//	   back; an end by code of format 4 would not, and leave the tenant's
//	   node counter above its nodes
const FormatVersion = 5

// counterFormat holds an item's format version. A counter, not a field of
// the document, so that code reads it without decoding a format it may not
// understand, and an update that rewrites the document keeps it.
const counterFormat = "fmt"

// newerFormatDelay is how long a message of a newer format stays away from
// the worker that handed it back. SQS moves a message to the dead-letter
// queue on its fifth delivery (sqsqueue's MaxReceiveCount), so an old worker
// may meet it four times: eight minutes, more than a canary deployment
// (template.yaml's DeploymentPreference) takes to send every invocation to
// the new version.
const newerFormatDelay = 2 * time.Minute

// formatOf is an item's format: its marker, or 1 when it has none.
func formatOf(it store.Item) int {
	if f := it.Counter(counterFormat); f > 0 {
		return int(f)
	}
	return 1
}

// messageFormat is a message's format, 1 when it carries none.
func messageFormat(f int) int { return max(f, 1) }

// newer reports whether format f is one this engine does not understand.
func (e *Engine) newer(f int) bool { return f > e.cfg.MaxFormat }

// handBack keeps a message for a newer release's worker.
func (e *Engine) handBack(tenant, what string, format int) Disposition {
	e.log.Warn("handing back work of a newer format to a newer release", "tenant", tenant, "what", what,
		"format", format, "understood", e.cfg.MaxFormat, "delay", newerFormatDelay)
	return Disposition{Delay: newerFormatDelay}
}

// ErrNewerFormat matches the error of reading a job or task that a newer
// release wrote in a format this code does not understand (during a
// deploy): the caller tries again later, or the newer release answers.
var ErrNewerFormat = errors.New("engine: written by a newer release")

// newerFormatError: an item is of a format this engine does not understand.
// It is checked before the item is decoded, so nothing is read wrong.
type newerFormatError struct {
	what   string
	format int
	max    int
}

func (e *newerFormatError) Error() string {
	return fmt.Sprintf("engine: %s is of format %d, newer than this heddle handles (%d); a newer release handles it", e.what, e.format, e.max)
}

func (e *newerFormatError) Is(target error) bool { return target == ErrNewerFormat }

// understands returns a *newerFormatError for an item of a newer format.
func (e *Engine) understands(it store.Item, what string) error {
	if f := formatOf(it); e.newer(f) {
		return &newerFormatError{what: what, format: f, max: e.cfg.MaxFormat}
	}
	return nil
}

// isNewer reports whether err says an item is of a newer format.
func isNewer(err error) bool {
	var nf *newerFormatError
	return errors.As(err, &nf)
}
