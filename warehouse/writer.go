package warehouse

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/VictoriaMetrics/metrics"
	duckdb "github.com/duckdb/duckdb-go/v2"
	"golang.org/x/sync/semaphore"
)

var (
	// ErrOverloaded means the Writer could not take the rows within QueueTimeout: the
	// caller should answer 503 and let the client retry.
	ErrOverloaded = errors.New("the event writer is overloaded")
	// ErrClosed means the Writer is shutting down and accepts nothing more.
	ErrClosed = errors.New("the event writer is closed")
	// ErrStorage means a commit could not write the lake's files (a full disk, an
	// unwritable directory): nothing of it is stored, and the same events may be
	// submitted again once the storage is back. The log's consumer waits and retries
	// rather than set the events aside as dead letters.
	ErrStorage = errors.New("the warehouse cannot write its files")
)

var (
	commitsTotal       = metrics.NewCounter(`hedge_writer_commits_total`)
	failedCommitsTotal = metrics.NewCounter(`hedge_writer_failed_commits_total`)
	commitDuration     = metrics.NewHistogram(`hedge_writer_commit_duration_seconds`)
	checkpointsTotal   = metrics.NewCounter(`hedge_writer_checkpoints_total`)
	// Commits of a row group of events or more, which DuckDB writes into the database
	// file compressed, past the WAL and the checkpoint (see bulk).
	bulkCommitsTotal = metrics.NewCounter(`hedge_writer_bulk_commits_total`)
	// How long each checkpoint stopped the commits.
	checkpointDuration = metrics.NewHistogram(`hedge_writer_checkpoint_duration_seconds`)
	warningsTotal      = metrics.NewCounter(`hedge_writer_warnings_total`)
	// The reads of person_distinct_ids for the distinct ids a commit names that the
	// distinct-id cache lacks (one per commit at most), and the ids they looked up.
	distinctReadsTotal   = metrics.NewCounter(`hedge_writer_distinct_id_reads_total`)
	distinctIDsReadTotal = metrics.NewCounter(`hedge_writer_distinct_ids_read_total`)
	eventsTotal          = [laneCount]*metrics.Counter{
		metrics.NewCounter(`hedge_writer_events_total{lane="realtime"}`),
		metrics.NewCounter(`hedge_writer_events_total{lane="historical"}`),
		metrics.NewCounter(`hedge_writer_events_total{lane="overflow"}`),
	}
)

// Writer is the one goroutine that appends events to DuckDB. Submissions from many
// requests are gathered for at most FlushInterval or FlushRows rows and committed in
// one transaction (group commit), so the cost of a durable commit is paid once per
// group, not once per request. Every submitter is woken with the result of the commit
// that holds its rows: a nil error means they are durable.
//
// Each lane is a FIFO queue, committed in the order received. A group takes at least
// one waiting submission from every lane, so no lane starves, and fills the rest in
// lane order (realtime, historical, overflow); rows are appended in that order too.
type Writer struct {
	conn       driver.Conn
	statements map[string]driver.Stmt // prepared on conn, by query text
	appenders  *appenders             // nil after a failed commit, until the next opens them again
	identity   *identity
	// materialize takes the materialized properties out of each event (materialized.go),
	// with the keys of its project's slots (materialized_slots.go).
	materialize materializer
	slots       *chosenSlots
	closeRender func() error
	// row is the events appender's row, kept for the next event: the values of its
	// columns, the materialized properties and properties_zstd last.
	row      []driver.Value
	recent   *recentEvents
	versions *dataVersions
	lanes    [laneCount]chan *submission
	// queued bounds the rows (events and warnings) between Submit and their commit.
	queued *semaphore.Weighted
	// waiting counts the events sent to the lanes that the writer has not taken yet:
	// the backlog that decides a bulk commit (see bulk).
	waiting atomic.Int64
	done    chan struct{}
	cfg     *Config
	log     *slog.Logger
	// suspect is told of each commit or checkpoint that failed, which may have failed
	// because DuckDB invalidated the database (health.go): no retry gets past that.
	suspect func(error)

	// mu orders Submit's sends on the lanes against Close closing them: senders hold
	// the read lock while sending, Close takes the write lock to set closing.
	mu      sync.RWMutex
	closing bool

	// committing is the inserted_at of the commit in progress, zero between commits:
	// what Committed reports. commitMu orders reading the clock for a new commit against
	// Committed reading it.
	commitMu   sync.Mutex
	committing time.Time

	// Owned by the writer goroutine.
	open                [laneCount]bool
	group               [laneCount][]*submission
	all                 []*submission
	rowsSinceCheckpoint int
	// eventsSinceCheckpoint are the events committed into the WAL since the last
	// checkpoint, which fill the row groups it will write (CheckpointRows events);
	// checkpointDue says they are full (or a checkpoint failed), until a checkpoint
	// succeeds; carried holds, per lane, the submission that did not fit (see fits).
	eventsSinceCheckpoint int
	checkpointDue         bool
	carried               [laneCount]*submission
	// fingerprints and duplicates are the commit's events' (recentEvents.addAll), in
	// order; their arrays are kept for the next commit.
	fingerprints []uint64
	duplicates   []bool
	// partitions and sequences are the log positions the commit records
	// (collectPositions); their arrays are kept for the next commit.
	partitions []int64
	sequences  []uint64
	// lake is where the events go as parts (lake.go), nil when they go to the events
	// table; parts builds each commit's, and partRow is the event's row of them.
	lake    *lake
	parts   partWriter
	partRow partRow
	// lastSquash is when the person overrides were last squashed (person_overrides.go):
	// zero at start, so that the first commit, or the first idle tick, squashes those
	// left from before.
	lastSquash time.Time
}

