package esmemu

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/heddle-io/heddle/internal/lambdaemu"
)

// Lambda's bounds on a mapping from SQS.
const (
	maxBatchFIFO     = 10
	maxBatchStandard = 10000
	minConcurrency   = 2
	maxConcurrency   = 1000
	maxWindowSeconds = 300
	// receiveWait is each receive's long poll; shorter than SQS's 20 s so
	// that a deleted mapping's pollers stop soon.
	receiveWait = 5
)

// Function is a function the mappings can invoke (*lambdaemu.Pool).
type Function interface {
	Invoke(ctx context.Context, payload []byte) (lambdaemu.Result, error)
	Function() lambdaemu.Function
}

// Config configures New.
type Config struct {
	// Functions are the functions, found by name or ARN.
	Functions []Function
	// SQS reads and deletes the queues' messages (fauxqs).
	SQS    *sqs.Client
	Logger *slog.Logger
}

// Service is the emulated Lambda service's mappings and Invoke.
type Service struct {
	sqs       *sqs.Client
	functions map[string]Function // by name and by ARN
	log       *slog.Logger
	ctx       context.Context // ends at Close: every poller stops
	cancel    context.CancelFunc

	mu       sync.Mutex
	mappings map[string]*mapping // by UUID
	pollers  sync.WaitGroup
}

// mapping is one event source mapping and its pollers.
type mapping struct {
	conf     Configuration
	queueURL string
	function Function
	fifo     bool
	stop     context.CancelFunc // ends this configuration's pollers
}

// Configuration is Lambda's EventSourceMappingConfiguration, as the API
// answers it.
type Configuration struct {
	UUID                           string
	EventSourceArn                 string
	FunctionArn                    string
	BatchSize                      int32
	MaximumBatchingWindowInSeconds int32
	FunctionResponseTypes          []string `json:",omitempty"`
	ScalingConfig                  *ScalingConfig
	State                          string
	StateTransitionReason          string
	LastModified                   float64
}

// ScalingConfig is the mapping's concurrency cap.
type ScalingConfig struct {
	MaximumConcurrency *int32 `json:",omitempty"`
}

// New returns the service; Close stops its pollers.
func New(cfg Config) (*Service, error) {
	if cfg.SQS == nil {
		return nil, errors.New("esmemu: an SQS client is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{sqs: cfg.SQS, functions: map[string]Function{}, log: log, mappings: map[string]*mapping{}}
	for _, f := range cfg.Functions {
		s.functions[f.Function().Name] = f
		s.functions[f.Function().ARN()] = f
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Close stops every mapping's pollers and waits for their invocations.
func (s *Service) Close() {
	s.cancel()
	s.pollers.Wait()
}

// Mappings returns the mappings' configurations.
func (s *Service) Mappings() []Configuration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Configuration, 0, len(s.mappings))
	for _, m := range s.mappings {
		out = append(out, m.conf)
	}
	slices.SortFunc(out, func(a, b Configuration) int { return strings.Compare(a.UUID, b.UUID) })
	return out
}

// Handler serves the Lambda API's mapping operations and Invoke.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	// The SDK sends the collection's path with and without the slash.
	for _, p := range []string{"/2015-03-31/event-source-mappings", "/2015-03-31/event-source-mappings/{$}"} {
		mux.HandleFunc("POST "+p, s.create)
		mux.HandleFunc("GET "+p, s.list)
	}
	mux.HandleFunc("GET /2015-03-31/event-source-mappings/{uuid}", s.get)
	mux.HandleFunc("PUT /2015-03-31/event-source-mappings/{uuid}", s.update)
	mux.HandleFunc("DELETE /2015-03-31/event-source-mappings/{uuid}", s.delete)
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", s.invoke)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "UnknownOperationException", "the emulated Lambda serves event source mappings and Invoke only, not "+r.Method+" "+r.URL.Path)
	})
	return mux
}

func apiError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": message})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// request is the part of Create and Update's input this service honours.
type request struct {
	EventSourceArn                 *string
	FunctionName                   *string
	BatchSize                      *int32
	MaximumBatchingWindowInSeconds *int32
	Enabled                        *bool
	FunctionResponseTypes          []string
	ScalingConfig                  *ScalingConfig
}

// decodeRequest reads a mapping request; fields it does not honour are
// refused, so that nothing asked for is silently ignored.
func decodeRequest(w http.ResponseWriter, r *http.Request) (request, bool) {
	var in request
	d := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	d.DisallowUnknownFields()
	if err := d.Decode(&in); err != nil {
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", "esmemu: "+err.Error())
		return in, false
	}
	for _, t := range in.FunctionResponseTypes {
		if t != "ReportBatchItemFailures" {
			apiError(w, http.StatusBadRequest, "InvalidParameterValueException", "FunctionResponseTypes takes ReportBatchItemFailures only")
			return in, false
		}
	}
	return in, true
}

