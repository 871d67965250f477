package warehouse

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
)

// The stored filter never calls a stored id absent, calls few others stored, and says
// nothing until its fill is done.
func TestStoredFilter(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	// 20,000 ids stored before a second filter's fill, through the writer.
	var events []Event
	for i := range 20_000 {
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: int64(1 + i%3), Name: "e", DistinctID: fmt.Sprint("stored-", i), Timestamp: at("2026-11-02T12:00:00Z")})
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	f, err := newStoredFilter(context.Background(), w.DB(), w.log)
	if err != nil {
		t.Fatal(err)
	}
	if f.absent(distinctKey{1, "never"}) {
		t.Fatal("the filter answered before its fill")
	}
	f.add(distinctKey{1, "added"}) // as a commit during the fill does
	<-f.done
	defer f.close()
	for _, e := range events {
		if f.absent(distinctKey{e.TeamID, e.DistinctID}) {
			t.Fatalf("stored id %d/%s called absent", e.TeamID, e.DistinctID)
		}
	}
	if f.absent(distinctKey{1, "added"}) {
		t.Fatal("an id added during the fill called absent")
	}
	// New ids, and stored ones of another project (stored-i is project 1+i%3's), are
	// mostly called absent: 2% at most, at well under the filter's load of 1%.
	falsePositives := 0
	for i := range 100_000 {
		if !f.absent(distinctKey{1, fmt.Sprint("new-", i)}) {
			falsePositives++
		}
	}
	for i := 0; i < 20_000; i += 3 {
		if !f.absent(distinctKey{2, fmt.Sprint("stored-", i)}) {
			falsePositives++
		}
	}
	if falsePositives > 2_400 {
		t.Fatalf("%d of 106,667 absent ids called stored", falsePositives)
	}
}

// A flag lookup of an id that the stored filter calls absent answers "no person"
// without a read.
func TestLookupSkipsNewIDs(t *testing.T) {
	env := newLookupEnv(t)
	<-env.w.stored.done
	read := false
	env.w.lookups.beforeRead = func() { read = true }
	if props, found := env.person("never-seen"); found || read {
		t.Fatalf("a new id: %s %v, read %v", props, found, read)
	}
}