// submission is one Batch waiting for its commit.
type submission struct {
	batch *Batch
	done  chan error // buffered: the writer never blocks on a submitter
	// rest is, for the first part of a split submission, the part carried to a later
	// group, which loses its position should this part fail (see answer).
	rest *submission
}

var submissionPool = sync.Pool{New: func() any { return &submission{done: make(chan error, 1)} }}

// appenders are the Writer's bulk inserts, all on its connection and inside its
// transaction: a failed append or flush invalidates them, and the next commit opens
// new ones.
type appenders struct {
	events, warnings, persons, distinctIDs *duckdb.Appender
	// stagedPersons and stagedDistinctIDs fill the connection's TEMP staging tables
	// from which one UPDATE applies all the changed persons, and one all the moved
	// distinct ids, of a commit: one statement instead of one per row.
	stagedPersons, stagedDistinctIDs *duckdb.Appender
}

func (a *appenders) all() []*duckdb.Appender {
	return []*duckdb.Appender{a.events, a.warnings, a.persons, a.distinctIDs, a.stagedPersons, a.stagedDistinctIDs}
}

// stagingTables are the Writer connection's TEMP tables for bulk updates (see appenders).
const stagingTables = `
	CREATE TEMP TABLE staged_persons (id UUID, properties VARCHAR, created_at TIMESTAMPTZ, is_identified BOOLEAN, version BIGINT, updated_at TIMESTAMPTZ);
	CREATE TEMP TABLE staged_distinct_ids (team_id BIGINT, distinct_id VARCHAR, person_id UUID, updated_at TIMESTAMPTZ)`

func newWriter(conn driver.Conn, identity *identity, recent *recentEvents, versions *dataVersions, slots *chosenSlots,
	lake *lake, suspect func(error), cfg *Config) (*Writer, error) {
	w := &Writer{
		lake:       lake,
		parts:      partWriter{mem: &lakeMemory},
		conn:       conn,
		suspect:    suspect,
		slots:      slots,
		statements: map[string]driver.Stmt{},
		identity:   identity,
		recent:     recent,
		versions:   versions,
		queued:     semaphore.NewWeighted(int64(cfg.MaxQueuedRows)),
		done:       make(chan struct{}),
		cfg:        cfg,
		log:        cfg.Logger,
	}
	for i := range w.lanes {
		// Every submission holds at least one queued row, so a lane never needs more room.
		w.lanes[i] = make(chan *submission, cfg.MaxQueuedRows)
		w.open[i] = true
	}
	if _, err := conn.(driver.ExecerContext).ExecContext(context.Background(), stagingTables, nil); err != nil {
		return nil, fmt.Errorf("cannot create the staging tables: %w", err)
	}
	render, closeRender, err := renderer(conn)
	if err != nil {
		return nil, err
	}
	w.materialize.render, w.closeRender = render, closeRender
	if err := w.openAppenders(); err != nil {
		closeRender()
		return nil, err
	}
	go w.run()
	return w, nil
}

// Submit hands batches (at most one per lane is the usual use) to the Writer and
// returns once all of them are committed (nil) or one of their commits failed. It never
// returns while the Writer may still read them, which is what lets their strings alias
// the caller's buffers. If the rows cannot be queued within QueueTimeout, nothing is
// queued and it answers ErrOverloaded; a closing Writer answers ErrClosed. A batch with
// neither rows nor a position is not submitted: nil at once, when all are so.
func (w *Writer) Submit(batches ...*Batch) error {
	rows := 0
	for _, b := range batches {
		rows += b.queuedRows()
	}
	if rows == 0 {
		return nil
	}
	// A batch larger than the whole budget may still go, alone.
	reserve := int64(min(rows, w.cfg.MaxQueuedRows))
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.QueueTimeout)
	err := w.queued.Acquire(ctx, reserve)
	cancel()
	if err != nil {
		return ErrOverloaded
	}
	defer w.queued.Release(reserve)

	var pending [laneCount]*submission
	n := 0
	err = w.enqueue(batches, &pending, &n)
	for _, s := range pending[:n] {
		if commitErr := <-s.done; err == nil {
			err = commitErr
		}
		s.batch = nil
		submissionPool.Put(s)
	}
	return err
}