func (s *Service) create(w http.ResponseWriter, r *http.Request) {
	in, ok := decodeRequest(w, r)
	if !ok {
		return
	}
	if in.EventSourceArn == nil || in.FunctionName == nil {
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", "EventSourceArn and FunctionName are required")
		return
	}
	fn, found := s.functions[*in.FunctionName]
	if !found {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+*in.FunctionName)
		return
	}
	queueURL, visibility, fifo, err := s.queue(r.Context(), *in.EventSourceArn)
	if err != nil {
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", err.Error())
		return
	}
	if timeout := fn.Function().Timeout; timeout > visibility {
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", fmt.Sprintf(
			"Queue visibility timeout: %d seconds is less than Function timeout: %d seconds", int(visibility.Seconds()), int(timeout.Seconds())))
		return
	}
	conf := Configuration{UUID: newUUID(), EventSourceArn: *in.EventSourceArn, FunctionArn: fn.Function().ARN(),
		BatchSize: 10, StateTransitionReason: "USER_INITIATED"}
	enabled := in.Enabled == nil || *in.Enabled
	if msg := apply(&conf, in, fifo); msg != "" {
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", msg)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.mappings {
		if m.conf.EventSourceArn == conf.EventSourceArn && m.conf.FunctionArn == conf.FunctionArn {
			apiError(w, http.StatusConflict, "ResourceConflictException", fmt.Sprintf(
				"An event source mapping with SQS arn (\" %s \") and function (\" %s \") already exists. Please update or delete the existing mapping with UUID %s",
				conf.EventSourceArn, fn.Function().Name, m.conf.UUID))
			return
		}
	}
	m := &mapping{conf: conf, queueURL: queueURL, function: fn, fifo: fifo}
	s.mappings[conf.UUID] = m
	answer := m.conf
	answer.State = "Creating"
	s.setEnabled(m, enabled)
	writeJSON(w, http.StatusAccepted, answer)
}

// apply sets in's settings on conf; a message says what Lambda would refuse.
func apply(conf *Configuration, in request, fifo bool) string {
	if in.BatchSize != nil {
		conf.BatchSize = *in.BatchSize
	}
	if in.MaximumBatchingWindowInSeconds != nil {
		conf.MaximumBatchingWindowInSeconds = *in.MaximumBatchingWindowInSeconds
	}
	if in.FunctionResponseTypes != nil {
		conf.FunctionResponseTypes = in.FunctionResponseTypes
	}
	if in.ScalingConfig != nil {
		conf.ScalingConfig = in.ScalingConfig
	}
	maxBatch := int32(maxBatchStandard)
	if fifo {
		maxBatch = maxBatchFIFO
	}
	switch {
	case conf.BatchSize < 1 || conf.BatchSize > maxBatch:
		return fmt.Sprintf("BatchSize must be between 1 and %d for this queue", maxBatch)
	case fifo && conf.MaximumBatchingWindowInSeconds != 0:
		return "Batching window is not supported for FIFO queues"
	case conf.MaximumBatchingWindowInSeconds < 0 || conf.MaximumBatchingWindowInSeconds > maxWindowSeconds:
		return "MaximumBatchingWindowInSeconds must be between 0 and 300"
	case !fifo && conf.BatchSize > 10 && conf.MaximumBatchingWindowInSeconds == 0:
		return "Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10"
	}
	if c := conf.ScalingConfig; c != nil && c.MaximumConcurrency != nil && (*c.MaximumConcurrency < minConcurrency || *c.MaximumConcurrency > maxConcurrency) {
		return "ScalingConfig.MaximumConcurrency must be between 2 and 1000"
	}
	return ""
}

// queue reads an SQS ARN's queue: its URL, visibility timeout and kind.
func (s *Service) queue(ctx context.Context, arn string) (string, time.Duration, bool, error) {
	parts := strings.Split(arn, ":")
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sqs" {
		return "", 0, false, fmt.Errorf("%q is not an SQS queue ARN", arn)
	}
	name := parts[5]
	got, err := s.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		return "", 0, false, fmt.Errorf("the queue %s cannot be read: %v", arn, err)
	}
	attrs, err := s.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: got.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameVisibilityTimeout}})
	if err != nil {
		return "", 0, false, fmt.Errorf("the queue %s's attributes cannot be read: %v", arn, err)
	}
	secs, err := strconv.Atoi(attrs.Attributes[string(sqstypes.QueueAttributeNameVisibilityTimeout)])
	if err != nil {
		return "", 0, false, fmt.Errorf("the queue %s has no visibility timeout: %v", arn, err)
	}
	return *got.QueueUrl, time.Duration(secs) * time.Second, strings.HasSuffix(name, ".fifo"), nil
}

