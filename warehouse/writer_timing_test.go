package warehouse

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/bench/gen"
)

// benchEvents returns n realistic events (bench/gen) as the edge would hand them over.
func benchEvents(tb testing.TB, n int) ([]Event, int64) {
	tb.Helper()
	g := gen.New(gen.Config{Seed: 42})
	events := make([]Event, n)
	var size int64
	now := time.Now().UTC()
	for i := range events {
		var e struct {
			UUID       uuid.UUID       `json:"uuid"`
			Event      string          `json:"event"`
			Properties json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(g.Event(nil, "phc_bench", now), &e); err != nil {
			tb.Fatal(err)
		}
		var props struct {
			DistinctID string `json:"distinct_id"`
		}
		json.Unmarshal(e.Properties, &props)
		events[i] = Event{UUID: e.UUID, TeamID: 1, Name: e.Event, DistinctID: props.DistinctID, Timestamp: now, Properties: string(e.Properties)}
		size += int64(len(e.Properties) + len(e.Event) + len(props.DistinctID) + 16 + 8 + 8)
	}
	return events, size
}

// BenchmarkWriterAppender10k commits 10,000 events per operation through the Writer
// (the duckdb-go Appender inside one transaction): the DuckDB write ceiling that the
// end-to-end figures are compared with.
func BenchmarkWriterAppender10k(b *testing.B) {
	events, size := benchEvents(b, 10000)
	w, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "hedge.duckdb"), FlushRows: 10000})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range events {
			events[i].UUID = uuid.Must(uuid.NewV7())
		}
		if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "rows/s")
}