// enqueue sends each batch that has rows or a position to its lane, recording the sent
// submissions in pending[:*n] so that Submit waits for every one of them even when a
// later send fails.
func (w *Writer) enqueue(batches []*Batch, pending *[laneCount]*submission, n *int) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closing {
		return ErrClosed
	}
	for _, b := range batches {
		if b.queuedRows() == 0 {
			continue
		}
		if b.Lane >= laneCount || *n == len(pending) {
			return fmt.Errorf("cannot submit to lane %d: %w", b.Lane, ErrClosed)
		}
		s := submissionPool.Get().(*submission)
		s.batch = b
		w.waiting.Add(int64(len(b.Events)))
		w.lanes[b.Lane] <- s // never blocks: the lane has room for every queued row
		pending[*n] = s
		*n++
	}
	return nil
}

// Close stops accepting submissions, commits everything already queued, and releases
// the Writer's connection. It is safe to call more than once.
func (w *Writer) Close() {
	w.mu.Lock()
	if !w.closing {
		w.closing = true
		for _, lane := range w.lanes {
			close(lane)
		}
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
		first := w.next()
		if first == nil {
			var tick <-chan time.Time = ticker.C
			first = w.wait(tick, nil)
			if first == nil {
				if !w.anyOpen() {
					return
				}
				if w.rowsSinceCheckpoint > 0 {
					w.checkpoint()
				}
				if w.squashDue() {
					w.squash()
				}
				continue
			}
		}
		if w.checkpointDue || w.overflows(first) {
			w.checkpoint()
		}
		w.gather(first, linger)
		w.commitGroup()
		if w.checkpointDue {
			w.checkpoint()
		}
		if w.squashDue() {
			w.squash()
		}
	}
}

// Checkpoints. A checkpoint stops every commit while it runs, for as long as the rows it
// writes take to compress (some 8 µs an event on two cores), so the Writer checkpoints
// every CheckpointRows events (two row groups, 16,384) as they fill, a stop of about
// 0.15 s, where DuckDB's own checkpoint at wal_autocheckpoint stopped commits for
// seconds under sustained load. Appends after a checkpoint begin a new row group, and
// a checkpoint rewrites a row group that was partly written before (measured: a row
// group overfilled by 1,000 events made each checkpoint cost 1.6 times as much), so
// the Writer shapes its groups to fill the checkpoint's row groups exactly, or just
// short: a submission whose events would overflow them waits (carried) for the group
// after the checkpoint; only a bulk group (below) splits a request's events. An idle
// Writer checkpoints partly filled row groups at CheckpointInterval.

// Bulk commits. DuckDB writes the rows of a transaction that fill a row group of their
// own straight into the database file, compressed, as the row group fills (an
// optimistic write), and logs only where they are; a transaction of RowGroupRows
// events thus skips the WAL and the checkpoint (measured on a narrow table: 16,384
// rows appended and committed at 509,000 rows/s, against 137,000 in commits of 1,000
// and a checkpoint per row group; hedge's wide rows save less, as their compression
// is paid at the commit instead: 8,192 events in 0.19 s, against 0.27 s for as many
// through the WAL and a checkpoint's share). The rows past a transaction's last
// full row group would be written as a row group of their own, which each later
// checkpoint rewrites together with its neighbours to pack them (measured: checkpoints
// of 0.5–0.9 s), so a bulk group holds exactly RowGroupRows events: the submission
// that crosses that count is split, its first events committed in the bulk group and
// the rest, with its warnings and its log position, carried to the next group (split).
// So when the writer has fallen behind, by a row group of events waiting, at the start
// of a row group (one partly filled could not be packed any more), its next group is a
// bulk one. The backlog then drains at the bulk rate, with no checkpoint in front of
// the commits, and the row groups filled through the WAL before it wait for the next
// checkpoint.

// bulk reports whether the group that begins with a submission of events is a bulk
// one.
func (w *Writer) bulk(events int) bool {
	if w.lake != nil || w.eventsSinceCheckpoint%RowGroupRows != 0 || w.checkpointDue {
		return false
	}
	backlog := int64(events) + w.waiting.Load()
	for _, s := range w.carried {
		if s != nil {
			backlog += int64(len(s.batch.Events))
		}
	}
	return backlog >= RowGroupRows
}

