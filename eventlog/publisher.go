package eventlog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

const (
	// MessageBytes is about the most a message holds: a request's events for one
	// partition are cut into messages of this size (one event alone may be larger),
	// small enough that the node's fsyncs of concurrent requests' messages group well.
	MessageBytes = 256 << 10
	// publishTimeout is how long one publish waits for its acknowledgement before the
	// Publisher sends it again, with the same Nats-Msg-Id, which the stream stores once.
	publishTimeout = 2 * time.Second
	// submitDeadline is how long a request's publishing may take in all, re-sends
	// included; past it the edge answers 503 and the SDK retries later.
	submitDeadline = 5 * time.Second
	// maxPendingPublishes bounds the messages awaiting acknowledgement, all requests
	// together; a publish past it waits (nats.go's stall), then fails as overloaded.
	maxPendingPublishes = 4096
)

var (
	// ErrFull means the log holds as much as its bounds allow (Config.MaxBytes, the
	// warehouse behind): the edge answers 503 with Retry-After, as when the Writer is
	// overloaded, and acknowledges nothing it could not store.
	ErrFull = fmt.Errorf("the event log is full: %w", warehouse.ErrOverloaded)
	// ErrUnavailable means a message was not acknowledged within the request's
	// deadline.
	ErrUnavailable = fmt.Errorf("the event log did not acknowledge in time: %w", warehouse.ErrOverloaded)

	publishedMessagesTotal = metrics.NewCounter(`hedge_log_published_messages_total`)
	publishResendsTotal    = metrics.NewCounter(`hedge_log_publish_resends_total`)
	logFullTotal           = metrics.NewCounter(`hedge_log_full_total`)
)

// Publisher puts requests' events into the log; it is the edge's hand-off when the
// log is on. Submit is safe for concurrent use.
type Publisher struct {
	node *Node
	pool sync.Pool // *publishing
}

// NewPublisher returns a Publisher into node's streams.
func NewPublisher(node *Node) *Publisher {
	return &Publisher{node: node, pool: sync.Pool{New: func() any { return new(publishing) }}}
}

// publishing is one Submit's scratch, pooled: the events regrouped by partition, the
// messages' bytes back to back, and the messages in flight.
type publishing struct {
	events  []warehouse.Event
	parts   []int32 // each event's partition, in the batch's order
	counts  []int32 // events per partition, then each partition's start in events
	data    []byte
	msgs    []outgoing
	futures []jetstream.PubAckFuture
}

// outgoing is one message: its subject, id and bytes (data[start:end]).
type outgoing struct {
	subject    string
	id         string
	start, end int
}

// Submit publishes the batches' events and warnings and returns once the log has
// acknowledged every message, each fsynced: then the events are durable and will
// reach the warehouse exactly once. Duplicates stays 0: the warehouse, not the log,
// knows which uuids it stored. The batches are not kept.
func (p *Publisher) Submit(batches ...*warehouse.Batch) error {
	w := p.pool.Get().(*publishing)
	defer func() {
		clear(w.events)
		clear(w.msgs)
		clear(w.futures)
		w.events, w.msgs, w.futures, w.data = w.events[:0], w.msgs[:0], w.futures[:0], w.data[:0]
		p.pool.Put(w)
	}()
	request := nuid.Next()
	for _, b := range batches {
		if len(b.Events) == 0 && len(b.Warnings) == 0 {
			continue
		}
		p.encode(w, request, b)
	}
	if len(w.msgs) == 0 {
		return nil
	}
	return p.publish(w)
}

