package eventlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hedge-analytics/hedge/internal/testlog"
	"github.com/hedge-analytics/hedge/warehouse"
)

// logEnv is a warehouse and a log in one directory, as hedge serve --log jetstream
// runs them: the consumer applies the log to the warehouse's Writer.
type logEnv struct {
	dir       string
	cfg       Config
	warehouse *warehouse.Warehouse
	node      *Node
	consumer  *Consumer
	publisher *Publisher
}

// openLog opens the warehouse and the log in dir; with consume, it starts applying
// the log from the positions the warehouse recorded. close undoes it, as a graceful
// stop does.
func openLog(t *testing.T, dir string, cfg Config, consume bool) *logEnv {
	t.Helper()
	return openLogTo(t, dir, cfg, warehouse.Config{}, consume)
}

// openLogTo is openLog with a warehouse of whCfg (in dir).
func openLogTo(t *testing.T, dir string, cfg Config, whCfg warehouse.Config, consume bool) *logEnv {
	t.Helper()
	ctx := context.Background()
	log := testlog.New()
	whCfg.Path, whCfg.Logger = filepath.Join(dir, "hedge.duckdb"), log
	wh, err := warehouse.Open(ctx, whCfg)
	if err != nil {
		t.Fatal(err)
	}
	positions, err := wh.LogPositions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir, cfg.Positions, cfg.Logger = filepath.Join(dir, "log"), positions, log
	node, err := Open(ctx, cfg)
	if err != nil {
		wh.Close()
		t.Fatal(err)
	}
	e := &logEnv{dir: dir, cfg: cfg, warehouse: wh, node: node, publisher: NewPublisher(node)}
	if consume {
		e.consumer = StartConsumer(node, wh.Writer(), positions, log)
	}
	t.Cleanup(e.close)
	return e
}

func (e *logEnv) close() {
	if e.node == nil {
		return
	}
	if e.consumer != nil {
		e.consumer.Stop()
	}
	e.node.Close()
	e.warehouse.Close()
	e.node = nil
}

// publish publishes requests batches of events events each, one after the other
// (so each is a message of its own), and fails the test on an error.
func (e *logEnv) publish(t *testing.T, requests, events int) {
	t.Helper()
	for range requests {
		if err := e.publisher.Submit(batch(1, events)); err != nil {
			t.Fatal(err)
		}
	}
}

// batch is a realtime batch of n events of team, from distinct ids spread over the
// partitions, and one warning, which the warehouse does not deduplicate, so that a
// message applied twice shows.
func batch(team int64, n int) *warehouse.Batch {
	b := &warehouse.Batch{Lane: warehouse.LaneRealtime}
	for i := range n {
		b.Events = append(b.Events, warehouse.Event{
			UUID: uuid.Must(uuid.NewV7()), TeamID: team, Name: "$pageview",
			DistinctID: fmt.Sprintf("user-%d", i%37), Timestamp: time.Date(2026, 11, 28, 10, 0, i%60, 0, time.UTC),
			Properties: `{"$current_url":"https://example.com/"}`,
		})
	}
	b.Warnings = append(b.Warnings, warehouse.Warning{TeamID: team, Time: time.Now().UTC(), Type: "test", Event: "$pageview", DistinctID: "user-0"})
	return b
}

