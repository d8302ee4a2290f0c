package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// ClusterDefinition is what a user asks a cluster to be, as a revision
// keeps it: the template by reference (its resolved form is the catalog's
// to give back, and can be far larger than everything else here), the
// services, the config and the node count.
type ClusterDefinition struct {
	Template TemplateRef     `json:"template"`
	Services []string        `json:"services"`
	Config   json.RawMessage `json:"config,omitempty"`
	Size     int             `json:"size"`
}

// Digest is a hash of d's content: two definitions with the same digest
// build the same cluster, whatever the spacing or key order of the
// config a user sent.
func (d ClusterDefinition) Digest() string {
	c := d
	c.Config = CanonicalJSON(d.Config)
	// Services are a set: add then remove may leave them in another order.
	c.Services = slices.Sorted(slices.Values(d.Services))
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CanonicalJSON is raw re-encoded with sorted keys and no spacing (nil for
// empty or null), so that equal content compares equal.
func CanonicalJSON(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil || v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// Revision is one numbered, immutable change of a cluster's definition,
// written in the first transaction of the job that makes it.
type Revision struct {
	Number    int64             `json:"number"`
	ClusterID string            `json:"clusterId"`
	JobID     string            `json:"jobId"`
	Operation Operation         `json:"operation"`
	By        string            `json:"by"`
	At        time.Time         `json:"at"`
	Digest    string            `json:"digest"`
	Def       ClusterDefinition `json:"definition"`
	// Previous is the revision the cluster had when this one was made.
	Previous int64 `json:"previous,omitempty"`
	// RollbackOf is the revision a rollback step brings the cluster back
	// to (0: not a rollback).
	RollbackOf int64 `json:"rollbackOf,omitempty"`
	// Withdrawn marks a revision that never took effect: its job was
	// withdrawn before it started (a pre-start hook refused it, or the
	// janitor undid its submission; a retry of the job records a new
	// revision), or its rollback plan undid it (a failed create or
	// expand). The cluster went back to Previous. It stays in the history
	// so that numbers are never reused.
	Withdrawn bool `json:"withdrawn,omitempty"`
}
