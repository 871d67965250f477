package eventlog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hedge-analytics/hedge/warehouse"
)

const (
	// gatherMessages is the most messages a reader submits to the Writer at once, and
	// the most it holds read ahead: some 4 MB at MessageBytes, for each (partition, lane).
	gatherMessages = 16
	// purgeInterval is how often at most a reader purges what the warehouse applied.
	purgeInterval = time.Second
	// applyAttempts is how many times a message that fails alone is tried before it
	// goes to the dead letters.
	applyAttempts = 3
)

var (
	appliedMessagesTotal = metrics.NewCounter(`hedge_log_applied_messages_total`)
	deadLettersTotal     = metrics.NewCounter(`hedge_log_dead_letters_total`)
)

// Writer is what the Consumer applies messages with: warehouse.Writer, whose Submit
// commits each batch's events together with its Position.
type Writer interface {
	Submit(batches ...*warehouse.Batch) error
}

// Consumer applies the log to the warehouse: a reader per (partition, lane), each
// from the stream sequence after the one the warehouse recorded, in order. It runs
// from StartConsumer to Stop.
type Consumer struct {
	node    *Node
	writer  Writer
	log     *slog.Logger
	cancel  context.CancelFunc
	readers []*reader
	running sync.WaitGroup
	// purgeEvery is how often at most a reader purges (purgeInterval), the first time
	// a purgeEvery after it starts.
	purgeEvery time.Duration
	// behind and appliedAt are per (partition, lane), as of its last apply: the
	// messages after the last one applied, and that one's time in the log (Unix ns).
	behind    []atomic.Int64
	appliedAt []atomic.Int64
}

// StartConsumer starts applying node's partitions with writer, each (partition, lane)
// after positions[position] (warehouse.Warehouse.LogPositions).
func StartConsumer(node *Node, writer Writer, positions map[int]uint64, log *slog.Logger) *Consumer {
	return startConsumer(node, writer, positions, log, purgeInterval)
}

// startConsumer is StartConsumer purging at most once a purgeEvery.
func startConsumer(node *Node, writer Writer, positions map[int]uint64, log *slog.Logger, purgeEvery time.Duration) *Consumer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Consumer{node: node, writer: writer, log: log, cancel: cancel, purgeEvery: purgeEvery,
		behind: make([]atomic.Int64, node.Partitions()*laneCount), appliedAt: make([]atomic.Int64, node.Partitions()*laneCount)}
	metered.Store(c)
	for p := range node.Partitions() {
		for lane := range warehouse.Lane(laneCount) {
			r := &reader{c: c, partition: p, lane: lane, lastPurge: time.Now()}
			r.applied.Store(positions[position(p, lane)])
			c.readers = append(c.readers, r)
			c.running.Add(1)
			go func() {
				defer c.running.Done()
				r.run(ctx)
			}()
		}
		label := `{partition="` + strconv.Itoa(p) + `"}`
		metrics.GetOrCreateGauge(`hedge_log_backlog_messages`+label, func() float64 {
			messages, _ := metered.Load().Backlog(p)
			return float64(messages)
		})
		metrics.GetOrCreateGauge(`hedge_log_backlog_seconds`+label, func() float64 {
			_, behind := metered.Load().Backlog(p)
			return behind.Seconds()
		})
	}
	return c
}

// metered is the Consumer the /metrics gauges read: the last one started.
var metered atomic.Pointer[Consumer]

// Backlog is how many messages of partition p the log holds that the warehouse has
// not applied, and how far behind it is: how long ago the last message it applied
// of a lane with messages after it entered the log (0 when none waits), as of each
// lane's last apply.
func (c *Consumer) Backlog(p int) (messages int64, behind time.Duration) {
	now := time.Now()
	for lane := range laneCount {
		k := position(p, warehouse.Lane(lane))
		if n := c.behind[k].Load(); n > 0 {
			messages += n
			behind = max(behind, now.Sub(time.Unix(0, c.appliedAt[k].Load())))
		}
	}
	return messages, behind
}

// DeadLetters is how many messages this process has sent to the dead letters since
// it started (hedge_log_dead_letters_total).
func (c *Consumer) DeadLetters() uint64 { return deadLettersTotal.Get() }

// Stop stops reading and returns once no reader submits any more; what was not
// applied stays in the log for the next start.
func (c *Consumer) Stop() {
	c.cancel()
	c.running.Wait()
}

// Drain waits until the warehouse has applied every message the log held when Drain
// was called, or ctx ends: a graceful stop drains, so that the log is empty after it
// unless the warehouse could not keep up within the shutdown's time.
func (c *Consumer) Drain(ctx context.Context) error {
	for _, r := range c.readers {
		last, err := c.lastSequence(ctx, r)
		if err != nil {
			return fmt.Errorf("cannot drain the log: %w", err)
		}
		for r.applied.Load() < last {
			if !sleep(ctx, 10*time.Millisecond) {
				return fmt.Errorf("cannot drain the log: %w", ctx.Err())
			}
		}
	}
	return nil
}