// waitStored waits until the warehouse holds events events and warnings warnings of
// team, and fails when it holds more, or when they do not come within 30 s.
func waitStored(t *testing.T, wh *warehouse.Warehouse, team int64, events, warnings int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var e, w int
		err := wh.DB().QueryRow(`SELECT (SELECT count(*) FROM events WHERE team_id = ?), (SELECT count(*) FROM ingestion_warnings WHERE team_id = ?)`, team, team).Scan(&e, &w)
		if err != nil {
			t.Fatal(err)
		}
		if e > events || w > warnings {
			t.Fatalf("stored %d events and %d warnings, want %d and %d", e, w, events, warnings)
		}
		if e == events && w == warnings {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stored %d events and %d warnings after 30 s, want %d and %d", e, w, events, warnings)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLogAppliesOnceAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	e := openLog(t, dir, Config{Partitions: 4}, true)
	e.publish(t, 10, 100)
	waitStored(t, e.warehouse, 1, 1000, 10)
	positions, err := e.warehouse.LogPositions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(positions) != 4 { // every partition's realtime lane had events
		t.Errorf("positions %v, want one for each partition's realtime lane", positions)
	}
	e.close()

	// Reopened, the consumer starts after what was applied: nothing twice, whether or
	// not the log was purged yet, and what comes next is applied.
	e = openLog(t, dir, Config{Partitions: 4}, true)
	e.publish(t, 1, 50)
	waitStored(t, e.warehouse, 1, 1050, 11)
	time.Sleep(300 * time.Millisecond) // a replay would show by now
	waitStored(t, e.warehouse, 1, 1050, 11)
}

// TestLogAppliedButNotPurged is a crash between the warehouse's commit and the log's
// purge: the messages are still in the log, and the consumer that starts again must
// skip them by the positions the commit recorded.
func TestLogAppliedButNotPurged(t *testing.T) {
	dir := t.TempDir()
	e := openLog(t, dir, Config{Partitions: 2}, false)
	e.publish(t, 3, 20)
	// Applied by a consumer that stops before its first purge is due.
	e.consumer = startConsumer(e.node, e.warehouse.Writer(), nil, testlog.New(), time.Hour)
	waitStored(t, e.warehouse, 1, 60, 3)
	e.consumer.Stop()
	e.consumer = nil
	var held uint64
	for p := range 2 {
		info, err := e.node.js.Stream(context.Background(), streamName(p))
		if err != nil {
			t.Fatal(err)
		}
		held += info.CachedInfo().State.Msgs
	}
	if held == 0 {
		t.Fatal("the log was purged already; the test needs the applied messages in it")
	}
	e.close()

	e = openLog(t, dir, Config{Partitions: 2}, true)
	time.Sleep(500 * time.Millisecond)
	waitStored(t, e.warehouse, 1, 60, 3)
}

func TestLogRetriedPublishStoredOnce(t *testing.T) {
	e := openLog(t, t.TempDir(), Config{Partitions: 1}, true)
	b := batch(1, 10)
	data := AppendMessage(nil, b.Lane, b.Events, b.Warnings)
	for range 3 { // the Publisher's re-send after a lost acknowledgement
		msg := &nats.Msg{Subject: subject(0, b.Lane), Data: data, Header: nats.Header{jetstream.MsgIDHeader: []string{"request-1.0.0.0"}}}
		if _, err := e.node.js.PublishMsg(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	waitStored(t, e.warehouse, 1, 10, 1)
	time.Sleep(300 * time.Millisecond)
	waitStored(t, e.warehouse, 1, 10, 1)
}

// Once the warehouse has applied everything, the log is purged of it within about
// the purge interval although no message follows: before, a reader purged only after
// an apply, at most once a second, so the messages of the last gather applied within
// a second of a purge stayed, and a full log stayed full, refusing every publish.
func TestLogPurgedWhenIdle(t *testing.T) {
	e := openLog(t, t.TempDir(), Config{Partitions: 1}, false)
	e.publish(t, gatherMessages+4, 1) // one message each: two gathers, the second at once
	e.consumer = StartConsumer(e.node, e.warehouse.Writer(), nil, testlog.New())
	waitStored(t, e.warehouse, 1, gatherMessages+4, gatherMessages+4)
	stream, err := e.node.js.Stream(context.Background(), streamName(0))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		info, err := stream.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log holds %d messages 5 s after the warehouse applied all of them", info.State.Msgs)
		}
	}
}

func TestLogFullAnswersOverloaded(t *testing.T) {
	// No consumer: nothing is applied, so the log fills.
	e := openLog(t, t.TempDir(), Config{Partitions: 1, MaxBytes: 256 << 10}, false)
	var err error
	for i := 0; i < 5000 && err == nil; i++ { // messages are compressed: a few KB each
		err = e.publisher.Submit(batch(1, 100))
	}
	if !errors.Is(err, ErrFull) || !errors.Is(err, warehouse.ErrOverloaded) {
		t.Fatalf("Submit into a full log: %v, want ErrFull (an ErrOverloaded)", err)
	}
	// Once the warehouse applies it, the log takes events again.
	e.consumer = StartConsumer(e.node, e.warehouse.Writer(), nil, testlog.New())
	deadline := time.Now().Add(30 * time.Second)
	for err != nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		err = e.publisher.Submit(batch(1, 10))
	}
	if err != nil {
		t.Fatalf("the log stayed full after the warehouse applied it: %v", err)
	}
}

