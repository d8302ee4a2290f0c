package kmsemu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/heddle-io/heddle/internal/secrets"
)

// blobMagic starts every ciphertext blob this server makes.
const blobMagic = "kmsemu1\x00"

// maxRequest bounds a request's body; KMS's own requests are small.
const maxRequest = 1 << 20

// Server is the KMS stand-in: one symmetric key, known by its ARN and
// aliases.
type Server struct {
	arn     string
	aliases map[string]bool // alias/name and alias ARNs
	key     *secrets.LocalKey
}

// New serves the key material key as the KMS key arn, also known by the
// given aliases (alias/heddle-dev, or their ARNs).
func New(arn string, key *secrets.LocalKey, aliases ...string) (*Server, error) {
	if !strings.HasPrefix(arn, "arn:") || !strings.Contains(arn, ":key/") || len(arn) > 255 {
		return nil, fmt.Errorf("kmsemu: %q is not a key ARN (arn:aws:kms:<region>:<account>:key/<id>)", arn)
	}
	s := &Server{arn: arn, aliases: map[string]bool{}, key: key}
	for _, a := range aliases {
		s.aliases[a] = true
	}
	return s, nil
}

// ARN is the key's ARN.
func (s *Server) ARN() string { return s.arn }

// names says whether keyID (an ARN, key id, alias or alias ARN) is this key.
func (s *Server) names(keyID string) bool {
	return keyID == s.arn || keyID == s.arn[strings.LastIndex(s.arn, "/")+1:] || s.aliases[keyID]
}

// ServeHTTP answers one KMS call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "UnknownOperationException", "KMS takes POST /")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
	if err != nil || len(body) > maxRequest {
		writeError(w, http.StatusBadRequest, "SerializationException", "the request body is unreadable or too large")
		return
	}
	op, _ := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "TrentService.")
	var out any
	switch op {
	case "GenerateDataKey":
		out, err = s.generateDataKey(r.Context(), body)
	case "Decrypt":
		out, err = s.decrypt(r.Context(), body)
	default:
		writeError(w, http.StatusBadRequest, "UnknownOperationException",
			fmt.Sprintf("kmsemu serves GenerateDataKey and Decrypt only, not %q", r.Header.Get("X-Amz-Target")))
		return
	}
	var ke *kmsError
	if errors.As(err, &ke) {
		writeError(w, http.StatusBadRequest, ke.code, ke.message)
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "KMSInternalException", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

type kmsError struct{ code, message string }

func (e *kmsError) Error() string { return e.code + ": " + e.message }

func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": message})
}

// decode reads a request, refusing fields it does not know (a call with
// options heddle does not use is not quietly half-served).
func decode(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return &kmsError{"ValidationException", "kmsemu: " + err.Error()}
	}
	return nil
}

func (s *Server) generateDataKey(ctx context.Context, body []byte) (any, error) {
	var in struct {
		KeyId             string
		KeySpec           string
		NumberOfBytes     int
		EncryptionContext map[string]string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if !s.names(in.KeyId) {
		return nil, &kmsError{"NotFoundException", fmt.Sprintf("Key '%s' does not exist", in.KeyId)}
	}
	if in.KeySpec != "AES_256" && in.NumberOfBytes != 32 {
		return nil, &kmsError{"ValidationException", "kmsemu makes 32-byte data keys only (KeySpec AES_256)"}
	}
	plain, wrapped, err := s.key.NewDataKey(ctx, secrets.Binding(in.EncryptionContext))
	if err != nil {
		return nil, fmt.Errorf("kmsemu: making a data key: %w", err)
	}
	return struct {
		CiphertextBlob []byte
		Plaintext      []byte
		KeyId          string
	}{s.blob(wrapped), plain, s.arn}, nil
}

func (s *Server) decrypt(ctx context.Context, body []byte) (any, error) {
	var in struct {
		KeyId               string
		CiphertextBlob      []byte
		EncryptionContext   map[string]string
		EncryptionAlgorithm string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	arn, wrapped, ok := parseBlob(in.CiphertextBlob)
	if !ok {
		return nil, &kmsError{"InvalidCiphertextException", "the ciphertext is not one this KMS made"}
	}
	if arn != s.arn {
		return nil, &kmsError{"NotFoundException", fmt.Sprintf("Key '%s' does not exist", arn)}
	}
	if in.KeyId != "" && !s.names(in.KeyId) {
		return nil, &kmsError{"IncorrectKeyException", "The key ID in the request does not identify the key that encrypted the ciphertext"}
	}
	plain, err := s.key.UnwrapDataKey(ctx, wrapped, secrets.Binding(in.EncryptionContext))
	if err != nil {
		return nil, &kmsError{"InvalidCiphertextException", "the ciphertext or its encryption context is not the one sealed"}
	}
	return struct {
		Plaintext           []byte
		KeyId               string
		EncryptionAlgorithm string
	}{plain, s.arn, "SYMMETRIC_DEFAULT"}, nil
}

// blob is what KMS calls the ciphertext: here the key's ARN and the wrapped key.
func (s *Server) blob(wrapped []byte) []byte {
	out := append([]byte(blobMagic), byte(len(s.arn)))
	out = append(out, s.arn...)
	return append(out, wrapped...)
}

func parseBlob(b []byte) (arn string, wrapped []byte, ok bool) {
	rest, found := bytes.CutPrefix(b, []byte(blobMagic))
	if !found || len(rest) < 1 || len(rest) < 1+int(rest[0]) {
		return "", nil, false
	}
	n := int(rest[0])
	return string(rest[1 : 1+n]), rest[1+n:], true
}