// gatherBulk fills the group with exactly RowGroupRows events, from first on, if that
// many are waiting; a submission that crosses the count is split. If the lanes run dry
// before (the backlog is read without a lock), the group is an ordinary one, shaped as
// the row group's start allows.
func (w *Writer) gatherBulk(first *submission) {
	events := 0
	for s := first; s != nil; s = w.next() {
		if n := len(s.batch.Events); events+n > RowGroupRows {
			s = w.split(s, RowGroupRows-events)
		}
		w.add(s)
		if events += len(s.batch.Events); events == RowGroupRows {
			return
		}
	}
}

// split divides s after its first k events, 0 < k < len(s.batch.Events): it returns
// the submission of those events, and carries the submission of the rest, with s's
// warnings and its log position, to the next group: the position is recorded with the
// batch's last rows, and not at all if the first part failed (answer). s's submitter
// is answered once both are committed: with the first error, if either failed. A
// failed second part leaves the first stored, and an SDK's retry of the request (or
// the log consumer's of the message) skips those events as duplicates of their uuids.
func (w *Writer) split(s *submission, k int) *submission {
	whole := s.batch
	first, rest := *whole, *whole
	first.Events, first.Warnings, first.Position = whole.Events[:k], nil, LogPosition{}
	rest.Events = whole.Events[k:]
	head, tail := submissionPool.Get().(*submission), submissionPool.Get().(*submission)
	head.batch, tail.batch = &first, &rest
	head.rest = tail
	w.carried[whole.Lane] = tail
	go func() {
		err := <-head.done
		if tailErr := <-tail.done; err == nil {
			err = tailErr
		}
		whole.Duplicates = first.Duplicates + rest.Duplicates
		head.batch, tail.batch = nil, nil
		submissionPool.Put(head)
		submissionPool.Put(tail)
		s.done <- err
	}()
	return head
}

// room is how many more events the row groups the next checkpoint writes take.
func (w *Writer) room() int { return w.cfg.CheckpointRows - w.eventsSinceCheckpoint }

// overflows reports whether s alone would overflow the checkpoint's row groups that
// have events, or holds a row group of events or more (which DuckDB writes past the
// WAL) where one is partly filled: then the checkpoint comes first, and s goes in a
// bulk group.
func (w *Writer) overflows(s *submission) bool {
	n := len(s.batch.Events)
	return w.lake == nil && w.eventsSinceCheckpoint > 0 && (n > w.room() || n >= RowGroupRows && w.eventsSinceCheckpoint%RowGroupRows != 0)
}

// fits reports whether s's events fit in the group beside its events: in the
// checkpoint's row groups, and short of a row group of events in all, for DuckDB writes
// a transaction of a row group or more past the WAL, leaving row groups partly filled
// unless it is a bulk one (see bulk). When not, s is carried to the next group, and a
// checkpoint is due if it is the row groups that are full. While a checkpoint is due
// (one failed: DuckDB refuses while another write transaction is open), groups are not
// shaped to the row groups, so that a long transaction elsewhere cannot shrink them.
func (w *Writer) fits(s *submission, events int) bool {
	events += len(s.batch.Events)
	if w.lake != nil { // parts have no row groups to fill: FlushRows alone ends a group
		return true
	}
	if events < RowGroupRows && (w.checkpointDue || events <= w.room()) {
		return true
	}
	w.carried[s.batch.Lane] = s
	w.checkpointDue = w.checkpointDue || events > w.room()
	return false
}

// next takes the first waiting submission in lane order without blocking.
func (w *Writer) next() *submission {
	for lane := range w.lanes {
		if s := w.tryReceive(Lane(lane)); s != nil {
			return s
		}
	}
	return nil
}

func (w *Writer) tryReceive(lane Lane) *submission {
	if s := w.carried[lane]; s != nil {
		w.carried[lane] = nil
		return s
	}
	if !w.open[lane] {
		return nil
	}
	select {
	case s, ok := <-w.lanes[lane]:
		if !ok {
			w.open[lane] = false
			return nil
		}
		w.waiting.Add(-int64(len(s.batch.Events)))
		return s
	default:
		return nil
	}
}

