package warehouse

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/bench/gen"
)

// benchEvents returns n realistic events (bench/gen) as the edge hands them over, with
// what they ask of the identity model; personless makes every one of them personless.
func benchEvents(tb testing.TB, n int, personless bool) ([]Event, int64) {
	tb.Helper()
	g := gen.New(gen.Config{Seed: 42, PersonlessShare: 0.3})
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
		var p struct {
			DistinctID string          `json:"distinct_id"`
			Personless *bool           `json:"$process_person_profile"`
			Set        json.RawMessage `json:"$set"`
			SetOnce    json.RawMessage `json:"$set_once"`
			Anon       string          `json:"$anon_distinct_id"`
			Alias      string          `json:"alias"`
			Groups     json.RawMessage `json:"$groups"`
			GroupType  string          `json:"$group_type"`
			GroupKey   string          `json:"$group_key"`
			GroupSet   json.RawMessage `json:"$group_set"`
		}
		json.Unmarshal(e.Properties, &p)
		events[i] = Event{
			UUID: e.UUID, TeamID: 1, Name: e.Event, DistinctID: p.DistinctID, Timestamp: now, Properties: string(e.Properties),
			Personless: personless || (p.Personless != nil && !*p.Personless),
			Set:        string(p.Set), SetOnce: string(p.SetOnce), AnonDistinctID: p.Anon, Alias: p.Alias,
			Groups: string(p.Groups), GroupType: p.GroupType, GroupKey: p.GroupKey, GroupSet: string(p.GroupSet),
		}
		size += int64(len(e.Properties) + len(e.Event) + len(p.DistinctID) + 16 + 8 + 8)
	}
	return events, size
}

// renameIDs gives the events' distinct ids (their own, $anon_distinct_id and alias) new
// random ones, the same for the same id: the ids of new visitors, which no commit has
// seen, and which DuckDB cannot tell apart from the stored ones by a row group's range.
func renameIDs(events []Event) {
	renamed := map[string]string{}
	rename := func(id *string) {
		if *id == "" {
			return
		}
		r, ok := renamed[*id]
		if !ok {
			r = uuid.NewString()
			renamed[*id] = r
		}
		*id = r
	}
	for i := range events {
		rename(&events[i].DistinctID)
		rename(&events[i].AnonDistinctID)
		rename(&events[i].Alias)
	}
}

// BenchmarkWriterAppender10k commits 10,000 events per operation through the Writer
// (the duckdb-go Appender inside one transaction), with person processing as the
// events ask (bench/gen: 30% personless, identify, alias and group events) and with
// every event personless: the write ceiling that end-to-end figures are compared with,
// and the cost of the identity model. /persons and /personless commit the same ids
// every time, which the Writer holds in memory; /new-ids gives every commit ids of its
// own (renameIDs), which the Writer reads from the database, in one query per commit.
// /chosen-8 is /persons for a project that chose benchChosen to materialize. /lake is
// /persons with the events written as a Parquet part per commit (Config.LakeDir).
func BenchmarkWriterAppender10k(b *testing.B) {
	for _, bench := range []struct {
		name                    string
		personless, renew, lake bool
		chosen                  []string
	}{
		{"persons", false, false, false, nil},
		{"personless", true, false, false, nil},
		{"new-ids", false, true, false, nil},
		{"chosen-8", false, false, false, benchChosen[:]},
		{"lake", false, false, true, nil},
	} {
		b.Run(bench.name, func(b *testing.B) {
			events, size := benchEvents(b, 10000, bench.personless)
			cfg := Config{Path: filepath.Join(b.TempDir(), "hedge.duckdb"), FlushRows: 10000}
			if bench.lake {
				cfg.LakeDir = filepath.Join(b.TempDir(), "lake")
				cfg.Lake.CompactInterval = time.Hour
			}
			w, err := Open(context.Background(), cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if err := w.SetMaterializedProperties(context.Background(), 1, bench.chosen); err != nil {
				b.Fatal(err)
			}
			// The first round creates the persons; the timed rounds see them again, as a
			// running system does.
			if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if bench.renew {
					b.StopTimer()
					renameIDs(events)
					b.StartTimer()
				}
				for i := range events {
					events[i].UUID = uuid.Must(uuid.NewV7())
				}
				if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "rows/s")
			if bench.lake {
				var bytes, rows int64
				for _, p := range w.lake.allParts() {
					bytes, rows = bytes+p.Bytes, rows+p.Rows
				}
				b.ReportMetric(float64(bytes)/float64(rows), "part-bytes/row")
			}
		})
	}
}

