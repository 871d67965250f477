package warehouse

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

var (
	// ErrOverloaded means the Writer's queue stayed full for the whole QueueTimeout:
	// the caller should answer 503 and let the client retry.
	ErrOverloaded = errors.New("the event writer is overloaded")
	// ErrClosed means the Writer is shutting down and accepts nothing more.
	ErrClosed = errors.New("the event writer is closed")
)

// Writer is the one goroutine that appends events to DuckDB. Submissions from many
// requests are gathered for at most FlushInterval or FlushRows events and committed in
// one transaction (group commit), so the cost of a durable commit is paid once per
// group rather than once per request. Every submitter is woken with the result of the
// commit that holds its events: a nil error means they are durable.
type Writer struct {
	conn     driver.Conn
	appender *duckdb.Appender
	queue    chan *submission
	done     chan struct{}
	cfg      *Config
	log      *slog.Logger

	// mu orders Submit's send on queue against Close's close of it: senders hold the
	// read lock while sending, Close takes the write lock to set closing.
	mu      sync.RWMutex
	closing bool

	// Owned by the writer goroutine.
	group               []*submission
	rowsSinceCheckpoint int
}

// submission is one Submit call waiting for its commit.
type submission struct {
	lane   Lane
	events []Event
	done   chan error // buffered: the writer never blocks on a submitter
}

var submissionPool = sync.Pool{New: func() any { return &submission{done: make(chan error, 1)} }}

func newWriter(conn driver.Conn, cfg *Config) (*Writer, error) {
	w := &Writer{
		conn:  conn,
		queue: make(chan *submission, cfg.QueueSize),
		done:  make(chan struct{}),
		cfg:   cfg,
		log:   cfg.Logger,
	}
	if err := w.openAppender(); err != nil {
		return nil, err
	}
	go w.run()
	return w, nil
}

// Submit hands events to the Writer and returns once they are committed (nil) or once
// their commit failed. It never returns while the Writer may still read the events,
// which is what lets them alias the caller's buffers. A full queue is waited on for at
// most QueueTimeout (then ErrOverloaded); a closing Writer answers ErrClosed.
func (w *Writer) Submit(lane Lane, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	s := submissionPool.Get().(*submission)
	s.lane, s.events = lane, events
	if err := w.enqueue(s); err != nil {
		s.events = nil
		submissionPool.Put(s)
		return err
	}
	err := <-s.done
	s.events = nil
	submissionPool.Put(s)
	return err
}

func (w *Writer) enqueue(s *submission) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closing {
		return ErrClosed
	}
	select {
	case w.queue <- s:
		return nil
	default:
	}
	timer := time.NewTimer(w.cfg.QueueTimeout)
	defer timer.Stop()
	select {
	case w.queue <- s:
		return nil
	case <-timer.C:
		return ErrOverloaded
	}
}

// Close stops accepting submissions, commits everything already queued, and releases
// the Writer's connection. It is safe to call more than once.
func (w *Writer) Close() {
	w.mu.Lock()
	if !w.closing {
		w.closing = true
		close(w.queue)
	}
	w.mu.Unlock()
	<-w.done
}

func (w *Writer) run() {
	defer close(w.done)
	defer w.release()
	ticker := time.NewTicker(w.cfg.CheckpointInterval)
	defer ticker.Stop()
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		select {
		case s, ok := <-w.queue:
			if !ok {
				return
			}
			w.commitGroup(w.gather(s, linger))
		case <-ticker.C:
			if w.rowsSinceCheckpoint > 0 {
				w.checkpoint()
			}
		}
	}
}

// gather collects submissions after first until the group holds FlushRows events, the
// linger time has passed, or the queue is closed.
func (w *Writer) gather(first *submission, linger *time.Timer) []*submission {
	w.group = append(w.group[:0], first)
	rows := len(first.events)
	if w.cfg.FlushInterval > 0 {
		linger.Reset(w.cfg.FlushInterval)
		defer linger.Stop()
	}
	for rows < w.cfg.FlushRows {
		var s *submission
		var ok bool
		if w.cfg.FlushInterval > 0 {
			select {
			case s, ok = <-w.queue:
			case <-linger.C:
				return w.group
			}
		} else {
			select {
			case s, ok = <-w.queue:
			default:
				return w.group
			}
		}
		if !ok {
			return w.group
		}
		w.group = append(w.group, s)
		rows += len(s.events)
	}
	return w.group
}

// commitGroup commits the group in one transaction. If that fails, each submission is
// retried in a transaction of its own, so that one bad submission cannot fail the
// others that happened to share its commit.
func (w *Writer) commitGroup(group []*submission) {
	err := w.commit(group)
	if err != nil && len(group) > 1 {
		for i := range group {
			group[i].done <- w.commit(group[i : i+1])
		}
		return
	}
	for _, s := range group {
		s.done <- err
	}
}

func (w *Writer) commit(group []*submission) (err error) {
	if w.appender == nil {
		if err := w.openAppender(); err != nil {
			return err
		}
	}
	if err := w.exec("BEGIN TRANSACTION"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if rbErr := w.exec("ROLLBACK"); rbErr != nil {
				w.log.Error("cannot roll back a failed commit", "err", rbErr)
			}
			// A failed append or flush invalidates the appender: the next commit opens
			// a fresh one.
			w.appender.Close()
			w.appender = nil
		}
	}()
	insertedAt := time.Now().UTC()
	rows := 0
	for _, s := range group {
		lane := s.lane.String()
		for i := range s.events {
			e := &s.events[i]
			err := w.appender.AppendRow(
				duckdb.UUID(e.UUID), e.TeamID, e.Name, e.DistinctID, nil,
				e.Timestamp, insertedAt, e.Properties,
				nil, nil, nil, nil, nil, lane)
			if err != nil {
				return fmt.Errorf("cannot append event %s: %w", e.UUID, err)
			}
		}
		rows += len(s.events)
	}
	if err := w.appender.Flush(); err != nil {
		return fmt.Errorf("cannot flush %d events: %w", rows, err)
	}
	if err := w.exec("COMMIT"); err != nil {
		return err
	}
	w.rowsSinceCheckpoint += rows
	return nil
}

// checkpoint writes the WAL into the database file. DuckDB refuses while another write
// transaction is open (an admin request, say); the next tick tries again.
func (w *Writer) checkpoint() {
	start := time.Now()
	if err := w.exec("CHECKPOINT"); err != nil {
		w.log.Debug("checkpoint postponed", "err", err)
		return
	}
	w.log.Debug("checkpoint done", "rows", w.rowsSinceCheckpoint, "took", time.Since(start))
	w.rowsSinceCheckpoint = 0
}

func (w *Writer) exec(query string) error {
	if _, err := w.conn.(driver.ExecerContext).ExecContext(context.Background(), query, nil); err != nil {
		return fmt.Errorf("cannot %s: %w", query, err)
	}
	return nil
}

func (w *Writer) openAppender() error {
	a, err := duckdb.NewAppenderFromConn(w.conn, "", "events")
	if err != nil {
		return fmt.Errorf("cannot open the events appender: %w", err)
	}
	w.appender = a
	return nil
}

func (w *Writer) release() {
	if w.appender != nil {
		if err := w.appender.Close(); err != nil {
			w.log.Error("cannot close the events appender", "err", err)
		}
	}
	if err := w.conn.Close(); err != nil {
		w.log.Error("cannot close the writer's connection", "err", err)
	}
}
