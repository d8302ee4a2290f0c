// Package client is heddle's public Go client: typed calls on the /v1 API
// with the API's own request and answer types, listings as iterators that
// follow the cursors, jobs waited on with backoff, and errors (*Error) that
// expose the error envelope's code and field problems. The heddle CLI is
// built on it.
//
// A program that creates a cluster, waits for its job and lists the nodes:
//
//	package main
//
//	import (
//		"context"
//		"errors"
//		"fmt"
//		"log"
//		"os"
//
//		"github.com/heddle-io/heddle/client"
//	)
//
//	func main() {
//		ctx := context.Background()
//		c := client.New(os.Getenv("HEDDLE_ENDPOINT"), os.Getenv("HEDDLE_KEY"))
//		res, err := c.CreateCluster(ctx, client.CreateRequest{Name: "web1", Template: "web", Size: 3}, client.Mutate{})
//		var apiErr *client.Error
//		if errors.As(err, &apiErr) {
//			for _, p := range apiErr.Details {
//				fmt.Fprintf(os.Stderr, "%s: %s (%s)\n", p.Field, p.Message, p.Code)
//			}
//			log.Fatalf("%s: %v", apiErr.Code, err)
//		} else if err != nil {
//			log.Fatal(err)
//		}
//		job, err := c.WaitJob(ctx, res.Cluster.ID, res.Job.ID, client.WaitOptions{})
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println("create", job.Status)
//		for n, err := range c.Nodes(ctx, res.Cluster.ID) {
//			if err != nil {
//				log.Fatal(err)
//			}
//			fmt.Println(n.ID, n.Hostname, n.Status)
//		}
//	}
//
// Requests that create or start something (a cluster create or delete, the
// operations that start a job, a lease extension, a job's retry, catalog
// and tenant imports) carry an Idempotency-Key, random unless
// WithIdempotencyKey chose it, and are sent again with the same key after a
// connection error, a 5xx, a 429 or a 409 idempotency_in_flight (Retries,
// RetryBackoff): heddle carries such a request out once however many
// attempts reach it, and answers the later ones with the first one's answer.
//
// A program that waits out a pause before a resend (a rate limit's
// Retry-After can be most of a minute) can say so: Pause is told what each
// pause waits for and how long, and waits in the client's place.
//
// People name clusters by name; ResolveCluster turns a name or an id into
// the cluster (GET /v1/clusters?name=, an id winning over a name spelled
// the same), and LatestJob finds a cluster's newest job.
//
// Routes without a method here are reached with Send, Do, JSON, Each and
// GetPage.
package client
