package warehouse

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkIdentity10k runs person processing alone (identity.resolve of 10,000
// realistic events, identity.process for each, then apply, as a successful commit does,
// evicting from the lookups what changed) without writing anything: the cost of the
// identity model that BenchmarkWriterAppender10k/persons pays on top of /personless.
// The persons exist before timing, as in a running system.
func BenchmarkIdentity10k(b *testing.B) {
	for _, personless := range []bool{false, true} {
		name := "persons"
		if personless {
			name = "personless"
		}
		b.Run(name, func(b *testing.B) {
			events, size := benchEvents(b, 10000, personless)
			ctx := context.Background()
			w, err := Open(ctx, Config{Path: filepath.Join(b.TempDir(), "hedge.duckdb")})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			// An identity of its own over the database: the Writer's belongs to its goroutine.
			x, err := loadIdentity(ctx, w.DB(), DefaultPersonCacheSize, DefaultDistinctIDCacheSize)
			if err != nil {
				b.Fatal(err)
			}
			// With lookups attached, as the Writer's identity has them: apply evicts what
			// each round changed.
			if x.lookups, err = newLookups(ctx, w.connector, x, DefaultPropertiesCacheSize); err != nil {
				b.Fatal(err)
			}
			defer x.lookups.close()
			all := func(yield func(*Event) bool) {
				for i := range events {
					if !yield(&events[i]) {
						return
					}
				}
			}
			round := func() {
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
			round()
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				round()
			}
			b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "events/s")
		})
	}
}
