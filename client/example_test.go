package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/heddle-io/heddle/client"
)

// Create a cluster, wait for its job with backoff, list its nodes, and
// read a refusal by field. (Compiled, not run: it needs a heddle server;
// TestClientDrivesAClusterThroughItsLife runs the same calls.)
func Example() {
	ctx := context.Background()
	c := client.New(os.Getenv("HEDDLE_ENDPOINT"), os.Getenv("HEDDLE_KEY"))
	res, err := c.CreateCluster(ctx, client.CreateRequest{Name: "web1", Template: "web", Size: 3}, client.Mutate{})
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		for _, p := range apiErr.Details {
			fmt.Fprintf(os.Stderr, "%s: %s (%s)\n", p.Field, p.Message, p.Code)
		}
		log.Fatalf("%s: %v", apiErr.Code, err)
	} else if err != nil {
		log.Fatal(err)
	}
	job, err := c.WaitJob(ctx, res.Cluster.ID, res.Job.ID, client.WaitOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("create", job.Status)
	for n, err := range c.Nodes(ctx, res.Cluster.ID) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(n.ID, n.Hostname, n.Status)
	}
}
