// Package dynamotest gives a test a DynamoDB table of its own on DynamoDB
// Local (scripts/dynamodb-local.sh), so no test shares items with another
// and none leaves a table behind: tables left in the emulator grow it for
// every later run on the machine.
//
//	s := dynamotest.Store(t, "ratelimit") // a *dynamostore.Store over a fresh table
//
// Without HEDDLE_DYNAMODB_ENDPOINT the test is skipped, except with CI=true,
// where a DynamoDB backend that silently went untested would be a failure.
// The table's name is the prefix and 16 random hex digits, so parallel
// tests and helpers running at once never meet; it is dropped in
// t.Cleanup, which runs whether the test passed, failed or was stopped by
// t.Fatal.
//
// Import cycles: this package imports internal/store/dynamostore, so the
// tests inside package dynamostore (expr_test.go) cannot use it, while its
// external tests (package dynamostore_test, which also run the conformance
// suite of internal/store/storetest) can and do. This package imports
// nothing from storetest, and storetest nothing from here: the conformance
// suite stays independent of any backend.
package dynamotest
