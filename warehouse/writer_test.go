package warehouse

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// openTestWarehouse opens a warehouse at path for a test. Its queries keep the test's
// priority unless cfg sets one: tests that time queries share the machine with other
// packages' tests, which a lowered query would yield to.
func openTestWarehouse(t *testing.T, path string, cfg Config) *Warehouse {
	t.Helper()
	cfg.Path = path
	if cfg.Query.Nice == 0 {
		cfg.Query.Nice = -1
	}
	w, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func testEvent(team int64, name string) Event {
	return Event{
		UUID:       uuid.Must(uuid.NewV7()),
		TeamID:     team,
		Name:       name,
		DistinctID: "user-1",
		Timestamp:  time.Date(2026, 11, 22, 3, 39, 11, 125_000_000, time.UTC),
		Properties: `{"$current_url":"https://example.com/?a=1&b=2","n":1}`,
	}
}

// storedUUIDs returns how many rows each uuid has in the events table.
func storedUUIDs(t *testing.T, w *Warehouse) map[uuid.UUID]int {
	t.Helper()
	rows, err := w.DB().Query(`SELECT uuid FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[uuid.UUID]int{}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		seen[id]++
	}
	return seen
}

func TestWriterGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	// A long linger makes concurrent submissions share commits.
	w := openTestWarehouse(t, path, Config{FlushInterval: 50 * time.Millisecond})
	defer w.Close()

	const submitters, perSubmit = 40, 25
	var wg sync.WaitGroup
	sent := make([][]Event, submitters)
	errs := make([]error, submitters)
	for i := range submitters {
		sent[i] = make([]Event, perSubmit)
		for j := range sent[i] {
			sent[i][j] = testEvent(1, fmt.Sprintf("event-%d", i))
		}
		wg.Go(func() { errs[i] = w.Writer().Submit(&Batch{Events: sent[i]}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("submission %d: %v", i, err)
		}
	}
	seen := storedUUIDs(t, w)
	if len(seen) != submitters*perSubmit {
		t.Fatalf("%d events stored, want %d", len(seen), submitters*perSubmit)
	}
	for _, batch := range sent {
		for _, e := range batch {
			if seen[e.UUID] != 1 {
				t.Fatalf("event %s stored %d times, want once", e.UUID, seen[e.UUID])
			}
		}
	}
	// Events committed together share inserted_at: fewer commits than submissions.
	var commits int
	if err := w.DB().QueryRow(`SELECT count(DISTINCT inserted_at) FROM events`).Scan(&commits); err != nil {
		t.Fatal(err)
	}
	if commits >= submitters {
		t.Fatalf("%d commits for %d concurrent submissions: no group commit happened", commits, submitters)
	}

	// Every column arrives as sent.
	want := sent[0][0]
	var got Event
	var lane string
	err := w.DB().QueryRow(`SELECT team_id, event, distinct_id, "timestamp", `+PropertiesText+`, lane FROM events WHERE uuid = ?`, want.UUID).
		Scan(&got.TeamID, &got.Name, &got.DistinctID, &got.Timestamp, &got.Properties, &lane)
	if err != nil {
		t.Fatal(err)
	}
	got.UUID = want.UUID
	if !got.Timestamp.Equal(want.Timestamp) || got.TeamID != want.TeamID || got.Name != want.Name ||
		got.DistinctID != want.DistinctID || got.Properties != want.Properties || lane != "realtime" {
		t.Fatalf("stored %+v lane %q, want %+v lane realtime", got, lane, want)
	}
}

// A submission that DuckDB refuses (here: invalid UTF-8) fails alone; the submissions
// that shared its group commit are committed.
func TestWriterIsolatesFailedSubmission(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{FlushInterval: 100 * time.Millisecond})
	defer w.Close()

	var wg sync.WaitGroup
	good := make([]Event, 8)
	goodErrs := make([]error, len(good))
	for i := range good {
		good[i] = testEvent(1, "good")
		wg.Go(func() { goodErrs[i] = w.Writer().Submit(&Batch{Events: good[i : i+1]}) })
	}
	poison := testEvent(1, "poison")
	poison.Properties = "{\"bad\":\"\xff\"}"
	var poisonErr error
	poisonWarning := Warning{TeamID: 1, Time: time.Now(), Type: "missing_distinct_id", Event: "with the poison"}
	wg.Go(func() {
		poisonErr = w.Writer().Submit(&Batch{Events: []Event{poison}, Warnings: []Warning{poisonWarning}})
	})
	wg.Wait()

	if poisonErr == nil {
		t.Fatal("the invalid submission was accepted")
	}
	for i, err := range goodErrs {
		if err != nil {
			t.Fatalf("good submission %d failed with its neighbour: %v", i, err)
		}
	}
	seen := storedUUIDs(t, w)
	if len(seen) != len(good) || seen[poison.UUID] != 0 {
		t.Fatalf("stored %d events (poison %d), want %d good ones only", len(seen), seen[poison.UUID], len(good))
	}
	// Nothing of the failed submission is stored: not its warning, not its person.
	var warnings, persons int
	w.DB().QueryRow(`SELECT count(*) FROM ingestion_warnings`).Scan(&warnings)
	w.DB().QueryRow(`SELECT count(*) FROM persons`).Scan(&persons)
	if warnings != 0 || persons != 1 {
		t.Fatalf("after the failed commits: %d warnings, %d persons; want 0 and the good events' 1", warnings, persons)
	}
	// The writer goes on working after a failed commit.
	after := testEvent(1, "after")
	if err := w.Writer().Submit(&Batch{Events: []Event{after}}); err != nil {
		t.Fatalf("submit after a failed commit: %v", err)
	}
}

func TestWriterCloseKeepsEverythingAccepted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{FlushInterval: 20 * time.Millisecond})
	var sent []Event
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			e := testEvent(1, "before-close")
			if err := w.Writer().Submit(&Batch{Events: []Event{e}}); err == nil {
				mu.Lock()
				sent = append(sent, e)
				mu.Unlock()
			} else if !errors.Is(err, ErrClosed) {
				t.Errorf("submit: %v", err)
			}
		})
	}
	time.Sleep(5 * time.Millisecond)
	w.Close()
	wg.Wait()
	if err := w.Writer().Submit(&Batch{Events: []Event{testEvent(1, "late")}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit after close: %v, want ErrClosed", err)
	}

	w = openTestWarehouse(t, path, Config{})
	defer w.Close()
	seen := storedUUIDs(t, w)
	if len(seen) != len(sent) {
		t.Fatalf("%d events after reopening, want the %d that were acknowledged", len(seen), len(sent))
	}
	for _, e := range sent {
		if seen[e.UUID] != 1 {
			t.Fatalf("acknowledged event %s stored %d times", e.UUID, seen[e.UUID])
		}
	}
}

func TestWriterCommitsWarningsWithEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{})
	defer w.Close()
	at := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	batch := &Batch{
		Events: []Event{testEvent(7, "kept")},
		Warnings: []Warning{
			{TeamID: 7, Time: at, Type: "missing_distinct_id", Event: "dropped"},
			{TeamID: 7, Time: at, Type: "missing_survey_id", Event: "survey sent", DistinctID: "u", Details: `{"uuid":"x"}`},
		},
	}
	if err := w.Writer().Submit(batch); err != nil {
		t.Fatal(err)
	}
	// A batch of warnings alone is committed too.
	if err := w.Writer().Submit(&Batch{Warnings: []Warning{{TeamID: 7, Time: at, Type: "missing_event_name"}}}); err != nil {
		t.Fatal(err)
	}
	rows, err := w.DB().Query(`SELECT type, event, distinct_id, coalesce(details, 'NULL'), "timestamp" FROM ingestion_warnings
		WHERE team_id = 7 ORDER BY type`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var typ, event, distinctID, details string
		var ts time.Time
		rows.Scan(&typ, &event, &distinctID, &details, &ts)
		if !ts.Equal(at) {
			t.Fatalf("warning time %v, want %v", ts, at)
		}
		got = append(got, typ+"|"+event+"|"+distinctID+"|"+details)
	}
	want := []string{"missing_distinct_id|dropped||NULL", "missing_event_name|||NULL", `missing_survey_id|survey sent|u|{"uuid":"x"}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("warnings %v, want %v", got, want)
	}
}

// Submissions to every lane that wait together share one commit, appended realtime
// first, and each keeps its lane.
func TestWriterLanes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{FlushInterval: 200 * time.Millisecond})
	defer w.Close()
	var wg sync.WaitGroup
	for _, lane := range []Lane{LaneOverflow, LaneHistorical, LaneRealtime} {
		e := testEvent(1, lane.String())
		wg.Go(func() {
			if err := w.Writer().Submit(&Batch{Lane: lane, Events: []Event{e}}); err != nil {
				t.Error(err)
			}
		})
		time.Sleep(20 * time.Millisecond) // arrive in this order, within one linger
	}
	wg.Wait()
	rows, err := w.DB().Query(`SELECT event, lane, inserted_at FROM events ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var order []string
	commits := map[time.Time]bool{}
	for rows.Next() {
		var event, lane string
		var insertedAt time.Time
		rows.Scan(&event, &lane, &insertedAt)
		if event != lane {
			t.Fatalf("event %q stored with lane %q", event, lane)
		}
		order = append(order, lane)
		commits[insertedAt] = true
	}
	// The overflow submission came first and opened the group; the others joined it.
	if len(commits) != 1 {
		t.Fatalf("%d commits, want the three lanes in one", len(commits))
	}
	if fmt.Sprint(order) != "[realtime historical overflow]" {
		t.Fatalf("append order %v, want realtime, historical, overflow", order)
	}
}

// Submissions to one lane are committed in the order they were queued.
func TestWriterLaneOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{FlushInterval: 50 * time.Millisecond, FlushRows: 7})
	defer w.Close()
	var wg sync.WaitGroup
	for i := range 30 {
		e := testEvent(1, fmt.Sprintf("%02d", i))
		wg.Go(func() {
			if err := w.Writer().Submit(&Batch{Lane: LaneHistorical, Events: []Event{e}}); err != nil {
				t.Error(err)
			}
		})
		// Queued in this order: the next goroutine starts well after this one has sent
		// (on a loaded machine a goroutine can wait a few milliseconds to run).
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	var got string
	if err := w.DB().QueryRow(`SELECT string_agg(event, ',' ORDER BY rowid) FROM events`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 30 {
		want = append(want, fmt.Sprintf("%02d", i))
	}
	if got != strings.Join(want, ",") {
		t.Fatalf("historical lane committed as %s", got)
	}
}

func TestWriterOverloaded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{MaxQueuedRows: 10, QueueTimeout: 50 * time.Millisecond,
		FlushInterval: 500 * time.Millisecond, FlushRows: 1000})
	defer w.Close()
	full := make([]Event, 10)
	for i := range full {
		full[i] = testEvent(1, "fills the queue")
	}
	done := make(chan error)
	go func() { done <- w.Writer().Submit(&Batch{Events: full}) }()
	time.Sleep(20 * time.Millisecond)
	if err := w.Writer().Submit(&Batch{Events: []Event{testEvent(1, "one too many")}}); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("submit over the queue limit: %v, want ErrOverloaded", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The budget is released after the commit.
	if err := w.Writer().Submit(&Batch{Events: []Event{testEvent(1, "after")}}); err != nil {
		t.Fatal(err)
	}
	// A batch larger than the whole budget still goes, alone.
	big := make([]Event, 25)
	for i := range big {
		big[i] = testEvent(1, "big")
	}
	if err := w.Writer().Submit(&Batch{Events: big}); err != nil {
		t.Fatal(err)
	}
}

// A project's data version changes with each commit of its rows, and only then.
func TestDataVersion(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	q := w.Queries()
	before1, before2 := q.DataVersion(1), q.DataVersion(2)
	if err := w.Writer().Submit(&Batch{Events: []Event{testEvent(1, "e")}}); err != nil {
		t.Fatal(err)
	}
	if q.DataVersion(1) == before1 || q.DataVersion(2) != before2 {
		t.Fatalf("versions after a commit to project 1: %d→%d, project 2 %d→%d", before1, q.DataVersion(1), before2, q.DataVersion(2))
	}
	// A warnings-only commit is new data too (ingestion_warnings).
	v := q.DataVersion(1)
	if err := w.Writer().Submit(&Batch{Warnings: []Warning{{TeamID: 1, Time: time.Now(), Type: "missing_event_name"}}}); err != nil {
		t.Fatal(err)
	}
	if q.DataVersion(1) == v {
		t.Fatal("the version did not change")
	}
}

// The writer checkpoints once CheckpointRows events fill the row group, and before a
// submission that would overflow it.
func TestWriterCheckpointsEveryRowGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{CheckpointRows: 100})
	defer w.Close()
	walSize := func() int64 {
		info, err := os.Stat(path + ".wal")
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}
	submit := func(n int) {
		events := make([]Event, n)
		for i := range events {
			events[i] = testEvent(1, "e")
		}
		if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		events     int
		wal        bool // events are in the WAL after the step
		checkpoint bool // the step checkpointed
	}{
		{60, true, false},
		{40, false, true}, // the row group is full
		{60, true, false},
		{60, true, true}, // would overflow: the checkpoint comes first
	} {
		before := checkpointsTotal.Get()
		submit(step.events)
		// A checkpoint after a commit may follow its answer: give it time.
		deadline := time.Now().Add(5 * time.Second)
		for ((walSize() > 0) != step.wal || (checkpointsTotal.Get() > before) != step.checkpoint) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := walSize() > 0; got != step.wal {
			t.Fatalf("after %d more events, WAL holds %d bytes", step.events, walSize())
		}
		if got := checkpointsTotal.Get() > before; got != step.checkpoint {
			t.Fatalf("after %d more events, checkpointed: %v, want %v", step.events, got, step.checkpoint)
		}
	}
	if rows := len(storedUUIDs(t, w)); rows != 220 {
		t.Fatalf("%d rows, want 220", rows)
	}
}

// Requests arriving together fill each row group of events to its size or just short
// of it, never over it: a row group filled partly before a checkpoint is rewritten by
// the next, which is what the Writer's checkpoints avoid.
func TestWriterFillsRowGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{})
	const request, requests = 1000, 80
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			events := make([]Event, request)
			for i := range events {
				events[i] = testEvent(1, "e")
			}
			if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// A checkpoint joins the rows past a bulk commit's last full row group to those
	// appended after them (see gather).
	rowGroups := checkpointedRowGroups(t, w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, n := range rowGroups {
		total += n
		if i < len(rowGroups)-1 && (n > RowGroupRows || n <= RowGroupRows-request) {
			t.Errorf("row group %d holds %d events, want %d or just short of it: %v", i, n, RowGroupRows, rowGroups)
		}
	}
	if total != request*requests {
		t.Fatalf("the row groups hold %d events, want %d", total, request*requests)
	}
}

// checkpointedRowGroups checkpoints w and returns the events of each row group of events.
func checkpointedRowGroups(t *testing.T, w *Warehouse) []int {
	t.Helper()
	if _, err := w.DB().Exec(`CHECKPOINT`); err != nil {
		t.Fatal(err)
	}
	rows, err := w.DB().Query(`SELECT max(start + count) - min(start) FROM pragma_storage_info('events')
		WHERE column_path = '[0]' GROUP BY row_group_id ORDER BY row_group_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var rowGroups []int
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		rowGroups = append(rowGroups, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return rowGroups
}

// A row group of events waiting is committed past the WAL, in a row group of its own:
// the request that crosses the count is split, the rest of its events committed after
// and counted with them (a duplicate across the split is one), and all of them are
// there after a restart.
func TestWriterBulkCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{})
	submit := func(b *Batch) {
		t.Helper()
		if err := w.Writer().Submit(b); err != nil {
			t.Fatal(err)
		}
	}
	batch := func(n int) *Batch {
		events := make([]Event, n)
		for i := range events {
			events[i] = testEvent(1, "e")
		}
		return &Batch{Events: events}
	}
	walSize := func() int64 {
		t.Helper()
		fi, err := os.Stat(path + ".wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	bulks := bulkCommitsTotal.Get()
	submit(batch(1000))
	// After a checkpoint of the 1,000, whose row group it would leave partly filled:
	// the first RowGroupRows events in a bulk commit, the last 500 in another.
	big := batch(RowGroupRows + 500)
	big.Events[RowGroupRows+100].UUID = big.Events[0].UUID
	submit(big)
	if n := bulkCommitsTotal.Get() - bulks; n != 1 {
		t.Fatalf("%d bulk commits, want 1", n)
	}
	if big.Duplicates != 1 {
		t.Fatalf("%d duplicates, want 1", big.Duplicates)
	}
	tail := walSize()
	submit(batch(1000))
	if logged := walSize() - tail; tail >= logged {
		t.Fatalf("the WAL holds %d bytes after %d events, more than the next 1,000 took (%d): the bulk commit's went into it",
			tail, RowGroupRows+500, logged)
	}
	// The files as a kill -9 would leave them now, before any checkpoint: the bulk
	// commit's row group is read back from the database file through the WAL.
	crashed := filepath.Join(t.TempDir(), "hedge.duckdb")
	for _, suffix := range []string{"", ".wal"} {
		data, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(crashed+suffix, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// DuckDB's checkpoint packs the 1,000 events, the bulk commit's and the 1,499
	// after it, in row groups of 1,000, RowGroupRows and 1,499, into as few as hold them.
	if got, want := checkpointedRowGroups(t, w), []int{RowGroupRows, 2499}; !slices.Equal(got, want) {
		t.Fatalf("row groups %v, want %v", got, want)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"a restart": path, "a crash": crashed} {
		w := openTestWarehouse(t, path, Config{})
		var n int
		if err := w.DB().QueryRow(`SELECT count(*) FROM events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if want := RowGroupRows + 2499; n != want {
			t.Errorf("%d events after %s, want %d", n, name, want)
		}
	}
}

// logPositions reads w's recorded log positions.
func logPositions(t *testing.T, w *Warehouse) map[int]uint64 {
	t.Helper()
	positions, err := w.LogPositions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return positions
}

// A log position is recorded with its batch's commit and read back after a restart.
func TestLogPositionsAfterReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	w := openTestWarehouse(t, path, Config{})
	if got := logPositions(t, w); len(got) != 0 {
		t.Fatalf("a new database has positions %v", got)
	}
	for _, p := range []LogPosition{{Partition: 0, Sequence: 3}, {Partition: 1, Sequence: 7}} {
		if err := w.Writer().Submit(&Batch{Events: []Event{testEvent(1, "e")}, Position: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = openTestWarehouse(t, path, Config{})
	defer w.Close()
	if got, want := logPositions(t, w), map[int]uint64{0: 3, 1: 7}; !maps.Equal(got, want) {
		t.Fatalf("positions after reopening %v, want %v", got, want)
	}
}

// Each partition's position is the greatest sequence committed, within a group
// commit (not its last batch's) and across commits (a later commit of a lower one
// does not move it back).
func TestLogPositionsGreatestWins(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{FlushInterval: 200 * time.Millisecond})
	defer w.Close()
	commits := 0
	f := func(sent []LogPosition, want map[int]uint64) {
		t.Helper()
		var wg sync.WaitGroup
		for _, p := range sent {
			b := &Batch{Events: []Event{testEvent(1, "e")}, Position: p}
			wg.Go(func() {
				if err := w.Writer().Submit(b); err != nil {
					t.Error(err)
				}
			})
			time.Sleep(20 * time.Millisecond) // arrive in this order, within one linger
		}
		wg.Wait()
		commits++
		var n int
		if err := w.DB().QueryRow(`SELECT count(DISTINCT inserted_at) FROM events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != commits {
			t.Fatalf("%d commits, want %v in one", n-commits+1, sent)
		}
		if got := logPositions(t, w); !maps.Equal(got, want) {
			t.Fatalf("after %v: positions %v, want %v", sent, got, want)
		}
	}
	f([]LogPosition{{1, 5}, {1, 9}, {1, 7}, {2, 3}}, map[int]uint64{1: 9, 2: 3})
	f([]LogPosition{{1, 4}}, map[int]uint64{1: 9, 2: 3})
	f([]LogPosition{{2, 10}, {3, 1}, {1, 8}}, map[int]uint64{1: 9, 2: 10, 3: 1})
	f([]LogPosition{{4, 0}}, map[int]uint64{1: 9, 2: 10, 3: 1}) // no position
	f([]LogPosition{{3, 1 << 63}}, map[int]uint64{1: 9, 2: 10, 3: 1 << 63})
}

// A failed commit records no position: the submissions of a failed group, committed
// again one by one, record each its own, and the one DuckDB refuses none.
func TestLogPositionsFailedCommit(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{FlushInterval: 100 * time.Millisecond})
	defer w.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		b := &Batch{Events: []Event{testEvent(1, "good")}, Position: LogPosition{Partition: 1, Sequence: uint64(i + 1)}}
		wg.Go(func() {
			if err := w.Writer().Submit(b); err != nil {
				t.Errorf("good submission %d: %v", i, err)
			}
		})
	}
	poison := testEvent(1, "poison")
	poison.Properties = "{\"bad\":\"\xff\"}"
	for _, p := range []LogPosition{{Partition: 1, Sequence: 100}, {Partition: 2, Sequence: 1}} {
		b := &Batch{Events: []Event{poison}, Position: p}
		wg.Go(func() {
			if err := w.Writer().Submit(b); err == nil {
				t.Error("the invalid submission was accepted")
			}
		})
	}
	wg.Wait()
	if got, want := logPositions(t, w), map[int]uint64{1: 8}; !maps.Equal(got, want) {
		t.Fatalf("positions %v, want %v", got, want)
	}
}

// A batch split by a bulk commit records its position with its last events, and only
// if all of them are stored: not when either part fails.
func TestLogPositionsBulkSplit(t *testing.T) {
	poisoned := func(e *Event) { e.Properties = "{\"bad\":\"\xff\"}" }
	f := func(poison int, wantStored int, want map[int]uint64) {
		t.Helper()
		w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
		defer w.Close()
		big := &Batch{Events: make([]Event, RowGroupRows+500), Position: LogPosition{Partition: 2, Sequence: 41}}
		for i := range big.Events {
			big.Events[i] = testEvent(1, "e")
		}
		if poison >= 0 {
			poisoned(&big.Events[poison])
		}
		bulks := bulkCommitsTotal.Get()
		if err := w.Writer().Submit(big); (err != nil) != (poison >= 0) {
			t.Fatalf("submit with the event %d refused: %v", poison, err)
		}
		if stored := len(storedUUIDs(t, w)); stored != wantStored {
			t.Fatalf("%d events stored, want %d", stored, wantStored)
		}
		if wantStored >= RowGroupRows && bulkCommitsTotal.Get() == bulks {
			t.Fatal("no bulk commit")
		}
		if got := logPositions(t, w); !maps.Equal(got, want) {
			t.Fatalf("positions %v, want %v", got, want)
		}
	}
	f(-1, RowGroupRows+500, map[int]uint64{2: 41})
	f(RowGroupRows+10, RowGroupRows, map[int]uint64{}) // the second part failed
	f(10, 500, map[int]uint64{})                       // the first part failed
}

// A batch whose events are all duplicates, or that has neither events nor warnings,
// records its position; a batch with neither rows nor a position is not submitted.
func TestLogPositionsWithoutRows(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	events := []Event{testEvent(1, "e"), testEvent(1, "e")}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	again := &Batch{Events: events, Position: LogPosition{Partition: 1, Sequence: 6}}
	if err := w.Writer().Submit(again); err != nil {
		t.Fatal(err)
	}
	if again.Duplicates != len(events) {
		t.Fatalf("%d duplicates, want %d", again.Duplicates, len(events))
	}
	if err := w.Writer().Submit(&Batch{Position: LogPosition{Partition: 2, Sequence: 9}}); err != nil {
		t.Fatal(err)
	}
	if got, want := logPositions(t, w), map[int]uint64{1: 6, 2: 9}; !maps.Equal(got, want) {
		t.Fatalf("positions %v, want %v", got, want)
	}
	var rows int
	if err := w.DB().QueryRow(`SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM ingestion_warnings)`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(events) {
		t.Fatalf("%d rows stored, want the %d first events", rows, len(events))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// Empty batches without a position are answered nil at once, even by a closed
	// Writer, as before positions; one with a position goes to the Writer.
	if err := w.Writer().Submit(&Batch{}, &Batch{Lane: laneCount}); err != nil {
		t.Fatalf("empty batches after close: %v, want nil", err)
	}
	if err := w.Writer().Submit(&Batch{Position: LogPosition{Partition: 2, Sequence: 10}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("a positioned empty batch after close: %v, want ErrClosed", err)
	}
}
