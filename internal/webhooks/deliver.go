package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/events"
	"github.com/heddle-io/heddle/internal/store"
)

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

const (
	Pending   DeliveryStatus = "PENDING"   // an attempt is due (now or after its backoff)
	Delivered DeliveryStatus = "DELIVERED" // the endpoint answered 2xx
	GaveUp    DeliveryStatus = "GAVE_UP"   // MaxAttempts failed, or the endpoint was deleted
)

// Attempt is one POST of a delivery.
type Attempt struct {
	At time.Time `json:"at"`
	// Status is the endpoint's HTTP status; 0 when it gave none.
	Status   int           `json:"status,omitempty"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"durationNs"`
	// Answer is the start of the answer's body (at most MaxAnswer bytes).
	Answer string `json:"answer,omitempty"`
}

// MaxAnswer bounds what a delivery record keeps of an answer.
const MaxAnswer = 256

// Delivery is one event on its way to one endpoint: the delivery log's
// record. ID is the idempotency id the receiver sees.
type Delivery struct {
	ID       string         `json:"id"`
	Endpoint string         `json:"endpoint"`
	Event    events.Event   `json:"event"`
	Status   DeliveryStatus `json:"status"`
	NextAt   time.Time      `json:"nextAt,omitzero"`
	Attempts []Attempt      `json:"attempts,omitempty"`
}

// Config tunes deliveries; zero fields take the defaults.
type Config struct {
	// MaxAttempts bounds a delivery's attempts (default 8).
	MaxAttempts int
	// Backoff is the wait after the first failed attempt, doubled after
	// each next one (default 10 s), capped at MaxBackoff (default 10 min):
	// by default a delivery gives up about 21 minutes after its first try.
	Backoff, MaxBackoff time.Duration
	// ResendAfter is how long past its due time a pending delivery waits
	// before the janitor takes its message for lost (default 2 min).
	ResendAfter time.Duration
	Policy      Policy
}

func (c Config) withDefaults() Config {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 8
	}
	if c.Backoff <= 0 {
		c.Backoff = 10 * time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 10 * time.Minute
	}
	if c.ResendAfter <= 0 {
		c.ResendAfter = 2 * time.Minute
	}
	return c
}

// Sender puts a delivery's message on the tenant's queue; the engine
// implements it (engine.SendHook), so deliveries share the workers.
type Sender func(ctx context.Context, tenant, endpoint, eventID string, send int) error

// Deliverer dispatches events and makes delivery attempts.
type Deliverer struct {
	s      store.Store
	reg    *Registry
	send   Sender
	client *http.Client
	cfg    Config
	now    func() time.Time
}

// NewDeliverer delivers the events in s to reg's endpoints; send queues
// the attempts.
func NewDeliverer(s store.Store, reg *Registry, send Sender, cfg Config) *Deliverer {
	cfg = cfg.withDefaults()
	return &Deliverer{s: s, reg: reg, send: send, client: cfg.Policy.Client(), cfg: cfg, now: time.Now}
}

const dueShards = 4

func duePartition(shard int) string { return fmt.Sprintf("HOOKDUE#%d", shard) }

func shardOf(s string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return int(h.Sum32() % dueShards)
}

func deliveriesPK(tenant, endpoint string) string {
	return store.TenantPK(tenant, "DELIVERIES#"+endpoint)
}

func deliveryKey(tenant, endpoint, eventID string) store.Key {
	return store.Key{PK: deliveriesPK(tenant, endpoint), SK: eventID}
}

func (d *Deliverer) item(tenant string, dl Delivery, version int64) store.Op {
	data, _ := json.Marshal(dl)
	it := store.Item{Key: deliveryKey(tenant, dl.Endpoint, dl.Event.ID), Status: string(dl.Status), Data: data}
	if dl.Status == Pending {
		it.Index = &store.IndexKey{Partition: duePartition(shardOf(dl.ID)), Sort: store.SortableTime(dl.NextAt)}
	} else {
		it.Index = events.ExpiryIndex(dl.ID, dl.Event.At)
	}
	if version == 0 {
		return store.Put(it, store.Condition{MustNotExist: true})
	}
	return store.Put(it, store.Condition{Version: version})
}