func TestLogDeadLetters(t *testing.T) {
	e := openLog(t, t.TempDir(), Config{Partitions: 1}, true)
	ctx := context.Background()
	if _, err := e.node.js.Publish(ctx, subject(0, warehouse.LaneRealtime), []byte("not a message")); err != nil {
		t.Fatal(err)
	}
	// The partition goes on past it.
	e.publish(t, 1, 5)
	waitStored(t, e.warehouse, 1, 5, 1)
	dead, err := e.node.js.Stream(ctx, deadLetterStream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := dead.GetLastMsgForSubject(ctx, "dead.0.rt")
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	if string(msg.Data) != "not a message" || msg.Header.Get("Hedge-Sequence") != "1" || msg.Header.Get("Hedge-Error") == "" {
		t.Errorf("dead letter %q %v, want the message, its sequence and why", msg.Data, msg.Header)
	}
	positions, err := e.warehouse.LogPositions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if positions[position(0, warehouse.LaneRealtime)] != 2 {
		t.Errorf("positions %v, want the realtime lane at 2, past the dead letter", positions)
	}
}

func TestLogPartitionsFixed(t *testing.T) {
	dir := t.TempDir()
	e := openLog(t, dir, Config{Partitions: 2}, false)
	e.close()
	_, err := Open(context.Background(), Config{Dir: filepath.Join(dir, "log"), Partitions: 3})
	if err == nil {
		t.Fatal("a log of 2 partitions opened with 3")
	}
}

func TestPartitionIsFixed(t *testing.T) {
	// The hash is part of the log's format: a change would move people's events
	// between the partitions of an existing log, out of order.
	for _, c := range []struct {
		team int64
		id   string
		n    int
		want int
	}{
		{1, "user-1", 32, 29},
		{2, "", 32, 7},
		{7, "0190a2b4-anon", 8, 6},
		{-5, "ü", 1000, 606},
	} {
		if got := Partition(c.team, c.id, c.n); got != c.want {
			t.Errorf("Partition(%d, %q, %d) = %d, want %d", c.team, c.id, c.n, got, c.want)
		}
	}
}

func TestLogJoinsConcurrentRequests(t *testing.T) {
	// No consumer: the stream keeps every message, to count them.
	e := openLog(t, t.TempDir(), Config{Partitions: 1}, false)
	const requests = 200
	errs := make(chan error, requests)
	for range requests {
		go func() {
			b := batch(1, 1)
			b.Warnings = nil
			errs <- e.publisher.Submit(b)
		}()
	}
	for range requests {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	stream, err := e.node.js.Stream(context.Background(), streamName(0))
	if err != nil {
		t.Fatal(err)
	}
	if msgs := stream.CachedInfo().State.Msgs; msgs == 0 || msgs > requests/2 {
		t.Fatalf("%d requests of one event each made %d messages: concurrent requests must share messages", requests, msgs)
	}
	e.consumer = StartConsumer(e.node, e.warehouse.Writer(), nil, testlog.New())
	waitStored(t, e.warehouse, 1, requests, 0)
}

func TestLogPublisherClosed(t *testing.T) {
	e := openLog(t, t.TempDir(), Config{Partitions: 1}, false)
	e.publisher.Close()
	if err := e.publisher.Submit(batch(1, 1)); !errors.Is(err, warehouse.ErrClosed) {
		t.Fatalf("Submit after Close: %v, want ErrClosed", err)
	}
}

// gatedWriter passes its first Submit to the Writer and holds the others until open
// is closed: a warehouse that stopped keeping up.
type gatedWriter struct {
	writer Writer
	calls  atomic.Int32
	open   chan struct{}
}

func (g *gatedWriter) Submit(batches ...*warehouse.Batch) error {
	if g.calls.Add(1) > 1 {
		<-g.open
	}
	return g.writer.Submit(batches...)
}

func TestLogBacklog(t *testing.T) {
	e := openLog(t, t.TempDir(), Config{Partitions: 1}, false)
	e.publish(t, gatherMessages+4, 1) // one message each: one request at a time
	gate := &gatedWriter{writer: e.warehouse.Writer(), open: make(chan struct{})}
	e.consumer = StartConsumer(e.node, gate, nil, testlog.New())
	// The first gather is applied, the next one held: the rest is the backlog.
	var applied int64
	for deadline := time.Now().Add(30 * time.Second); applied == 0 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if err := e.warehouse.DB().QueryRow(`SELECT count(*) FROM events`).Scan(&applied); err != nil {
			t.Fatal(err)
		}
	}
	if messages, behind := e.consumer.Backlog(0); applied == 0 || messages != gatherMessages+4-applied || behind < 10*time.Millisecond {
		t.Errorf("%d messages applied, a backlog of %d, %v behind; want the other %d, and at least 10 ms behind",
			applied, messages, behind, gatherMessages+4-applied)
	}
	close(gate.open)
	waitStored(t, e.warehouse, 1, gatherMessages+4, gatherMessages+4)
	// The reader notes what it applied once the commit returns, just after the rows show.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		messages, behind := e.consumer.Backlog(0)
		if messages == 0 && behind == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backlog %d messages, %v behind once applied; want none", messages, behind)
		}
	}
}