// wait blocks until a submission arrives on any open lane (returned), or tick or
// timeout fires, or every lane is closed (nil).
func (w *Writer) wait(tick, timeout <-chan time.Time) *submission {
	for w.anyOpen() {
		var lanes [laneCount]chan *submission
		for i := range lanes {
			if w.open[i] {
				lanes[i] = w.lanes[i]
			}
		}
		var s *submission
		var ok bool
		var lane Lane
		select {
		case s, ok = <-lanes[LaneRealtime]:
			lane = LaneRealtime
		case s, ok = <-lanes[LaneHistorical]:
			lane = LaneHistorical
		case s, ok = <-lanes[LaneOverflow]:
			lane = LaneOverflow
		case <-tick:
			return nil
		case <-timeout:
			return nil
		}
		if ok {
			w.waiting.Add(-int64(len(s.batch.Events)))
			return s
		}
		w.open[lane] = false
	}
	return nil
}

func (w *Writer) anyOpen() bool {
	for _, open := range w.open {
		if open {
			return true
		}
	}
	return false
}

// gather builds the next group around first: one waiting submission from every other
// lane, then more in lane order, until the group holds FlushRows rows, the linger time
// since first has passed, or the checkpoint's row groups are full (see fits).
func (w *Writer) gather(first *submission, linger *time.Timer) {
	for i := range w.group {
		w.group[i] = w.group[i][:0]
	}
	if w.bulk(len(first.batch.Events)) {
		w.gatherBulk(first)
		return
	}
	w.add(first)
	rows, events := first.batch.rows(), len(first.batch.Events)
	for lane := range w.lanes {
		if Lane(lane) == first.batch.Lane {
			continue
		}
		if s := w.tryReceive(Lane(lane)); s != nil {
			if !w.fits(s, events) {
				return
			}
			w.add(s)
			rows, events = rows+s.batch.rows(), events+len(s.batch.Events)
		}
	}
	var expired <-chan time.Time
	if w.cfg.FlushInterval > 0 {
		linger.Reset(w.cfg.FlushInterval)
		defer linger.Stop()
		expired = linger.C
	}
	for rows < w.cfg.FlushRows {
		if w.lake == nil && !w.checkpointDue && events >= w.room() {
			w.checkpointDue = true
			return
		}
		s := w.next()
		if s == nil {
			if expired == nil {
				return
			}
			if s = w.wait(nil, expired); s == nil {
				return
			}
		}
		if !w.fits(s, events) {
			return
		}
		w.add(s)
		rows, events = rows+s.batch.rows(), events+len(s.batch.Events)
	}
}

func (w *Writer) add(s *submission) {
	w.group[s.batch.Lane] = append(w.group[s.batch.Lane], s)
}

// commitGroup commits the group in one transaction. If that fails, each submission is
// retried in a transaction of its own, so that one bad submission cannot fail the
// others that happened to share its commit.
func (w *Writer) commitGroup() {
	all := w.all[:0]
	for _, lane := range w.group {
		all = append(all, lane...)
	}
	defer func() {
		clear(all)
		w.all = all[:0]
	}()
	err := w.commit(all)
	if err != nil && len(all) > 1 {
		for i := range all {
			answer(all[i], w.commit(all[i:i+1]))
		}
		return
	}
	for _, s := range all {
		answer(s, err)
	}
}

// answer wakes s's submitter with the result of its commit. When s is the first part
// of a split submission and failed, the rest, carried to a later group (and committed
// only after this one is answered), drops the batch's position: recorded, it would tell
// the log consumer that the message is applied, events missing.
func answer(s *submission, err error) {
	if err != nil && s.rest != nil {
		s.rest.batch.Position = LogPosition{}
	}
	s.rest = nil // before done: split's goroutine then returns s to the pool
	s.done <- err
}

