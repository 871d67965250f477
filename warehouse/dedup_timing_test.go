package warehouse

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/testlog"
)

// BenchmarkRecentEventsAdd is the deduplication cost per event of a commit of 10,000
// new events (recentEvents.addAll, with their fingerprints), the set holding few
// events (100,000: the table fits the CPU's caches) and at the default bound (each
// event forgets the oldest held, probing a table far larger than the caches). Compare
// with the time per event of BenchmarkWriterAppender10k. On a shared machine, the CPU
// time per event (of the process: the benchmark's goroutine and the runtime's) varies
// less than the elapsed time.
func BenchmarkRecentEventsAdd(b *testing.B) {
	for _, sc := range []struct {
		name string
		held int
	}{{"few", 100_000}, {"bound", DefaultDedupEvents}} {
		b.Run(sc.name, func(b *testing.B) {
			r := newRecentEvents(DefaultDedupWindow, DefaultDedupEvents, testlog.New())
			fill(r, sc.held)
			id := uuid.Must(uuid.NewV7())
			fps, dups := make([]uint64, 10000), make([]bool, 10000)
			n := 0
			start := cpuTime(b)
			for b.Loop() {
				for i := range fps {
					n++
					binary.BigEndian.PutUint32(id[12:], uint32(n))
					fps[i] = r.fingerprint(1, id)
				}
				r.addAll(r.project(1), fps, dups)
			}
			events := float64(b.N * len(fps))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
			b.ReportMetric(float64(cpuTime(b)-start)/events, "cpu-ns/event")
		})
	}
}

// BenchmarkWriterDedup is BenchmarkWriterAppender10k/persons on two warehouses, one
// with few events held for deduplication and one with the set at its bound, each
// operation committing to both in turn (first one, then the other), so that the
// drifts of a shared machine's speed fall on both alike: what a full set costs the
// writer, as a ratio of CPU time and of elapsed time. Neither checkpoints, which would
// stall one and not the other.
func BenchmarkWriterDedup(b *testing.B) {
	events, _ := benchEvents(b, 10000, false)
	var ws [2]*Warehouse
	for i := range ws {
		w, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), fmt.Sprint(i, ".duckdb")), FlushRows: 10000, CheckpointRows: 1 << 40})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
			b.Fatal(err)
		}
		ws[i] = w
	}
	// The writer is idle: Submit has returned, and the next one happens after.
	fill(ws[1].writer.recent, DefaultDedupEvents)
	var elapsed, cpu [2]time.Duration
	b.ResetTimer()
	for n := range b.N {
		for k := range 2 {
			i := (n + k) % 2
			for j := range events {
				events[j].UUID = uuid.Must(uuid.NewV7())
			}
			start, startCPU := time.Now(), cpuTime(b)
			if err := ws[i].Writer().Submit(&Batch{Events: events}); err != nil {
				b.Fatal(err)
			}
			elapsed[i] += time.Since(start)
			cpu[i] += cpuTime(b) - startCPU
		}
	}
	b.ReportMetric(float64(b.N*len(events))/elapsed[0].Seconds(), "few-rows/s")
	b.ReportMetric(float64(b.N*len(events))/elapsed[1].Seconds(), "bound-rows/s")
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "bound/few-cpu")
	b.ReportMetric(float64(elapsed[1])/float64(elapsed[0]), "bound/few-time")
}

// cpuTime is the CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// fill adds n events of uuids of their own, of project 2, to r.
func fill(r *recentEvents, n int) {
	id := uuid.New()
	p := r.project(2)
	for i := range n {
		binary.BigEndian.PutUint32(id[12:], uint32(i))
		r.add(p, r.fingerprint(2, id))
	}
	r.committed(time.Now())
}

// BenchmarkRecentEventsLoad is what Open spends rebuilding the deduplication set from
// the events table: a window of events up to the bound, and one of twice the bound, of
// which the newest half is loaded.
func BenchmarkRecentEventsLoad(b *testing.B) {
	for _, sc := range []struct{ events, bound int }{
		{1_000_000, DefaultDedupEvents}, {DefaultDedupEvents, DefaultDedupEvents}, {2 * DefaultDedupEvents, DefaultDedupEvents},
	} {
		b.Run(fmt.Sprintf("%d-of-%d", sc.events, sc.bound), func(b *testing.B) {
			cfg := Config{Path: filepath.Join(b.TempDir(), "hedge.duckdb"), DedupEvents: sc.bound}
			w, err := Open(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			// Ten projects, a commit of 1,000 events a second.
			_, err = w.DB().Exec(`INSERT INTO events SELECT uuid(), i % 10, 'e', 'd', NULL, now(),
				now() - to_seconds(($1 - i) // 1000), '{}', NULL, NULL, NULL, NULL, NULL, 'realtime' FROM range($1) t(i)`, sc.events)
			if err != nil {
				b.Fatal(err)
			}
			cfg.setDefaults()
			want := min(sc.events, sc.bound)
			for b.Loop() {
				start := time.Now()
				r, err := loadRecentEvents(context.Background(), w.DB(), nil, &cfg)
				if err != nil {
					b.Fatal(err)
				}
				if r.n != want {
					b.Fatalf("loaded %d events, want %d", r.n, want)
				}
				b.ReportMetric(float64(want)/time.Since(start).Seconds(), "events/s")
			}
		})
	}
}
