package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Headers of a delivery.
const (
	SignatureHeader = "Heddle-Signature"
	DeliveryHeader  = "Heddle-Delivery"
	EventHeader     = "Heddle-Event"
)

// Tolerance is how far a signature's timestamp may be from the receiver's
// clock: older ones are taken for replays.
const Tolerance = 5 * time.Minute

// Sign returns the Heddle-Signature value of body sent at t.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Errors Verify returns.
var (
	ErrMalformedSignature = errors.New("webhooks: the signature header is malformed")
	ErrBadSignature       = errors.New("webhooks: the signature does not match the body")
	ErrStaleSignature     = errors.New("webhooks: the signature's timestamp is too far from now")
)

// Verify checks a delivery as its receiver: header is the Heddle-Signature
// value, body the raw request body, now the receiver's clock.
func Verify(secret, header string, body []byte, now time.Time) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrMalformedSignature
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return ErrMalformedSignature
	}
	if !hmac.Equal([]byte(sig), []byte(mac(secret, ts, body))) {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return fmt.Errorf("%w (%s)", ErrStaleSignature, d.Round(time.Second))
	}
	return nil
}