// TestLogRecreated: the log's directory removed (its events all applied), a new log
// numbers its messages after the warehouse's positions, and they are applied.
func TestLogRecreated(t *testing.T) {
	dir := t.TempDir()
	e := openLog(t, dir, Config{Partitions: 1}, true)
	e.publish(t, 5, 3)
	waitStored(t, e.warehouse, 1, 15, 5)
	e.close()
	if err := os.RemoveAll(filepath.Join(dir, "log")); err != nil {
		t.Fatal(err)
	}
	e = openLog(t, dir, Config{Partitions: 1}, true)
	e.publish(t, 1, 3)
	waitStored(t, e.warehouse, 1, 18, 6)
}

// TestLogLakeUnwritable: while the lake cannot be written (here its project directory
// is a file), the log keeps the events and the consumer retries, sending nothing to the
// dead letters; once it can, every event is stored once.
func TestLogLakeUnwritable(t *testing.T) {
	dir := t.TempDir()
	lake := filepath.Join(dir, "lake")
	e := openLogTo(t, dir, Config{Partitions: 2}, warehouse.Config{LakeDir: lake}, true)
	obstacle := filepath.Join(lake, "team_id=1")
	if err := os.WriteFile(obstacle, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadBefore := e.consumer.DeadLetters() // the process's, other tests' too
	e.publish(t, 3, 5)
	count := func() int64 {
		t.Helper()
		r, err := e.warehouse.Queries().HogQL(context.Background(), warehouse.Scope{Team: 1}, `SELECT count() FROM events`)
		if err != nil {
			t.Fatal(err)
		}
		return r.Results[0][0].(int64)
	}
	time.Sleep(1500 * time.Millisecond) // retries, each a second apart
	if n, dead := count(), e.consumer.DeadLetters()-deadBefore; n != 0 || dead != 0 {
		t.Fatalf("with the lake unwritable: %d events stored, %d dead letters; want none and none", n, dead)
	}
	if err := os.Remove(obstacle); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); count() != 15; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d events stored 30 s after the lake could be written again, want 15", count())
		}
	}
	if dead := e.consumer.DeadLetters() - deadBefore; dead != 0 {
		t.Fatalf("%d dead letters", dead)
	}
}
