package warehouse

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math/bits"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/google/uuid"
)

var (
	dedupEvictedTotal = metrics.NewCounter(`hedge_writer_dedup_evicted_total`)
	dedupHeld         = metrics.NewGauge(`hedge_writer_dedup_events`, nil)
)

// recentEvents is the set of (project, uuid) of the events committed within the
// deduplication window: the Writer skips an event whose uuid its project already
// stored, so that a request retried after its 200 was lost (a timeout, a dropped
// connection, hedge killed between commit and answer: SDKs resend the same uuids)
// stores nothing twice. It belongs to the writer goroutine.
//
// Decision: an exact set of 64-bit fingerprints in memory, rather than a lookup in the
// events table. DuckDB has no cheap point lookup on events without an index, and an
// index (ART, or a UNIQUE constraint) costs every append and memory for every row ever
// stored, not for a window; the set costs a hash and a probe per event (and one to
// forget the oldest at the bound), no SQL, and is rebuilt by Open from the events
// committed within the window (loadRecentEvents), so it holds across restarts. A
// smaller filter whose positives a query confirms was not chosen: the query's pruning
// would rest on the event's timestamp, which the edge corrects by the request's
// sent_at and its own clock, so a retry's differs from the stored one. Measured on the 2-core development machine: nothing measurable while few events are
// held, about 2% of the writer's CPU at the default bound (BenchmarkWriterDedup,
// BenchmarkRecentEventsAdd), and 2.3 s of start-up for 4 million events
// (BenchmarkRecentEventsLoad).
//
// Bounds: a fingerprint is held from its commit for at least window, and at most
// window/1024 longer (it expires with its mark, see marks), unless max newer ones
// arrive first: the set holds at most max, the oldest leaving first, so under more than
// max events per window the window shrinks to the last max events. Each fingerprint
// forgotten that way is counted in hedge_writer_dedup_evicted_total, and the first is
// logged. Memory: at most 4/3 of a slot and one FIFO entry, 8 bytes each, per event
// held: 19 bytes, 75 MB at the default 4 million.
//
// Collisions: two events are one when their fingerprints are equal. A fingerprint is
// maphash of team and uuid under a seed drawn at each start, so no client can aim a
// collision at another's events. A new event matches one of the n held with
// probability n/2^64: at the default bound (< 2^22) under 2^-42 per event, one event
// lost in expectation per 4.4e12 stored (14 years at 10,000 events/s).
//
// A commit adds its events' fingerprints in order before it appends them, so a later
// event of the same commit (the same request, or another in its group) is a duplicate
// too; a failed commit takes them back (rollback): they are the newest, at the back of
// the FIFO. (What it made the set forget at the bound stays forgotten.)
type recentEvents struct {
	seed maphash.Seed
	// slots is an open-addressing table with linear probing of the fingerprints held, 0
	// marking an empty slot (no fingerprint is 0). At most 3/4 of it is used, so a probe
	// that finds nothing reads some 8 slots, one or two cache lines.
	slots []uint64
	// fifo holds the same fingerprints in commit order, as a ring: fifo[head] is the
	// oldest of the n held. popped counts the fingerprints ever taken from its front, so
	// popped+n numbers the next one added (its sequence number).
	fifo    []uint64
	head, n int
	popped  uint64
	// marks are in order; each says that every fingerprint numbered below seq was
	// committed at or before at. The last is the last commit's, and consecutive ones are
	// less than grain apart unless the later stands for a single commit, so a
	// fingerprint that expires with the first mark at or before now-window has been held
	// at least window and less than window+grain.
	marks  []dedupMark
	window time.Duration
	grain  time.Duration
	max    int
	log    *slog.Logger
	full   bool // the bound has forgotten a fingerprint (logged once)
	// readAhead is a sum of what addAll reads ahead, kept so that the reads are.
	readAhead uint64
}

type dedupMark struct {
	at  time.Time
	seq uint64
}

const minDedupSlots = 1024

func newRecentEvents(window time.Duration, bound int, log *slog.Logger) *recentEvents {
	return &recentEvents{
		seed:   maphash.MakeSeed(),
		slots:  make([]uint64, min(minDedupSlots, maxDedupSlots(bound))),
		window: window,
		grain:  window / 1024,
		max:    bound,
		log:    log,
	}
}

// maxDedupSlots is the table size that holds bound fingerprints at 3/4 load.
func maxDedupSlots(bound int) int { return (bound*4 + 2) / 3 }

// fingerprint is the set's key of one event.
func (r *recentEvents) fingerprint(team int64, id uuid.UUID) uint64 {
	var key [24]byte
	binary.LittleEndian.PutUint64(key[:8], uint64(team))
	copy(key[8:], id[:])
	if fp := maphash.Bytes(r.seed, key[:]); fp != 0 {
		return fp
	}
	return 1
}