// lastSequence is the stream sequence of r's subject's last message (0 when it has
// none). A cluster's log may not answer for a while (a stream electing its leader
// after a node came back): it asks again until ctx ends.
func (c *Consumer) lastSequence(ctx context.Context, r *reader) (uint64, error) {
	for {
		stream, err := c.node.js.Stream(ctx, streamName(r.partition))
		if err == nil {
			var last *jetstream.RawStreamMsg
			last, err = stream.GetLastMsgForSubject(ctx, subject(r.partition, r.lane))
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return 0, nil
			}
			if err == nil {
				return last.Sequence, nil
			}
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return 0, err
		}
	}
}

// reader applies one (partition, lane) in order.
type reader struct {
	c         *Consumer
	partition int
	lane      warehouse.Lane
	applied   atomic.Uint64 // the last stream sequence the warehouse recorded; Drain reads it
	purged    uint64
	lastPurge time.Time
	msgs      []jetstream.Msg
	batches   []warehouse.Batch // each message's, whose strings alias it or its scratch
	scratch   [][]byte          // each message's expanded frames, when it is compressed
	merged    warehouse.Batch   // the messages' batches as one
}

func (r *reader) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := r.read(ctx); err != nil && ctx.Err() == nil {
			r.c.log.Warn("cannot read the log; retrying", "partition", r.partition, "lane", r.lane.String(), "err", err)
			sleep(ctx, time.Second)
		}
	}
}

// read reads and applies from after r.applied until ctx ends or the read fails. An
// ordered consumer is JetStream's cheapest: no state on the node, and it restarts by
// itself where it stopped when messages go missing.
func (r *reader) read(ctx context.Context) error {
	js := r.c.node.js
	stream, err := js.Stream(ctx, streamName(r.partition))
	if err != nil {
		return err
	}
	cons, err := js.OrderedConsumer(ctx, streamName(r.partition), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject(r.partition, r.lane)},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    r.applied.Load() + 1,
		// An ordered consumer remakes itself on the node when messages go missing
		// (a leader changed); by default it tries for ever, holding its lock, so that
		// neither ctx nor Stop ends it while the cluster has no quorum. After two
		// tries (at most some 21 s) Next fails, and run reads again unless ctx ended.
		MaxResetAttempts: 2,
	})
	if err != nil {
		return err
	}
	// Without a byte limit: a pull request bounded in bytes never delivers a message
	// larger than the bound, and one large message would stop its partition.
	it, err := cons.Messages(jetstream.PullMaxMessages(gatherMessages))
	if err != nil {
		return err
	}
	defer it.Stop()
	for {
		msg, err := r.next(ctx, it, stream)
		if err != nil {
			return err
		}
		r.msgs = append(r.msgs[:0], msg)
		for len(r.msgs) < gatherMessages {
			more, err := it.Next(jetstream.NextMaxWait(time.Millisecond))
			if err != nil {
				break // none read ahead; apply what is here
			}
			r.msgs = append(r.msgs, more)
		}
		if err := r.apply(ctx); err != nil {
			return err
		}
		r.purge(ctx, stream)
	}
}

// next waits for the next message. While the warehouse has applied messages not yet
// purged it waits purgeEvery at a time and purges between, so that the log is emptied
// of what was applied even when no message follows: a full log takes none until then,
// and a reader that waited for one to purge would wait for ever.
func (r *reader) next(ctx context.Context, it jetstream.MessagesContext, stream jetstream.Stream) (jetstream.Msg, error) {
	for r.applied.Load() != r.purged {
		wait, cancel := context.WithTimeout(ctx, max(time.Until(r.lastPurge.Add(r.c.purgeEvery)), time.Millisecond))
		msg, err := it.Next(jetstream.NextContext(wait))
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return msg, cmp.Or(ctx.Err(), err)
		}
		r.purge(ctx, stream)
	}
	return it.Next(jetstream.NextContext(ctx))
}

