package webhooks_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/heddle-io/heddle/internal/webhooks"
)

// A receiver checks every delivery before it acts on it: the signature
// over the raw body, with the secret registration printed.
func ExampleVerify() {
	const secret = "whsec_example-secret"
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable", http.StatusBadRequest)
			return
		}
		if err := webhooks.Verify(secret, r.Header.Get(webhooks.SignatureHeader), body, time.Now()); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		fmt.Println("accepted", r.Header.Get(webhooks.DeliveryHeader))
		w.WriteHeader(http.StatusNoContent)
	})

	send := func(signWith string, body string) int {
		req := httptest.NewRequest(http.MethodPost, "/heddle", strings.NewReader(body))
		req.Header.Set(webhooks.DeliveryHeader, "wh-1/00000000000000000001-00000000")
		req.Header.Set(webhooks.SignatureHeader, webhooks.Sign(signWith, time.Now(), []byte(body)))
		rec := httptest.NewRecorder()
		receiver.ServeHTTP(rec, req)
		return rec.Code
	}
	fmt.Println(send(secret, `{"event":{"type":"cluster.status"}}`))
	fmt.Println(send("whsec_guessed", `{"event":{"type":"cluster.status"}}`))
	// Output:
	// accepted wh-1/00000000000000000001-00000000
	// 204
	// 401
}