func (w *Writer) commit(group []*submission) (err error) {
	start := time.Now()
	defer func() {
		commitDuration.UpdateDuration(start)
		if err != nil {
			failedCommitsTotal.Inc()
			w.suspect(err)
		}
	}()
	if w.appenders == nil {
		if err := w.openAppenders(); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			w.identity.reset() // a failed commit changes no cache
		}
	}()
	// The projects' slots, as of a change (chosenSlots.mu): read once per commit, and
	// once per submission, a map lookup, for the keys of its project.
	w.slots.mu.Lock()
	defer w.slots.mu.Unlock()
	teams := *w.slots.teams.Load()
	ctx := context.Background()
	// The distinct ids the events name, read before the transaction: from the cache, or
	// in one query on another connection, of what is committed.
	if err := w.identity.resolve(ctx, groupEvents(group)); err != nil {
		return err
	}
	if err := w.exec("BEGIN TRANSACTION"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// Closing an appender flushes the rows it still holds, so close them while
			// the failed transaction is open, for ROLLBACK to discard those rows too.
			w.closeAppenders()
			if rbErr := w.exec("ROLLBACK"); rbErr != nil {
				w.log.Error("cannot roll back a failed commit", "err", rbErr)
			}
			w.recent.rollback()
		}
	}()
	a := w.appenders
	insertedAt := w.beginCommit()
	defer w.endCommit()
	duplicates := w.deduplicate(group, insertedAt)
	defer func() { // the last row's values alias a request's buffers
		clear(w.row)
		clear(w.materialize.values[:])
		w.partRow = partRow{}
		w.parts.reset()
	}()
	var events [laneCount]int
	warnings := 0
	for _, s := range group {
		b := s.batch
		b.Duplicates = 0
		lane := b.Lane.String()
		var chosen *[slotCount]string
		if t := teams[b.team()]; t != nil {
			chosen = &t.keys
		}
		for i := range b.Events {
			e := &b.Events[i]
			// A duplicate is skipped whole: its row and what it asks of persons and
			// groups, which a retry has applied already.
			duplicate := duplicates[0]
			duplicates = duplicates[1:]
			if duplicate {
				b.Duplicates++
				continue
			}
			// DuckDB's appender stores a string that is not UTF-8 as NULL, which would
			// lose the event's properties now that their columns take NULL.
			if !utf8.ValidString(e.Properties) {
				return fmt.Errorf("cannot append event %s: its properties are not valid UTF-8", e.UUID)
			}
			p, err := w.identity.process(ctx, e)
			if err != nil {
				return err
			}
			if err := w.materialize.extract(e.Properties, chosen); err != nil {
				return fmt.Errorf("cannot read the properties of event %s: %w", e.UUID, err)
			}
			if w.lake != nil {
				w.partRow = partRow{person: p.personID, insertedAt: insertedAt, groups: &p.groups, lane: lane,
					materialized: w.materialize.values[:]}
				w.parts.add(e, &w.partRow)
			} else {
				// The properties text goes to properties_zstd, the last column, and
				// properties is NULL (properties_text.go).
				w.row = append(w.row[:0], duckdb.UUID(e.UUID), e.TeamID, e.Name, e.DistinctID, duckdb.UUID(p.personID),
					e.Timestamp, insertedAt, nil,
					groupColumn(p.groups[0]), groupColumn(p.groups[1]), groupColumn(p.groups[2]), groupColumn(p.groups[3]), groupColumn(p.groups[4]),
					lane)
				w.row = append(w.row, w.materialize.values[:]...)
				w.row = append(w.row, e.Properties)
				if err := a.events.AppendRow(w.row...); err != nil {
					return fmt.Errorf("cannot append event %s: %w", e.UUID, err)
				}
			}
			if p.warning != "" {
				warning := Warning{TeamID: e.TeamID, Time: insertedAt, Type: p.warning, Event: e.Name, DistinctID: e.DistinctID}
				if err := w.appendWarning(&warning); err != nil {
					return err
				}
				warnings++
			}
		}
		for i := range b.Warnings {
			if err := w.appendWarning(&b.Warnings[i]); err != nil {
				return err
			}
		}
		events[b.Lane] += len(b.Events) - b.Duplicates
		warnings += len(b.Warnings)
	}
	if err := w.identity.flush(a, insertedAt, w.exec); err != nil {
		return err
	}
	for _, appender := range a.all() {
		if err := appender.Flush(); err != nil {
			return fmt.Errorf("cannot flush appended rows: %w", err)
		}
	}
	parts, err := w.writeParts(insertedAt, teams)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			w.lake.remove(parts)
		}
	}()
	if w.collectPositions(group); len(w.partitions) > 0 {
		if err := w.exec(recordPositions, w.partitions, w.sequences); err != nil {
			return fmt.Errorf("cannot record the log positions: %w", err)
		}
	}
	if err := w.exec("COMMIT"); err != nil {
		return err
	}
	if len(parts) > 0 {
		w.lake.change(nil, parts)
		lakePartsWritten.Add(len(parts))
	}
	w.identity.apply()
	w.recent.committed(insertedAt)
	dedupHeld.Set(float64(w.recent.n))
	for _, s := range group {
		if s.batch.rows() > 0 { // not a batch of a position alone
			w.versions.bump(s.batch.team())
		}
	}
	commitsTotal.Inc()
	warningsTotal.Add(warnings)
	stored := 0
	for lane, n := range events {
		eventsTotal[lane].Add(n)
		stored += n
	}
	if w.lake != nil {
		stored = 0 // in parts: none of the WAL's, nor of the checkpoint's row groups
	}
	w.rowsSinceCheckpoint += stored
	if stored >= RowGroupRows {
		// Written past the WAL (see bulk), in row groups of their own after those
		// filled through it, which stay for the checkpoint; a row group partly filled
		// through it stays so, and the rows past the commit's last full row group, if
		// any, begin one (a single submission of more events than RowGroupRows, when
		// the group is not a bulk one).
		bulkCommitsTotal.Inc()
		w.eventsSinceCheckpoint += stored%RowGroupRows - w.eventsSinceCheckpoint%RowGroupRows
	} else {
		w.eventsSinceCheckpoint += stored
	}
	if w.room() <= 0 {
		w.checkpointDue = true
	}
	w.rowsSinceCheckpoint += warnings + len(w.partitions)
	return nil
}

