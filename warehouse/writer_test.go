package warehouse

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

func openTestWarehouse(t *testing.T, path string, cfg Config) *Warehouse {
	t.Helper()
	cfg.Path = path
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
		wg.Go(func() { errs[i] = w.Writer().Submit(LaneRealtime, sent[i]) })
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
	err := w.DB().QueryRow(`SELECT team_id, event, distinct_id, "timestamp", properties, lane FROM events WHERE uuid = ?`, want.UUID).
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
		wg.Go(func() { goodErrs[i] = w.Writer().Submit(LaneRealtime, good[i:i+1]) })
	}
	poison := testEvent(1, "poison")
	poison.Properties = "{\"bad\":\"\xff\"}"
	var poisonErr error
	wg.Go(func() { poisonErr = w.Writer().Submit(LaneRealtime, []Event{poison}) })
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
	// The writer goes on working after a failed commit.
	after := testEvent(1, "after")
	if err := w.Writer().Submit(LaneRealtime, []Event{after}); err != nil {
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
			if err := w.Writer().Submit(LaneRealtime, []Event{e}); err == nil {
				mu.Lock()
				sent = append(sent, e)
				mu.Unlock()
			} else if !errors.Is(err, ErrClosed) {
				t.Errorf("submit: %v", err)
			}
		})
	}
	time.Sleep(5 * time.Millisecond)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := w.Writer().Submit(LaneRealtime, []Event{testEvent(1, "late")}); !errors.Is(err, ErrClosed) {
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