// add holds fp and reports false, or reports true when fp is held already: the
// event is a duplicate.
func (r *recentEvents) add(fp uint64) bool {
	i := r.home(fp)
	for ; r.slots[i] != 0; i = r.next(i) {
		if r.slots[i] == fp {
			return true
		}
	}
	if r.n == r.max || r.n == len(r.fifo) || (r.n+1)*4 > len(r.slots)*3 {
		r.makeRoom()
		i = r.free(fp)
	}
	r.slots[i] = fp
	r.fifo[r.ring(r.n)] = fp
	r.n++
	return false
}

// makeRoom forgets the oldest fingerprint at the bound, or grows the FIFO or the table.
func (r *recentEvents) makeRoom() {
	if r.n == r.max {
		r.popFront()
		dedupEvictedTotal.Inc()
		if !r.full {
			r.full = true
			r.log.Warn("the deduplication set is full: a retried event is now recognised only among the last events, "+
				"less than the window (raise --dedup-events)", "events", r.max, "window", r.window)
		}
		return
	}
	if r.n == len(r.fifo) {
		fifo := make([]uint64, min(max(2*len(r.fifo), minDedupSlots), r.max))
		for k := range r.n {
			fifo[k] = r.fifo[r.ring(k)]
		}
		r.fifo, r.head = fifo, 0
	}
	if (r.n+1)*4 > len(r.slots)*3 {
		r.slots = make([]uint64, min(2*len(r.slots), maxDedupSlots(r.max)))
		for k := range r.n {
			fp := r.fifo[r.ring(k)]
			r.slots[r.free(fp)] = fp
		}
	}
}

// reserve sizes an empty set for n fingerprints, so that adding them grows nothing.
func (r *recentEvents) reserve(n int) {
	r.fifo = make([]uint64, min(max(n, minDedupSlots), r.max))
	r.slots = make([]uint64, max(len(r.slots), min(n*4/3+1, maxDedupSlots(r.max))))
}

// home is fp's first slot: fp scaled to the table's size (its high bits).
func (r *recentEvents) home(fp uint64) int {
	hi, _ := bits.Mul64(fp, uint64(len(r.slots)))
	return int(hi)
}

// free is the slot where fp goes: the first empty one from its home on.
func (r *recentEvents) free(fp uint64) int {
	i := r.home(fp)
	for r.slots[i] != 0 {
		i = r.next(i)
	}
	return i
}

func (r *recentEvents) next(i int) int {
	if i++; i == len(r.slots) {
		return 0
	}
	return i
}

// ring is the FIFO index of the k-th oldest fingerprint held.
func (r *recentEvents) ring(k int) int {
	if k += r.head; k >= len(r.fifo) {
		return k - len(r.fifo)
	}
	return k
}

// remove takes a held fp out of the table by backward shift: each later entry of its
// run that may sit in the hole moves back into it, so no probe stops early at a hole.
func (r *recentEvents) remove(fp uint64) {
	i := r.home(fp)
	for r.slots[i] != fp {
		i = r.next(i)
	}
	for j := r.next(i); r.slots[j] != 0; j = r.next(j) {
		// slots[j] may move to i when its home is not cyclically within (i, j].
		h := r.home(r.slots[j])
		if (i < j && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			r.slots[i] = r.slots[j]
			i = j
		}
	}
	r.slots[i] = 0
}

func (r *recentEvents) popFront() {
	r.remove(r.fifo[r.head])
	r.head = r.ring(1)
	r.n--
	r.popped++
}

// seq is the sequence number of the next fingerprint added.
func (r *recentEvents) seq() uint64 { return r.popped + uint64(r.n) }

// addAll is add of each of fps in turn, into dups. It reads ahead: the home slots of a
// block of fingerprints, and those of the oldest held ones that the block forgets at the
// bound, are loaded together before the block is added, so that their cache misses
// overlap rather than stall one after the other. A full table is far larger than the
// CPU's caches: measured at the default bound on the 2-core development machine, 390 ns
// of CPU per event without, 255 ns with blocks of 16 (8: 295, 32: 275).
func (r *recentEvents) addAll(fps []uint64, dups []bool) {
	const block = 16
	for start := 0; start < len(fps); start += block {
		ahead := fps[start:min(start+block, len(fps))]
		var sum uint64
		for _, fp := range ahead {
			sum += r.slots[r.home(fp)]
		}
		for k := range min(r.n+len(ahead)-r.max, r.n) {
			sum += r.slots[r.home(r.fifo[r.ring(k)])]
		}
		// The compiler drops a load whose value is never used.
		r.readAhead += sum
		for i, fp := range ahead {
			dups[start+i] = r.add(fp)
		}
	}
}

// rollback forgets the fingerprints numbered from seq on: those of a failed commit.
func (r *recentEvents) rollback(seq uint64) {
	for r.n > 0 && r.seq() > seq {
		r.n--
		r.remove(r.fifo[r.ring(r.n)])
	}
}

