// Package catalogtest builds large, realistic catalog documents for tests and
// benchmarks: the catalog's own, the API's end-to-end test of a 500-entity
// POST /v1/catalog and the CLI's `heddle apply -f` of the same document.
//
// It depends on the domain types only, so that the catalog package's own
// tests can use it without an import cycle.
package catalogtest
