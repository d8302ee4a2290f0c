// Package localserver assembles heddle as one local process on the embedded
// store: the API on a plain HTTP listener over a bbolt file in a data
// directory. It is what `heddle server` runs and what end-to-end tests start.
// Later stages add the in-process queue, workers and the janitor ticker here;
// the AWS Lambdas assemble the same services over DynamoDB instead.
package localserver
