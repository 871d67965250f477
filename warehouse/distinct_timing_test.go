package warehouse

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
)

// BenchmarkDistinctIDCache measures the live heap that the distinct-id cache takes for
// each id it holds (B/id, which is also MB per million ids), filled as the Writer fills
// it, by commits of events of new ids (36-character UUID strings, as posthog-js makes
// them) through resolve, process and apply: a million ids, its size. Each operation is
// one more such commit of 10,000 ids, which replace as many in the cache.
func BenchmarkDistinctIDCache(b *testing.B) {
	const size, batch = 1_000_000, 10_000
	ctx := context.Background()
	w, err := Open(ctx, Config{Path: filepath.Join(b.TempDir(), "hedge.duckdb")})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	// An identity of its own over the database, with no persons cached, so that the
	// heap it adds is the distinct-id cache's.
	x, err := loadIdentity(ctx, w.DB(), 1, size)
	if err != nil {
		b.Fatal(err)
	}
	events := make([]Event, batch)
	all := func(yield func(*Event) bool) {
		for i := range events {
			if !yield(&events[i]) {
				return
			}
		}
	}
	commit := func() {
		for i := range events {
			events[i] = Event{TeamID: 1, Name: "e", DistinctID: uuid.NewString(), Timestamp: time.Now()}
		}
		if err := x.resolve(ctx, all); err != nil {
			b.Fatal(err)
		}
		for i := range events {
			if _, err := x.process(ctx, &events[i]); err != nil {
				b.Fatal(err)
			}
		}
		x.apply()
	}
	before := liveHeap()
	for range size / batch {
		commit()
	}
	held := liveHeap() - before
	for b.Loop() {
		commit()
	}
	if n := x.distinct.lru.len(); n != size {
		b.Fatalf("%d ids cached, want %d", n, size)
	}
	b.ReportMetric(float64(held)/size, "B/id")
}

// liveHeap is the heap's live bytes after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkDistinctIDs10M measures a warehouse that holds 10 million distinct ids
// (random 36-character UUID strings of one project, made by SQL, not by the Writer):
// /open is warehouse.Open with the default Config (ms/open), which reads no distinct id;
// /new-ids is BenchmarkWriterAppender10k/new-ids over them (rows/s): the stored filter,
// whose fill after Open is waited for untimed (and logged), tells the new ids apart, so
// commits read none. Its first commit, untimed, loads what it needs of the table's
// UNIQUE index, which the default MemoryLimit may not hold at this size: /new-ids runs
// with 2GB.
func BenchmarkDistinctIDs10M(b *testing.B) {
	const ids = 10_000_000
	start := time.Now()
	path := storedIDs(b, ids)
	b.Logf("%d distinct ids stored in %v", ids, time.Since(start))
	ctx := context.Background()
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			w, err := Open(ctx, Config{Path: path})
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
	})
	b.Run("new-ids", func(b *testing.B) {
		w, err := Open(ctx, Config{Path: path, MemoryLimit: "2GB"})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		filling := time.Now()
		<-w.stored.done
		b.Logf("the stored filter filled in %v (ready: %v)", time.Since(filling), w.stored.ready.Load())
		events, size := benchEvents(b, 10000, false)
		commit := func() {
			for i := range events {
				events[i].UUID = uuid.Must(uuid.NewV7())
			}
			if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
				b.Fatal(err)
			}
		}
		renameIDs(events)
		commit()
		b.SetBytes(size)
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			renameIDs(events)
			b.StartTimer()
			commit()
		}
		b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "rows/s")
	})
}

// storedIDs makes a warehouse file whose person_distinct_ids holds n ids, and returns
// its path.
func storedIDs(b *testing.B, n int) string {
	path := filepath.Join(b.TempDir(), "hedge.duckdb")
	// Building the table's UNIQUE index takes more memory than the default MemoryLimit.
	w, err := Open(context.Background(), Config{Path: path, MemoryLimit: "2GB"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for i := 0; i < n; i += 1_000_000 {
		_, err := w.DB().Exec(`INSERT INTO person_distinct_ids SELECT 1, uuid()::VARCHAR, uuid(), 0, now() FROM range(?)`, min(1_000_000, n-i))
		if err != nil {
			b.Fatal(err)
		}
	}
	return path
}
