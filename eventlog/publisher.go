package eventlog

import (
	"errors"
	"fmt"
	"slices"
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
//
// Group publish. The log fsyncs each message it stores, so a message per request
// would cap capture at the disk's fsync rate (measured: 6,300 single-event requests/s
// over 8 partitions, against 14,400 through the Writer's group commit). So requests'
// parts for one subject (a frame each, codec.go) are joined into one message while the
// subject's previous message is in flight, as the Writer joins requests into one
// commit: each subject has one message in flight at a time, and a message holds up to
// MessageBytes of frames, past which the next one starts.
type Publisher struct {
	node     *Node
	subjects []*subjectQueue // by position(partition, lane)
	pool     sync.Pool       // *publishing
	closed   chan struct{}
	flushers sync.WaitGroup
}

// NewPublisher returns a Publisher into node's streams, which publishes until Close.
func NewPublisher(node *Node) *Publisher {
	p := &Publisher{node: node, pool: sync.Pool{New: func() any { return new(publishing) }}, closed: make(chan struct{})}
	for part := range node.Partitions() {
		for lane := range warehouse.Lane(laneCount) {
			q := &subjectQueue{subject: subject(part, lane), wake: make(chan struct{}, 1)}
			p.subjects = append(p.subjects, q)
			p.flushers.Add(1)
			go func() {
				defer p.flushers.Done()
				p.flush(q)
			}()
		}
	}
	return p
}

// Close stops publishing; a Submit after it, or waiting on a message that was not
// sent, answers warehouse.ErrClosed. The edge stops before it.
func (p *Publisher) Close() {
	close(p.closed)
	p.flushers.Wait()
}

// subjectQueue is one subject's messages in the making: the first is sent next (or is
// in flight), and frames join the last until it holds MessageBytes.
type subjectQueue struct {
	subject string
	wake    chan struct{} // a message is waiting to be sent
	mu      sync.Mutex
	waiting []*message
}

// message is one message of joined frames and what its requests wait on.
type message struct {
	data []byte        // messageVersion, then the frames
	sent chan struct{} // closed when err is final
	err  error
}

// publishing is one Submit's scratch, pooled: the events regrouped by partition, its
// frames' bytes back to back, and the messages they joined.
type publishing struct {
	events []warehouse.Event
	parts  []int32 // each event's partition, in the batch's order
	counts []int32 // events per partition, then each partition's end in events
	data   []byte
	joined []*message
}

// Submit publishes the batches' events and warnings and returns once the log has
// acknowledged every message holding them, each fsynced: then the events are durable
// and will reach the warehouse exactly once. Duplicates stays 0: the warehouse, not
// the log, knows which uuids it stored. The batches are not kept.
func (p *Publisher) Submit(batches ...*warehouse.Batch) error {
	w := p.pool.Get().(*publishing)
	defer func() {
		clear(w.events)
		clear(w.joined)
		w.events, w.joined, w.data = w.events[:0], w.joined[:0], w.data[:0]
		p.pool.Put(w)
	}()
	for _, b := range batches {
		if len(b.Events) == 0 && len(b.Warnings) == 0 {
			continue
		}
		p.encode(w, b)
	}
	var err error
	for _, m := range w.joined {
		select {
		case <-m.sent:
		case <-p.closed:
			return warehouse.ErrClosed
		}
		if m.err != nil && (err == nil || errors.Is(m.err, ErrFull)) {
			err = m.err
		}
	}
	return err
}

// encode joins b's frames to their subjects' messages: its events grouped by
// partition in their order (a counting sort, no map), each partition's cut at
// MessageBytes; the warnings go with the first frame.
func (p *Publisher) encode(w *publishing, b *warehouse.Batch) {
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
	w.events = append(w.events[:0], b.Events...) // sized; overwritten in partition order below
	next := w.counts[:n]
	for i := range b.Events {
		part := w.parts[i]
		w.events[next[part]] = b.Events[i]
		next[part]++
	}
	// next[part] is now the end of each partition's run; its start is the previous end.
	warnings := b.Warnings
	start := int32(0)
	for part := range n {
		end := next[part]
		for from := start; from < end; {
			to, size := from, 0
			for to < end && (to == from || size+eventSize(&w.events[to]) <= MessageBytes) {
				size += eventSize(&w.events[to])
				to++
			}
			p.join(w, part, b.Lane, w.events[from:to], warnings)
			warnings = nil
			from = to
		}
		start = end
	}
	if warnings != nil { // a batch of warnings only
		p.join(w, Partition(warnings[0].TeamID, "", n), b.Lane, nil, warnings)
	}
}

// join encodes a frame and adds it to the last message waiting on its subject, or to
// a new one when that is full or none waits, and wakes the subject's flusher.
func (p *Publisher) join(w *publishing, part int, lane warehouse.Lane, events []warehouse.Event, warnings []warehouse.Warning) {
	w.data = appendFrame(w.data[:0], lane, events, warnings)
	q := p.subjects[position(part, lane)]
	q.mu.Lock()
	var m *message
	if k := len(q.waiting); k > 0 && len(q.waiting[k-1].data)+len(w.data) <= MessageBytes {
		m = q.waiting[k-1]
	} else {
		m = &message{data: append(make([]byte, 0, 1+len(w.data)), messageVersion), sent: make(chan struct{})}
		q.waiting = append(q.waiting, m)
	}
	m.data = append(m.data, w.data...)
	q.mu.Unlock()
	if !slices.Contains(w.joined, m) {
		w.joined = append(w.joined, m)
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// flush sends q's messages one at a time, until Close: the first waiting leaves the
// queue as it is sent, so frames join the next one meanwhile.
func (p *Publisher) flush(q *subjectQueue) {
	var compressed []byte
	for {
		select {
		case <-q.wake:
		case <-p.closed:
			return
		}
		for {
			q.mu.Lock()
			if len(q.waiting) == 0 {
				q.mu.Unlock()
				break
			}
			m := q.waiting[0]
			q.waiting[0] = nil
			q.waiting = q.waiting[1:]
			q.mu.Unlock()
			// The compressed bytes are reused once publish returns: nats.go has copied
			// them into its buffer by then, re-sends included.
			compressed = CompressMessage(compressed[:0], m.data)
			m.err = p.publish(q.subject, compressed)
			close(m.sent)
		}
	}
}

// eventSize is about the bytes an event takes in a message.
func eventSize(e *warehouse.Event) int {
	return 48 + len(e.Name) + len(e.DistinctID) + len(e.Properties) + len(e.Set) + len(e.SetOnce) + len(e.Unset) +
		len(e.AnonDistinctID) + len(e.Alias) + len(e.Groups) + len(e.GroupType) + len(e.GroupKey) + len(e.GroupSet)
}

// publish sends a message and waits for its acknowledgement, sending it again, with
// the same Nats-Msg-Id, which the stream stores once, when none comes within
// publishTimeout, until submitDeadline.
func (p *Publisher) publish(subject string, data []byte) error {
	deadline := time.Now().Add(submitDeadline)
	id := nuid.Next()
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			publishResendsTotal.Inc()
			time.Sleep(50 * time.Millisecond)
		}
		msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{jetstream.MsgIDHeader: []string{id}}}
		f, err := p.node.js.PublishMsgAsync(msg)
		if err == nil {
			select {
			case <-f.Ok():
				publishedMessagesTotal.Inc()
				return nil
			case err = <-f.Err():
			case <-p.closed:
				return warehouse.ErrClosed
			}
		}
		if isFull(err) {
			logFullTotal.Inc()
			return ErrFull
		}
		if time.Now().After(deadline) {
			return ErrUnavailable
		}
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
