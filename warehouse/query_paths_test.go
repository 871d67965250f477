package warehouse

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Paths counted by hand: ada / → /pricing → /pricing (once) → /signup, then, an hour
// later, a new session / → /docs; brian / → /docs → / (a loop); chen / → /pricing.
func TestPaths(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	var events []Event
	view := func(person string, minute int, url string) {
		events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$pageview", DistinctID: person,
			Timestamp: at("2026-11-02T09:00:00Z").Add(time.Duration(minute) * time.Minute), Properties: `{"$current_url":"` + url + `"}`})
	}
	view("ada", 0, "/")
	view("ada", 1, "/pricing")
	view("ada", 2, "/pricing")
	view("ada", 5, "/signup")
	view("ada", 70, "/")
	view("ada", 71, "/docs")
	view("brian", 0, "/")
	view("brian", 2, "/docs")
	view("brian", 4, "/")
	view("chen", 0, "/")
	view("chen", 3, "/pricing")
	events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "clicked", DistinctID: "chen",
		Timestamp: at("2026-11-02T09:04:00Z"), Properties: `{}`})
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	f := func(filter PathsFilter, want string) {
		t.Helper()
		r, err := w.Queries().Paths(context.Background(), utc, PathsQuery{DateRange: DateRange{DateFrom: "2026-11-02", DateTo: "2026-11-02"}, PathsFilter: filter},
			at("2026-11-10T00:00:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range r.Results {
			got = append(got, fmt.Sprintf("%s>%s %d %g", e.Source, e.Target, e.Value, e.AverageConversionTime))
		}
		if strings.Join(got, "; ") != want {
			t.Fatalf("%+v:\ngot  %s\nwant %s", filter, strings.Join(got, "; "), want)
		}
	}
	f(PathsFilter{}, "1_/>2_/docs 2 90000; 1_/>2_/pricing 2 120000; 2_/docs>3_/ 1 120000; 2_/pricing>3_/signup 1 240000")
	f(PathsFilter{StepLimit: 2}, "1_/>2_/docs 2 90000; 1_/>2_/pricing 2 120000")
	f(PathsFilter{StartPoint: "/pricing"}, "1_/pricing>2_/signup 1 240000")
	f(PathsFilter{EndPoint: "/docs"}, "1_/>2_/docs 2 90000")
	f(PathsFilter{IncludeEventTypes: []string{"$pageview", "custom_event"}, StartPoint: "/pricing"},
		"1_/pricing>2_/signup 1 240000; 1_/pricing>2_clicked 1 60000")
	for _, bad := range []PathsFilter{{StepLimit: 1}, {EdgeLimit: 5000}, {IncludeEventTypes: []string{"hogql"}}} {
		var refused *QueryError
		if _, err := w.Queries().Paths(context.Background(), utc, PathsQuery{PathsFilter: bad}, at("2026-11-10T00:00:00Z")); !errors.As(err, &refused) {
			t.Errorf("%+v: %v, want a QueryError", bad, err)
		}
	}
}