// writeParts writes the commit's parts, if the events go to the lake, and registers
// them in the commit's transaction; the caller removes them should the commit fail.
// teams are the projects' slots the commit extracted the materialized values with.
func (w *Writer) writeParts(insertedAt time.Time, teams map[int64]*teamSlots) ([]lakePart, error) {
	if w.lake == nil {
		return nil, nil
	}
	parts, err := w.parts.write(w.lake, insertedAt, w.lake.seq.Add(1), func(team int64) (keys [slotCount]string) {
		if t := teams[team]; t != nil {
			keys = t.keys
		}
		return keys
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStorage, err)
	}
	for i := range parts {
		if err := w.exec(registerPartSQL, parts[i].registerArgs(insertedAt)...); err != nil {
			w.lake.remove(parts)
			return nil, fmt.Errorf("cannot register a part of the lake: %w", err)
		}
	}
	return parts, nil
}

// recordPositions moves each partition of the lists to its sequence, unless it is
// further already: a later commit of an earlier message never moves it back.
const recordPositions = `INSERT INTO meta.log_positions SELECT unnest(?::BIGINT[]), unnest(?::UBIGINT[])
	ON CONFLICT (partition_id) DO UPDATE SET sequence = greatest(sequence, excluded.sequence)`

// LogPositions are the recorded positions of the event log: for each partition, the
// greatest sequence among the batches committed with one. It tells that every message
// up to it is applied only if the consumer submits a partition's messages one after
// the other, and submits again a message whose Submit failed before the next.
func (w *Warehouse) LogPositions(ctx context.Context) (map[int]uint64, error) {
	rows, err := w.db.QueryContext(ctx, `SELECT partition_id, sequence FROM meta.log_positions`)
	if err != nil {
		return nil, fmt.Errorf("cannot read the log positions: %w", err)
	}
	defer rows.Close()
	positions := map[int]uint64{}
	for rows.Next() {
		var partition int
		var sequence uint64
		if err := rows.Scan(&partition, &sequence); err != nil {
			return nil, fmt.Errorf("cannot read the log positions: %w", err)
		}
		positions[partition] = sequence
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot read the log positions: %w", err)
	}
	return positions, nil
}

// collectPositions puts in w.partitions and w.sequences the greatest sequence of each
// partition among the positions of the group's batches: a split batch's only in the
// part of its last rows (split). A batch whose events were all skipped as duplicates,
// or that has no rows, records its position too. The partitions are few (a linear
// search), and this is per batch, not per event.
func (w *Writer) collectPositions(group []*submission) {
	w.partitions, w.sequences = w.partitions[:0], w.sequences[:0]
	for _, s := range group {
		p := s.batch.Position
		if p.Sequence == 0 {
			continue
		}
		if i := slices.Index(w.partitions, int64(p.Partition)); i < 0 {
			w.partitions = append(w.partitions, int64(p.Partition))
			w.sequences = append(w.sequences, p.Sequence)
		} else if p.Sequence > w.sequences[i] {
			w.sequences[i] = p.Sequence
		}
	}
}

// groupEvents are the events of a group's submissions, in the order they are committed.
func groupEvents(group []*submission) iter.Seq[*Event] {
	return func(yield func(*Event) bool) {
		for _, s := range group {
			for i := range s.batch.Events {
				if !yield(&s.batch.Events[i]) {
					return
				}
			}
		}
	}
}

// deduplicate adds the group's events to the recent ones, as of a commit at
// insertedAt, and says which of them, in order, are duplicates. The events of a run of
// one project are added at once: a request's are all of one.
func (w *Writer) deduplicate(group []*submission, insertedAt time.Time) []bool {
	w.recent.expire(insertedAt)
	total := 0
	for _, s := range group {
		total += len(s.batch.Events)
	}
	dups := slices.Grow(w.duplicates[:0], total)[:total]
	done := 0
	for _, s := range group {
		events := s.batch.Events
		for start := 0; start < len(events); {
			team := events[start].TeamID
			fps := w.fingerprints[:0]
			end := start
			for ; end < len(events) && events[end].TeamID == team; end++ {
				fps = append(fps, w.recent.fingerprint(team, events[end].UUID))
			}
			w.recent.addAll(w.recent.project(team), fps, dups[done:done+len(fps)])
			w.fingerprints = fps
			done += len(fps)
			start = end
		}
	}
	w.duplicates = dups
	return dups
}

