package sqsqueue_test

import (
	"encoding/json"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"

	"github.com/heddle-io/heddle/internal/queue"
	"github.com/heddle-io/heddle/internal/queue/sqsqueue"
)

func TestDeliveryFromRecord(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/fifo-event.json")
	require.NoError(t, err)
	var event events.SQSEvent
	require.NoError(t, json.Unmarshal(raw, &event))

	q := offline(t, "heddle-prod-")
	want := []queue.Delivery{
		{
			Message: queue.Message{TaskID: "acme/c-7/j-3/install:hdfs@n-12", Attempt: 2, Group: "c-7#n-12", Dedup: "j-3#install:hdfs@n-12#2#0"},
			Receipt: "AQEBBX8nesZEXmkhsmZeyIE8iQAMig7qw...", Received: 1, FirstReceived: time.UnixMilli(1573251510774),
		},
		{
			Message: queue.Message{TaskID: "acme/c-7/j-3/configure:hdfs@n-13", Attempt: 1, Group: "c-7#n-13", Dedup: "sha256-is-not-needed-here"},
			Receipt: "AQEBzWwaftRI0KuVm4tP+/7q1rGgNqicHq...", Received: 3, FirstReceived: time.UnixMilli(1573251510774),
		},
	}
	require.Len(t, event.Records, len(want))
	for i, r := range event.Records {
		d, err := sqsqueue.DeliveryFromRecord(r)
		require.NoError(t, err)
		require.Equal(t, want[i], d)
		tenant, err := q.TenantOf(r.EventSourceARN)
		require.NoError(t, err)
		require.Equal(t, "acme", tenant)
	}

	// Without its first receive's time (an emulator that leaves it out,
	// or garbage there), a record is still a delivery, only less informed.
	for _, v := range []string{"", "soon", "-5"} {
		r := event.Records[0]
		r.Attributes = maps.Clone(r.Attributes)
		r.Attributes["ApproximateFirstReceiveTimestamp"] = v
		d, err := sqsqueue.DeliveryFromRecord(r)
		require.NoError(t, err, v)
		require.True(t, d.FirstReceived.IsZero(), v)
	}
}

func TestDeliveryFromRecordRefuses(t *testing.T) {
	t.Parallel()
	good := events.SQSMessage{
		MessageId:     "m-1",
		ReceiptHandle: "r-1",
		Body:          `{"taskId":"t","attempt":1,"dedup":"d"}`,
		Attributes:    map[string]string{"MessageGroupId": "g", "ApproximateReceiveCount": "1"},
	}
	_, err := sqsqueue.DeliveryFromRecord(good)
	require.NoError(t, err, "the baseline record is accepted")

	tests := map[string]func(r *events.SQSMessage){
		"not JSON":           func(r *events.SQSMessage) { r.Body = "hello" },
		"no task id":         func(r *events.SQSMessage) { r.Body = `{"attempt":1,"dedup":"d"}` },
		"no dedup":           func(r *events.SQSMessage) { r.Body = `{"taskId":"t","attempt":1}` },
		"attempt not number": func(r *events.SQSMessage) { r.Body = `{"taskId":"t","attempt":"1","dedup":"d"}` },
		"no group":           func(r *events.SQSMessage) { r.Attributes = map[string]string{"ApproximateReceiveCount": "1"} },
		"no receive count":   func(r *events.SQSMessage) { r.Attributes = map[string]string{"MessageGroupId": "g"} },
		"zero receive count": func(r *events.SQSMessage) {
			r.Attributes = map[string]string{"MessageGroupId": "g", "ApproximateReceiveCount": "0"}
		},
		"no receipt handle": func(r *events.SQSMessage) { r.ReceiptHandle = "" },
		"group with a space": func(r *events.SQSMessage) {
			r.Attributes = map[string]string{"MessageGroupId": "g h", "ApproximateReceiveCount": "1"}
		},
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := good
			r.Attributes = map[string]string{"MessageGroupId": "g", "ApproximateReceiveCount": "1"}
			change(&r)
			_, err := sqsqueue.DeliveryFromRecord(r)
			require.ErrorContains(t, err, "record m-1")
		})
	}
}
