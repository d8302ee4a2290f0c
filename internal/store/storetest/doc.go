// Package storetest is the conformance suite every store.Store backend must
// pass, so that code written against the embedded store behaves the same on
// DynamoDB. A backend's tests call Run with a constructor that returns a fresh,
// empty store; each test gets its own store and so its own data, and tests run
// in parallel. Benchmark measures versioned updates the same way on every
// backend.
//
// The suite states expected outcomes explicitly (it never asks
// store.Condition.Holds what to expect), so a backend that evaluates
// conditions by other means, like DynamoDB's ConditionExpression, is really
// checked against the meaning written in package store.
//
// Secondary-index reads may lag on DynamoDB; the suite waits (briefly, by
// polling) for the index to show what a test wrote before asserting on pages,
// so it stays valid against real AWS.
package storetest