// setEnabled starts or stops m's pollers; s.mu is held.
func (s *Service) setEnabled(m *mapping, enabled bool) {
	if m.stop != nil {
		m.stop()
		m.stop = nil
	}
	m.conf.LastModified = float64(time.Now().UnixMilli()) / 1000
	if !enabled {
		m.conf.State = "Disabled"
		return
	}
	m.conf.State = "Enabled"
	ctx, cancel := context.WithCancel(s.ctx)
	m.stop = cancel
	n := maxConcurrency
	if c := m.conf.ScalingConfig; c != nil && c.MaximumConcurrency != nil {
		n = int(*c.MaximumConcurrency)
	}
	// Lambda starts with a few pollers and scales up with the backlog; a
	// poller here costs a long poll, so start as many as the cap allows,
	// up to a bound that keeps an idle local deployment quiet.
	n = min(n, 64)
	p := &poller{s: s, conf: m.conf, queueURL: m.queueURL, function: m.function, fifo: m.fifo}
	for range n {
		s.pollers.Go(func() { p.run(ctx) })
	}
}

func (s *Service) find(w http.ResponseWriter, r *http.Request) *mapping {
	m := s.mappings[r.PathValue("uuid")]
	if m == nil {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", "The resource you requested does not exist.")
	}
	return m
}

func (s *Service) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.find(w, r); m != nil {
		writeJSON(w, http.StatusOK, m.conf)
	}
}

func (s *Service) update(w http.ResponseWriter, r *http.Request) {
	in, ok := decodeRequest(w, r)
	if !ok {
		return
	}
	if in.EventSourceArn != nil {
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", "the event source of a mapping cannot change")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.find(w, r)
	if m == nil {
		return
	}
	if in.FunctionName != nil {
		fn, found := s.functions[*in.FunctionName]
		if !found {
			apiError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+*in.FunctionName)
			return
		}
		m.function, m.conf.FunctionArn = fn, fn.Function().ARN()
	}
	conf := m.conf
	if msg := apply(&conf, in, m.fifo); msg != "" {
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", msg)
		return
	}
	m.conf = conf
	enabled := m.conf.State == "Enabled"
	if in.Enabled != nil {
		enabled = *in.Enabled
	}
	s.setEnabled(m, enabled)
	answer := m.conf
	answer.State = "Updating"
	writeJSON(w, http.StatusAccepted, answer)
}

func (s *Service) delete(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.find(w, r)
	if m == nil {
		return
	}
	if m.stop != nil {
		m.stop()
	}
	delete(s.mappings, m.conf.UUID)
	answer := m.conf
	answer.State = "Deleting"
	writeJSON(w, http.StatusAccepted, answer)
}

func (s *Service) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	source, function := q.Get("EventSourceArn"), q.Get("FunctionName")
	var functionARN string
	if function != "" {
		fn, found := s.functions[function]
		if !found {
			apiError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+function)
			return
		}
		functionARN = fn.Function().ARN()
	}
	maxItems := 100
	if v, err := strconv.Atoi(q.Get("MaxItems")); err == nil && v > 0 && v < maxItems {
		maxItems = v
	}
	var out []Configuration
	for _, c := range s.Mappings() {
		if (source == "" || c.EventSourceArn == source) && (functionARN == "" || c.FunctionArn == functionARN) && c.UUID > q.Get("Marker") {
			out = append(out, c)
		}
	}
	answer := struct {
		EventSourceMappings []Configuration
		NextMarker          *string `json:",omitempty"`
	}{EventSourceMappings: out}
	if len(out) > maxItems {
		answer.EventSourceMappings = out[:maxItems]
		answer.NextMarker = aws.String(out[maxItems-1].UUID)
	}
	writeJSON(w, http.StatusOK, answer)
}

// invoke is Lambda's Invoke (RequestResponse only): the answer is the
// function's, X-Amz-Function-Error says it failed.
func (s *Service) invoke(w http.ResponseWriter, r *http.Request) {
	fn, found := s.functions[r.PathValue("name")]
	if !found {
		apiError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+r.PathValue("name"))
		return
	}
	if t := r.Header.Get("X-Amz-Invocation-Type"); t != "" && t != "RequestResponse" {
		apiError(w, http.StatusBadRequest, "InvalidParameterValueException", "esmemu invokes RequestResponse only, not "+t)
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, lambdaemu.MaxResponse+1))
	if err != nil || len(payload) > lambdaemu.MaxResponse {
		apiError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "Request must be smaller than 6291456 bytes for the InvokeFunction operation")
		return
	}
	res, err := fn.Invoke(r.Context(), payload)
	if errors.Is(err, lambdaemu.ErrThrottled) {
		apiError(w, http.StatusTooManyRequests, "TooManyRequestsException", "Rate Exceeded.")
		return
	}
	if err != nil {
		apiError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	}
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	if res.FunctionError != "" {
		w.Header().Set("X-Amz-Function-Error", res.FunctionError)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(res.Payload)
}

func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
