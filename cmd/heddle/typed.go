package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// printValue prints a typed answer of the client: as JSON with -o json
// (the API's own encoding of the same struct), otherwise with print.
func printValue[T any](a *app, w io.Writer, v *T, print func(io.Writer, *T)) error {
	if a.jsonOut() {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding the answer as JSON: %w", err)
		}
		return printJSON(w, raw)
	}
	print(w, v)
	return nil
}