// beginCommit is the inserted_at of the rows of the commit that begins: the clock's
// time, which Committed will not report again until the commit has ended.
func (w *Writer) beginCommit() time.Time {
	w.commitMu.Lock()
	defer w.commitMu.Unlock()
	w.committing = w.cfg.Now().UTC()
	return w.committing
}

func (w *Writer) endCommit() {
	w.commitMu.Lock()
	w.committing = time.Time{}
	w.commitMu.Unlock()
}

// Committed is a time before which every event's commit has ended: each row whose
// inserted_at is earlier is committed (or was rolled back) and visible to a new read.
// Batch exports wait for it to pass the end of a window before reading the window.
func (w *Writer) Committed() time.Time {
	w.commitMu.Lock()
	defer w.commitMu.Unlock()
	if !w.committing.IsZero() {
		return w.committing
	}
	return w.cfg.Now().UTC()
}

// groupColumn is a $group_N column value: NULL when the event has no group of that type.
func groupColumn(key string) any {
	if key == "" {
		return nil
	}
	return key
}

func (w *Writer) appendWarning(warning *Warning) error {
	var details any
	if warning.Details != "" {
		details = warning.Details
	}
	err := w.appenders.warnings.AppendRow(warning.TeamID, warning.Time, warning.Type, warning.Event, warning.DistinctID, details)
	if err != nil {
		return fmt.Errorf("cannot append ingestion warning %s: %w", warning.Type, err)
	}
	return nil
}

// checkpoint writes the WAL into the database file. DuckDB refuses while another write
// transaction is open (an admin request, a chunk of a backfill): the checkpoint stays
// due, and the Writer tries again after its next group.
func (w *Writer) checkpoint() {
	start := time.Now()
	if err := w.exec("CHECKPOINT"); err != nil {
		w.log.Debug("checkpoint postponed", "err", err)
		w.suspect(err)
		return
	}
	checkpointsTotal.Inc()
	checkpointDuration.UpdateDuration(start)
	w.log.Debug("checkpoint done", "rows", w.rowsSinceCheckpoint, "took", time.Since(start))
	w.rowsSinceCheckpoint, w.eventsSinceCheckpoint, w.checkpointDue = 0, 0, false
}

// exec runs a statement on the Writer's connection, inside its transaction. Its few
// statements are prepared once, for the life of the connection: DuckDB's planning is a
// large share of a small statement's cost.
func (w *Writer) exec(query string, args ...any) error {
	stmt, ok := w.statements[query]
	if !ok {
		var err error
		if stmt, err = w.conn.Prepare(query); err != nil {
			return fmt.Errorf("cannot prepare %q: %w", strings.Fields(query)[0], err)
		}
		w.statements[query] = stmt
	}
	named := make([]driver.NamedValue, len(args))
	for i, arg := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: arg}
	}
	if _, err := stmt.(driver.StmtExecContext).ExecContext(context.Background(), named); err != nil {
		return fmt.Errorf("cannot run %q: %w", strings.Fields(query)[0], err)
	}
	return nil
}

func (w *Writer) openAppenders() error {
	var a appenders
	for _, t := range []struct {
		catalog, table string
		target         **duckdb.Appender
	}{
		{"", "events", &a.events}, {"", "ingestion_warnings", &a.warnings},
		{"", "persons", &a.persons}, {"", "person_distinct_ids", &a.distinctIDs},
		{"temp", "staged_persons", &a.stagedPersons}, {"temp", "staged_distinct_ids", &a.stagedDistinctIDs},
	} {
		appender, err := duckdb.NewAppender(w.conn, t.catalog, "", t.table)
		if err != nil {
			w.appenders = &a
			w.closeAppenders()
			return fmt.Errorf("cannot open the %s appender: %w", t.table, err)
		}
		*t.target = appender
	}
	w.appenders = &a
	return nil
}

func (w *Writer) closeAppenders() {
	if w.appenders == nil {
		return
	}
	for _, a := range w.appenders.all() {
		if a == nil {
			continue
		}
		if err := a.Close(); err != nil {
			w.log.Debug("closing an appender", "err", err)
		}
	}
	w.appenders = nil
}

func (w *Writer) release() {
	w.closeAppenders()
	for _, stmt := range w.statements {
		stmt.Close()
	}
	w.closeRender()
	if err := w.conn.Close(); err != nil {
		w.log.Error("cannot close the writer's connection", "err", err)
	}
}