// committed records that every fingerprint held was committed at or before at.
func (r *recentEvents) committed(at time.Time) {
	m := dedupMark{at: at, seq: r.seq()}
	if k := len(r.marks); k > 0 {
		// inserted_at comes from the wall clock, which may step back: the marks stay in
		// order, and a fingerprint is held longer rather than shorter.
		if m.at.Before(r.marks[k-1].at) {
			m.at = r.marks[k-1].at
		}
		if k >= 2 && m.at.Sub(r.marks[k-2].at) < r.grain {
			r.marks[k-1] = m
			return
		}
	}
	r.marks = append(r.marks, m)
}

// expire forgets the fingerprints committed at or before now-window.
func (r *recentEvents) expire(now time.Time) {
	cutoff := now.Add(-r.window)
	k := 0
	for k < len(r.marks) && !r.marks[k].at.After(cutoff) {
		k++
	}
	if k == 0 {
		return
	}
	for r.n > 0 && r.popped < r.marks[k-1].seq {
		r.popFront()
	}
	r.marks = r.marks[k:]
}

// loadRecentEvents builds the set from the events committed within the window before
// now: its newest max, when there are more.
func loadRecentEvents(ctx context.Context, db *sql.DB, cfg *Config) (*recentEvents, error) {
	r := newRecentEvents(cfg.DedupWindow, cfg.DedupEvents, cfg.Logger)
	from := cfg.Now().UTC().Add(-cfg.DedupWindow)
	var count int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE inserted_at >= ?`, from).Scan(&count); err != nil {
		return nil, fmt.Errorf("cannot count the events of the deduplication window: %w", err)
	}
	if count > r.max {
		// The window holds more than max events: load from the minute that holds the
		// max-th newest, and the set forgets the few extra ones, oldest first. Counting
		// by minute reads one column, where sorting to find that event would hold max
		// of them.
		minute, err := newestMinutes(ctx, db, from, r.max)
		if err != nil {
			return nil, err
		}
		if minute.After(from) {
			from = minute
		}
	}
	r.reserve(min(count, r.max))
	// No ORDER BY: a plain scan returns the rows in the order they were appended (DuckDB's
	// preserve_insertion_order, on by default), which is commit order; were it not, the
	// marks would only hold fingerprints longer (see committed), and a sort of millions
	// of rows costs a second or more of the start.
	rows, err := db.QueryContext(ctx, `SELECT team_id, uuid, inserted_at FROM events WHERE inserted_at >= ?`, from)
	if err != nil {
		return nil, fmt.Errorf("cannot load the uuids of the deduplication window: %w", err)
	}
	defer rows.Close()
	// Added in blocks, as commits add theirs (addAll), each block taken as committed at
	// its last row's time: a block spans less than grain, so that its first row is not
	// held past window+grain.
	fps, dups := make([]uint64, 0, 4096), make([]bool, 4096)
	var first, last time.Time
	flush := func() {
		r.addAll(fps, dups)
		r.committed(last)
		fps = fps[:0]
	}
	for rows.Next() {
		var team int64
		var id uuid.UUID
		var at time.Time
		if err := rows.Scan(&team, &id, &at); err != nil {
			return nil, fmt.Errorf("cannot load the uuids of the deduplication window: %w", err)
		}
		if len(fps) > 0 && (len(fps) == cap(fps) || at.Sub(first) >= r.grain) {
			flush()
		}
		if len(fps) == 0 {
			first = at
		}
		fps, last = append(fps, r.fingerprint(team, id)), at
	}
	if len(fps) > 0 {
		flush()
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cannot load the uuids of the deduplication window: %w", err)
	}
	dedupHeld.Set(float64(r.n))
	return r, nil
}

// newestMinutes is the start of the newest minute from which the events committed
// since from number at least n. Minutes are counted by epoch arithmetic: date_trunc of
// a TIMESTAMPTZ goes through the time zone's calendar, some 50 times slower (8M events:
// 4.7 s against 90 ms).
func newestMinutes(ctx context.Context, db *sql.DB, from time.Time, n int) (time.Time, error) {
	rows, err := db.QueryContext(ctx, `SELECT epoch_us(inserted_at) // 60000000 AS minute, count(*) FROM events
		WHERE inserted_at >= ? GROUP BY minute ORDER BY minute DESC`, from)
	if err != nil {
		return time.Time{}, fmt.Errorf("cannot count the events of the deduplication window: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var minute int64
		var count int
		if err := rows.Scan(&minute, &count); err != nil {
			return time.Time{}, fmt.Errorf("cannot count the events of the deduplication window: %w", err)
		}
		if n -= count; n <= 0 {
			return time.Unix(minute*60, 0).UTC(), nil
		}
	}
	if err := rows.Err(); err != nil {
		return time.Time{}, fmt.Errorf("cannot count the events of the deduplication window: %w", err)
	}
	return from, nil
}