// checkpointWAL is the WAL BenchmarkCheckpoint checkpoints: about 220,000 events of
// bench/gen, a quarter of wal_autocheckpoint's default.
const checkpointWAL = 256 << 20

// BenchmarkCheckpoint times DuckDB's CHECKPOINT of a WAL of checkpointWAL bytes of
// realistic events (bench/gen, committed 1,000 at a time through the Writer, which
// is kept from checkpointing on its own): the Writer checkpoints on its own connection,
// so each of its commits waits for the whole checkpoint (checkpoint-ms). It also times
// 10,000 events committed 1,000 at a time while that checkpoint runs on another
// connection (stalled-ms), beside the same without (commit-ms), and reports the
// database file's bytes per event once checkpointed.
func BenchmarkCheckpoint(b *testing.B) {
	ctx := context.Background()
	events, _ := benchEvents(b, 10000, false)
	path := filepath.Join(b.TempDir(), "hedge.duckdb")
	w, err := Open(ctx, Config{Path: path, FlushRows: len(events), WALAutocheckpoint: "64GB",
		CheckpointRows: math.MaxInt, CheckpointInterval: 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	// The events go in requests of 1,000, each its own commit through the WAL: a
	// request of a row group or more would be written past it (a bulk commit).
	submit := func() time.Duration {
		for i := range events {
			events[i].UUID = uuid.Must(uuid.NewV7())
		}
		start := time.Now()
		for i := 0; i < len(events); i += 1000 {
			if err := w.Writer().Submit(&Batch{Events: events[i:min(i+1000, len(events))]}); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	fileSize := func(name string) int64 {
		info, err := os.Stat(name)
		if err != nil {
			b.Fatal(err)
		}
		return info.Size()
	}
	var checkpoints, commits, stalls time.Duration
	var wal int64
	committed := 0
	b.StopTimer()
	for range b.N {
		for fileSize(path+".wal") < checkpointWAL {
			submit()
			committed += len(events)
		}
		commits += submit()
		committed += len(events)
		wal += fileSize(path + ".wal")
		b.StartTimer()
		done := make(chan error, 1)
		go func() {
			start := time.Now()
			_, err := w.DB().ExecContext(ctx, "CHECKPOINT")
			checkpoints += time.Since(start)
			done <- err
		}()
		time.Sleep(100 * time.Millisecond) // the checkpoint is under way
		stalls += submit()
		committed += len(events)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
	}
	// The commit made during the last checkpoint is still in the WAL.
	if _, err := w.DB().ExecContext(ctx, "CHECKPOINT"); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(checkpoints.Milliseconds())/n, "checkpoint-ms")
	b.ReportMetric(float64(commits.Milliseconds())/n, "commit-ms")
	b.ReportMetric(float64(stalls.Milliseconds())/n, "stalled-ms")
	b.ReportMetric(float64(wal)/n/(1<<20), "WAL-MB")
	b.ReportMetric(float64(fileSize(path))/float64(committed), "file-B/event")
}

// benchChosen are the properties of bench/gen events a project chooses in the
// benchmarks: as many as it may, strings and numbers, with and without a $.
var benchChosen = [slotCount]string{"utm_source", "plan", "seats", "$browser_version", "$lib_version", "$window_id", "$device_id", "$referrer"}
