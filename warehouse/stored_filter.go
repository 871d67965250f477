package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"hash/maphash"
	"log/slog"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// storedFilter says of a distinct id that it is certainly not stored, so that the writer
// need not look for it: a Bloom filter of every stored distinct id of every project.
// Most distinct ids that the distinct-id cache lacks are new ones (a new visitor), and
// without it each commit looked them all up in person_distinct_ids, whose (team, id)
// index DuckDB does not use for such a read: a scan of the whole table (at 10M stored
// ids, new-id commits went from 17.6k to 7.9k rows/s).
//
// It holds about storedFilterBitsPerID bits per id (1% false positives) up to
// storedFilterMaxBytes; past that many ids more of them are looked up (a false
// positive costs a read, never a wrong answer). It never says "not stored" of a stored
// id: it is filled from the table once at start, in the background, and every commit
// adds the ids it stored (from before the fill reads the table, so an id committed
// meanwhile is in one or the other). Until the fill is done it answers "maybe" to
// everything. Ids are only ever added: an id whose rows go stays "maybe". Words are
// only ever OR-ed into, so concurrent adds and reads need nothing but atomics.
type storedFilter struct {
	seed  maphash.Seed
	words []atomic.Uint64
	mask  uint64 // of a bit's index: len(words)*64 - 1
	ready atomic.Bool
	// stop ends the fill early, and done is closed when it has ended.
	stop context.CancelFunc
	done chan struct{}
}

const (
	storedFilterBitsPerID = 10
	storedFilterHashes    = 7
	storedFilterMinBytes  = 1 << 20  // 800k ids at 1%
	storedFilterMaxBytes  = 64 << 20 // 53M ids at 1%
)

var storedFilterFills = metrics.NewCounter(`hedge_writer_distinct_filter_fills_total`)

// newStoredFilter sizes a filter for about twice the ids stored now and starts filling
// it from db, logging to log how long that took.
func newStoredFilter(ctx context.Context, db *sql.DB, log *slog.Logger) (*storedFilter, error) {
	var stored int64
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM person_distinct_ids`).Scan(&stored); err != nil {
		return nil, fmt.Errorf("cannot count the stored distinct ids: %w", err)
	}
	size := min(max(2*stored*storedFilterBitsPerID/8, storedFilterMinBytes), storedFilterMaxBytes)
	size = 1 << bits.Len64(uint64(size-1)) // a power of two, for the mask
	f := &storedFilter{seed: maphash.MakeSeed(), words: make([]atomic.Uint64, size/8), done: make(chan struct{})}
	f.mask = uint64(len(f.words))*64 - 1
	fill, stop := context.WithCancel(context.Background())
	f.stop = stop
	go f.fill(fill, db, log)
	return f, nil
}

// fill adds every stored id and then marks the filter ready. A failure leaves it not
// ready: every id is then looked up, as without a filter.
func (f *storedFilter) fill(ctx context.Context, db *sql.DB, log *slog.Logger) {
	defer close(f.done)
	start := time.Now()
	rows, err := db.QueryContext(ctx, `SELECT team_id, distinct_id FROM person_distinct_ids`)
	if err != nil {
		log.Warn("cannot read the stored distinct ids; every new one is looked up", "err", err)
		return
	}
	defer rows.Close()
	n := 0
	var k distinctKey
	for rows.Next() {
		if err := rows.Scan(&k.team, &k.id); err != nil {
			log.Warn("cannot read the stored distinct ids; every new one is looked up", "err", err)
			return
		}
		f.add(k)
		n++
	}
	if err := rows.Err(); err != nil {
		if ctx.Err() == nil {
			log.Warn("cannot read the stored distinct ids; every new one is looked up", "err", err)
		}
		return
	}
	f.ready.Store(true)
	storedFilterFills.Inc()
	log.Debug("distinct-id filter filled", "ids", n, "bytes", len(f.words)*8, "took", time.Since(start).Round(time.Millisecond))
}

// close ends the fill, if it still runs, and waits for it: before the database closes.
func (f *storedFilter) close() {
	f.stop()
	<-f.done
}

// add records k as stored. Safe for concurrent use.
func (f *storedFilter) add(k distinctKey) {
	h1, h2 := f.hashes(k)
	for i := range uint64(storedFilterHashes) {
		bit := (h1 + i*h2) & f.mask
		w := &f.words[bit/64]
		if m := uint64(1) << (bit % 64); w.Load()&m == 0 {
			w.Or(m)
		}
	}
}

// absent reports whether k is certainly not stored: false while the fill runs.
func (f *storedFilter) absent(k distinctKey) bool {
	if !f.ready.Load() {
		return false
	}
	h1, h2 := f.hashes(k)
	for i := range uint64(storedFilterHashes) {
		bit := (h1 + i*h2) & f.mask
		if f.words[bit/64].Load()&(uint64(1)<<(bit%64)) == 0 {
			return true
		}
	}
	return false
}

// hashes are the two hashes of k whose combinations place its bits; the second is odd,
// so that its multiples reach every bit.
func (f *storedFilter) hashes(k distinctKey) (uint64, uint64) {
	h := maphash.Comparable(f.seed, k)
	return h, bits.RotateLeft64(h, 32) | 1
}