// apply commits r.msgs as one batch, whose position is the last message's: the
// Writer records a position only with the commit that stores all of its batch, so the
// recorded sequence always means that every message up to it is applied. When that
// fails for a reason other than the Writer's load, it commits them one by one, in
// order; a message that fails alone applyAttempts times, or cannot be decoded, goes to
// the dead letters, its position recorded past it with an empty batch.
func (r *reader) apply(ctx context.Context) error {
	n := len(r.msgs)
	if len(r.batches) < n {
		r.batches = make([]warehouse.Batch, gatherMessages)
		r.scratch = make([][]byte, gatherMessages)
	}
	merged := &r.merged
	merged.Lane = r.lane
	var last *jetstream.MsgMetadata
	defer func() {
		for i := range n {
			r.batches[i].Reset()
		}
		merged.Reset()
		clear(r.msgs)
	}()
	for i, msg := range r.msgs {
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("cannot read a message's metadata: %w", err)
		}
		last = meta
		b := &r.batches[i]
		if err := DecodeMessage(msg.Data(), b, &r.scratch[i]); err != nil {
			r.deadLetter(ctx, msg, meta.Sequence.Stream, err)
			b.Reset()
		} else if b.Lane != r.lane {
			r.deadLetter(ctx, msg, meta.Sequence.Stream, fmt.Errorf("a message of lane %s on the %s subject", b.Lane, r.lane))
			b.Reset()
		}
		b.Lane = r.lane
		b.Position = warehouse.LogPosition{Partition: position(r.partition, r.lane), Sequence: meta.Sequence.Stream}
		merged.Events = append(merged.Events, b.Events...)
		merged.Warnings = append(merged.Warnings, b.Warnings...)
	}
	merged.Position = r.batches[n-1].Position
	err := r.submit(ctx, merged)
	if err != nil && !errors.Is(err, warehouse.ErrClosed) && ctx.Err() == nil {
		err = nil
		for i := range n {
			if err = r.submitAlone(ctx, r.msgs[i], &r.batches[i]); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	appliedMessagesTotal.Add(n)
	duplicates := merged.Duplicates
	for i := range n {
		duplicates += r.batches[i].Duplicates
	}
	// The edge's counter of retried events: with the log, the warehouse finds them
	// after the 200, so the consumer counts them (the edge counts none).
	metrics.GetOrCreateCounter(`hedge_capture_events_dropped_total{reason="duplicate_uuid"}`).Add(duplicates)
	r.applied.Store(last.Sequence.Stream)
	k := position(r.partition, r.lane)
	r.c.appliedAt[k].Store(last.Timestamp.UnixNano())
	r.c.behind[k].Store(int64(last.NumPending))
	return nil
}

// submit submits batches, waiting out the Writer's load (ErrOverloaded) and a storage
// that cannot be written (ErrStorage) until ctx ends; it returns the Writer's other
// errors.
func (r *reader) submit(ctx context.Context, batches ...*warehouse.Batch) error {
	for failures := 0; ; {
		err := r.c.writer.Submit(batches...)
		wait := 100 * time.Millisecond
		switch {
		case errors.Is(err, warehouse.ErrStorage):
			// Not the events' fault: they wait in the log (which answers 503 once
			// full) until the storage is back, logged once a minute.
			if failures%60 == 0 {
				r.c.log.Error("the warehouse cannot store the log's events; retrying every second",
					"partition", r.partition, "lane", r.lane.String(), "err", err)
			}
			failures++
			wait = time.Second
		case !errors.Is(err, warehouse.ErrOverloaded):
			return err
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// submitAlone submits one message's batch; after applyAttempts failures it sends the
// message to the dead letters and records its position with an empty batch.
func (r *reader) submitAlone(ctx context.Context, msg jetstream.Msg, b *warehouse.Batch) error {
	var err error
	for attempt := range applyAttempts {
		if attempt > 0 && !sleep(ctx, time.Duration(attempt)*200*time.Millisecond) {
			return ctx.Err()
		}
		if err = r.submit(ctx, b); err == nil || errors.Is(err, warehouse.ErrClosed) || ctx.Err() != nil {
			return err
		}
	}
	r.deadLetter(ctx, msg, b.Position.Sequence, err)
	pos := b.Position
	b.Reset()
	b.Position = pos
	return r.submit(ctx, b)
}

// deadLetter keeps a message the warehouse cannot apply in the dead-letter stream,
// under dead.<partition>.<lane>, with why and where it was; it never blocks the
// partition: if even that publish fails, the message is logged and left behind.
func (r *reader) deadLetter(ctx context.Context, msg jetstream.Msg, sequence uint64, cause error) {
	deadLettersTotal.Inc()
	r.c.log.Error("a log message cannot be applied; it goes to the dead letters",
		"partition", r.partition, "lane", r.lane.String(), "sequence", sequence, "err", cause)
	dead := &nats.Msg{
		Subject: "dead." + strconv.Itoa(r.partition) + "." + laneTokens[r.lane],
		Data:    msg.Data(),
		Header: nats.Header{
			"Hedge-Error":    []string{cause.Error()},
			"Hedge-Sequence": []string{strconv.FormatUint(sequence, 10)},
		},
	}
	if _, err := r.c.node.js.PublishMsg(ctx, dead); err != nil {
		r.c.log.Error("cannot keep a dead letter", "partition", r.partition, "sequence", sequence, "err", err)
	}
}

// purge removes from the log what the warehouse applied of this lane, at most once a
// purgeInterval: the log then holds only what the warehouse still needs.
func (r *reader) purge(ctx context.Context, stream jetstream.Stream) {
	applied := r.applied.Load()
	if applied == r.purged || time.Since(r.lastPurge) < r.c.purgeEvery {
		return
	}
	r.lastPurge = time.Now()
	err := stream.Purge(ctx, jetstream.WithPurgeSubject(subject(r.partition, r.lane)), jetstream.WithPurgeSequence(applied+1))
	if err != nil {
		r.c.log.Warn("cannot purge the log", "partition", r.partition, "lane", r.lane.String(), "err", err)
		return
	}
	r.purged = applied
}

// sleep waits d or until ctx ends, and reports whether it waited d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