// encode appends b's messages to w: its events grouped by partition in their order
// (a counting sort, no map), each partition's cut at MessageBytes; the warnings go
// with the first message.
func (p *Publisher) encode(w *publishing, request string, b *warehouse.Batch) {
	n := p.node.Partitions()
	w.parts = w.parts[:0]
	w.counts = append(w.counts[:0], make([]int32, n+1)...)
	for i := range b.Events {
		part := int32(Partition(b.Events[i].TeamID, b.Events[i].DistinctID, n))
		w.parts = append(w.parts, part)
		w.counts[part+1]++
	}
	for i := 1; i <= n; i++ {
		w.counts[i] += w.counts[i-1]
	}
	base := len(w.events)
	w.events = append(w.events, b.Events...) // sized; overwritten in partition order below
	next := w.counts[:n]
	for i := range b.Events {
		part := w.parts[i]
		w.events[base+int(next[part])] = b.Events[i]
		next[part]++
	}
	// next[part] is now the end of each partition's run; its start is the previous end.
	warnings := b.Warnings
	start := int32(0)
	for part := range n {
		end := next[part]
		for from := start; from < end; {
			to, size := from, 0
			for to < end && (to == from || size+eventSize(&w.events[base+int(to)]) <= MessageBytes) {
				size += eventSize(&w.events[base+int(to)])
				to++
			}
			w.add(request, part, b.Lane, w.events[base+int(from):base+int(to)], warnings)
			warnings = nil
			from = to
		}
		start = end
	}
	if warnings != nil { // a batch of warnings only
		w.add(request, Partition(warnings[0].TeamID, "", n), b.Lane, nil, warnings)
	}
}

func (w *publishing) add(request string, part int, lane warehouse.Lane, events []warehouse.Event, warnings []warehouse.Warning) {
	start := len(w.data)
	w.data = AppendMessage(w.data, lane, events, warnings)
	chunk := len(w.msgs)
	w.msgs = append(w.msgs, outgoing{
		subject: subject(part, lane),
		// The id is the request's, partition's, lane's and chunk's, so that a re-send
		// of this message is recognised by the stream and no other message shares it.
		id:    request + "." + strconv.Itoa(part) + "." + strconv.Itoa(int(lane)) + "." + strconv.Itoa(chunk),
		start: start, end: len(w.data),
	})
}

// eventSize is about the bytes an event takes in a message.
func eventSize(e *warehouse.Event) int {
	return 48 + len(e.Name) + len(e.DistinctID) + len(e.Properties) + len(e.Set) + len(e.SetOnce) + len(e.Unset) +
		len(e.AnonDistinctID) + len(e.Alias) + len(e.Groups) + len(e.GroupType) + len(e.GroupKey) + len(e.GroupSet)
}

// publish sends w's messages at once and waits for every acknowledgement, sending
// again, with the same ids, those not acknowledged in publishTimeout, until
// submitDeadline.
func (p *Publisher) publish(w *publishing) error {
	deadline := time.Now().Add(submitDeadline)
	pending := make([]int, len(w.msgs))
	for i := range pending {
		pending[i] = i
	}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			publishResendsTotal.Add(len(pending))
		}
		w.futures = w.futures[:0]
		for _, i := range pending {
			m := &w.msgs[i]
			msg := &nats.Msg{Subject: m.subject, Data: w.data[m.start:m.end], Header: nats.Header{jetstream.MsgIDHeader: []string{m.id}}}
			f, err := p.node.js.PublishMsgAsync(msg)
			if err != nil {
				f = nil // sent again on the next attempt
			}
			w.futures = append(w.futures, f)
		}
		failed := pending[:0]
		var full bool
		for k, f := range w.futures {
			if f == nil {
				failed = append(failed, pending[k])
				continue
			}
			select {
			case <-f.Ok():
				publishedMessagesTotal.Inc()
			case err := <-f.Err():
				if isFull(err) {
					full = true
				}
				failed = append(failed, pending[k])
			}
		}
		if full {
			logFullTotal.Inc()
			return ErrFull
		}
		if len(failed) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return ErrUnavailable
		}
		pending = failed
		time.Sleep(50 * time.Millisecond)
	}
}

// isFull reports whether a publish failed because its partition holds as much as
// its bounds allow.
func isFull(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeStoreFailed &&
		strings.HasPrefix(apiErr.Description, "maximum ")
}

// jsErrCodeStoreFailed is JetStream's error code for a message a stream did not
// store; its description says why ("maximum bytes exceeded" for a full partition).
const jsErrCodeStoreFailed jetstream.ErrorCode = 10077