// Dispatch hands on every event in the outbox: one delivery per endpoint
// that subscribes to it, queued; then the event leaves the outbox. It
// returns how many deliveries it made. Two dispatchers at once make each
// delivery once (the record is written only if absent).
func (d *Deliverer) Dispatch(ctx context.Context) (int, error) {
	made := 0
	var errs []error
	endpoints := map[string][]Endpoint{} // by tenant, for this pass
	for shard := range events.OutboxShards {
		cursor := ""
		for {
			page, err := d.s.QueryIndex(ctx, events.OutboxPartition(shard), store.IndexQuery{Cursor: cursor, Limit: store.MaxPageSize})
			if err != nil {
				errs = append(errs, fmt.Errorf("reading the event outbox: %w", err))
				break
			}
			for _, indexed := range page.Items {
				n, err := d.dispatchOne(ctx, indexed, endpoints)
				made += n
				if err != nil {
					errs = append(errs, err)
				}
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
	}
	return made, errors.Join(errs...)
}

func (d *Deliverer) dispatchOne(ctx context.Context, indexed store.Item, cache map[string][]Endpoint) (int, error) {
	it, err := d.s.Get(ctx, indexed.Key) // the index may lag
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if it.Index == nil || !strings.HasPrefix(it.Index.Partition, "OUTBOX#") {
		return 0, nil
	}
	tenant, _, ok := store.TenantOf(it.PK)
	if !ok {
		return 0, nil
	}
	ev, err := events.Decode(it)
	if err != nil {
		return 0, err
	}
	list, ok := cache[tenant]
	if !ok {
		if list, err = d.reg.List(ctx, tenant); err != nil {
			return 0, err
		}
		cache[tenant] = list
	}
	made := 0
	for _, e := range list {
		if !e.Wants(ev.Type) {
			continue
		}
		dl := Delivery{ID: e.ID + "/" + ev.ID, Endpoint: e.ID, Event: ev, Status: Pending, NextAt: d.now()}
		_, err := d.s.Write(ctx, d.item(tenant, dl, 0))
		if errors.Is(err, store.ErrConditionFailed) {
			continue // made by another dispatcher, which sends it
		}
		if err != nil {
			return made, fmt.Errorf("recording the delivery of event %s to %s: %w", ev.ID, e.ID, err)
		}
		made++
		if err := d.send(ctx, tenant, e.ID, ev.ID, 0); err != nil {
			// The record is PENDING and due: the janitor sends it.
			continue
		}
	}
	return made, events.Dispatched(ctx, d.s, it, ev)
}

// ResendLost sends again the message of every delivery overdue by
// ResendAfter: its message was lost (or dropped by a worker that did not
// know it). The janitor calls it on every pass.
func (d *Deliverer) ResendLost(ctx context.Context) (int, error) {
	sent := 0
	var errs []error
	before := store.SortableTime(d.now().Add(-d.cfg.ResendAfter))
	for shard := range dueShards {
		cursor := ""
		for {
			page, err := d.s.QueryIndex(ctx, duePartition(shard), store.IndexQuery{SortBefore: before, Cursor: cursor, Limit: store.MaxPageSize})
			if err != nil {
				errs = append(errs, err)
				break
			}
			for _, it := range page.Items {
				tenant, rest, ok := store.TenantOf(it.PK)
				endpoint, isDelivery := strings.CutPrefix(rest, "DELIVERIES#")
				if !ok || !isDelivery {
					continue
				}
				if err := d.send(ctx, tenant, endpoint, it.SK, int(d.now().Unix())); err != nil {
					errs = append(errs, err)
					continue
				}
				sent++
			}
			if page.Next == "" {
				break
			}
			cursor = page.Next
		}
	}
	return sent, errors.Join(errs...)
}

// Deliver makes the due attempt of one delivery (a worker's handling of
// its message) and returns when the message should come back: zero when
// the delivery is over (delivered, given up, or not this message's to
// make), else the wait until its next attempt.
func (d *Deliverer) Deliver(ctx context.Context, tenant, endpoint, eventID string) (time.Duration, error) {
	it, err := d.s.Get(ctx, deliveryKey(tenant, endpoint, eventID))
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var dl Delivery
	if err := json.Unmarshal(it.Data, &dl); err != nil {
		return 0, fmt.Errorf("reading delivery %s: %w", it.Key, err)
	}
	if dl.Status != Pending {
		return 0, nil
	}
	if wait := dl.NextAt.Sub(d.now()); wait > 0 {
		return wait, nil // early: a backoff still runs
	}
	e, err := d.reg.Get(ctx, tenant, endpoint)
	if errors.Is(err, ErrNotFound) {
		dl.Status = GaveUp
		dl.Attempts = append(dl.Attempts, Attempt{At: d.now(), Error: "the endpoint was deleted"})
		return 0, d.record(ctx, tenant, dl, it.Version)
	}
	if err != nil {
		return 0, err
	}
	secret, err := d.reg.secret(ctx, tenant, e)
	if err != nil {
		return 0, err
	}
	a := d.post(ctx, e.URL, secret, dl)
	dl.Attempts = append(dl.Attempts, a)
	var wait time.Duration
	switch {
	case a.Status >= 200 && a.Status < 300:
		dl.Status, dl.NextAt = Delivered, time.Time{}
	case len(dl.Attempts) >= d.cfg.MaxAttempts:
		dl.Status, dl.NextAt = GaveUp, time.Time{}
	default:
		wait = d.backoff(len(dl.Attempts))
		dl.NextAt = d.now().Add(wait)
	}
	return wait, d.record(ctx, tenant, dl, it.Version)
}

// record writes dl over the version read; another worker that made the
// attempt first wins, and this one's result is dropped.
func (d *Deliverer) record(ctx context.Context, tenant string, dl Delivery, version int64) error {
	_, err := d.s.Write(ctx, d.item(tenant, dl, version))
	if errors.Is(err, store.ErrConditionFailed) {
		return nil
	}
	return err
}

func (d *Deliverer) backoff(failed int) time.Duration {
	wait := d.cfg.Backoff
	for i := 1; i < failed && wait < d.cfg.MaxBackoff; i++ {
		wait *= 2
	}
	return min(wait, d.cfg.MaxBackoff)
}

// Body is what a delivery posts: the event and the delivery's id.
type Body struct {
	Delivery string       `json:"delivery"`
	Event    events.Event `json:"event"`
}

func (d *Deliverer) post(ctx context.Context, url, secret string, dl Delivery) Attempt {
	start := d.now()
	a := Attempt{At: start}
	body, _ := json.Marshal(Body{Delivery: dl.ID, Event: dl.Event})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		a.Error = err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "heddle-webhooks/1")
	req.Header.Set(DeliveryHeader, dl.ID)
	req.Header.Set(EventHeader, string(dl.Event.Type))
	req.Header.Set(SignatureHeader, Sign(secret, start, body))
	resp, err := d.client.Do(req)
	a.Duration = time.Since(start)
	if err != nil {
		a.Error = boundString(err.Error(), 500)
		return a
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	a.Status, a.Answer = resp.StatusCode, strings.ToValidUTF8(string(head), "")
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		a.Error = "redirects are not followed (" + resp.Header.Get("Location") + ")"
	}
	a.Duration = time.Since(start)
	return a
}

func boundString(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// Log pages an endpoint's deliveries, newest first.
func (d *Deliverer) Log(ctx context.Context, tenant, endpoint string, limit int, cursor string) ([]Delivery, string, error) {
	if _, err := d.reg.Get(ctx, tenant, endpoint); err != nil {
		return nil, "", err
	}
	page, err := d.s.Query(ctx, deliveriesPK(tenant, endpoint), store.Query{Limit: limit, Cursor: cursor, Descending: true})
	if err != nil {
		return nil, "", err
	}
	out := make([]Delivery, 0, len(page.Items))
	for _, it := range page.Items {
		var dl Delivery
		if err := json.Unmarshal(it.Data, &dl); err != nil {
			return nil, "", fmt.Errorf("reading delivery %s: %w", it.Key, err)
		}
		out = append(out, dl)
	}
	return out, page.Next, nil
}
