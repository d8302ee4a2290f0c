package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/heddle-io/heddle/client"
)

// answer holds the body of the client's latest typed answer, so -o json
// prints what the API said, byte for byte (client.KeepAnswer).
type answer struct{ raw []byte }

// keep returns ctx under which the client's typed calls fill ans.
func (ans *answer) keep(ctx context.Context) context.Context { return client.KeepAnswer(ctx, &ans.raw) }

// printValue prints a typed answer of the client: with -o json the API's
// answer as it came (ans, when it holds one) or else v encoded as the API
// encodes it; otherwise with print.
func printValue[T any](a *app, w io.Writer, ans *answer, v *T, print func(io.Writer, *T)) error {
	if a.jsonOut() {
		if ans != nil && ans.raw != nil {
			return a.printRaw(w, ans.raw)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding the answer as JSON: %w", err)
		}
		return a.printRaw(w, raw)
	}
	print(w, v)
	return nil
}
