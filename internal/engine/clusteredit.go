package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heddle-io/heddle/internal/domain"
	"github.com/heddle-io/heddle/internal/store"
)

// A submission also changes the cluster's own definition: add- and
// remove-services its services, a reconfigure its config, a sync its
// template and, beside the cluster, its spec item. A withdrawn job (vetoed,
// or undone by the janitor) must leave the cluster as it was, like its
// nodes (nodeundo.go): a vetoed add-services that left the service in the
// cluster's list made a later remove-services of it plan a change of no
// node, and a vetoed sync left the cluster claiming a template version its
// nodes never ran. So step 1 writes, with the job, an edit item holding
// the definition before and after and the other items rewritten; the
// withdrawal puts Before back in the transaction that frees the cluster,
// and a retry writes After again in the one that takes it back.

const editKind = "EDIT#"

// Definition is the part of a cluster record that operations change.
type Definition struct {
	Template domain.TemplateRef      `json:"template"`
	Resolved *domain.ClusterTemplate `json:"resolved,omitempty"`
	Services []string                `json:"services"`
	Config   json.RawMessage         `json:"config,omitempty"`
}

// DefinitionOf is c's definition.
func DefinitionOf(c domain.Cluster) Definition {
	return Definition{Template: c.Template, Resolved: c.Resolved, Services: c.Services, Config: c.Config}
}

func (d Definition) applyTo(c *domain.Cluster) {
	c.Template, c.Resolved, c.Services, c.Config = d.Template, d.Resolved, d.Services, d.Config
}

// EditedItem is an item beside the cluster that a submission's checks
// rewrite (a sync's spec): its data before and after.
type EditedItem struct {
	Key    store.Key       `json:"key"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// ClusterEdit is what a submission changes in the cluster's definition.
type ClusterEdit struct {
	Before Definition   `json:"before"`
	After  Definition   `json:"after"`
	Items  []EditedItem `json:"items,omitempty"`
}

func editKey(tenant, job string) store.Key {
	return store.Key{PK: chunkPK(tenant, editKind, job), SK: "edit"}
}

// editOp is the put of a submission's edit item, for step 1.
func editOp(tenant, job string, edit *ClusterEdit) store.Op {
	return store.Put(store.Item{Key: editKey(tenant, job), Data: mustJSON(edit)}, store.Condition{})
}

// loadEdit reads a job's edit item; nil when the job changed no
// definition (or is of an older release).
func (e *Engine) loadEdit(ctx context.Context, tenant, job string) (*ClusterEdit, error) {
	it, err := e.store.Get(ctx, editKey(tenant, job))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the cluster edit of job %s: %w", job, err)
	}
	var edit ClusterEdit
	if err := decodeInto(it, &edit); err != nil {
		return nil, err
	}
	return &edit, nil
}

// editOps sets c's definition to the edit's side (before: a withdrawal;
// after: a retry) and returns the puts of the other items' data. The
// caller's transaction holds the cluster lock, which every writer of
// those items holds too, so the puts need no condition of their own.
func (edit *ClusterEdit) editOps(c *domain.Cluster, before bool) []store.Op {
	if edit == nil {
		return nil
	}
	side, data := edit.After, func(it EditedItem) json.RawMessage { return it.After }
	if before {
		side, data = edit.Before, func(it EditedItem) json.RawMessage { return it.Before }
	}
	side.applyTo(c)
	ops := make([]store.Op, 0, len(edit.Items))
	for _, it := range edit.Items {
		ops = append(ops, store.Put(store.Item{Key: it.Key, Data: data(it)}, store.Condition{}))
	}
	return ops
}
