package warehouse

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
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

// Paths of random sessions against a model of the rules in Go: a path a person's items
// in time order, a new one after 30 minutes without one, repeats in a row one step,
// from the start point's first step, up to the end point's first, the step limit's
// steps; its edges counted, their mean times, the most travelled first.
func TestPathsModel(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	pages := []string{"/", "/pricing", "/docs", "/signup", "/blog"}
	type view struct {
		person string
		at     time.Time
		item   string
	}
	var events []Event
	var views []view
	start := at("2026-11-02T00:00:00Z")
	for p := range 40 {
		person := fmt.Sprintf("p%d", p)
		clock := start.Add(time.Duration(rng.IntN(3600)) * time.Second)
		for range 5 + rng.IntN(30) {
			// Mostly seconds apart, at times past the 30 minutes that end a path; every
			// event at a millisecond of its own, so that the order is the time's.
			gap := time.Duration(1+rng.IntN(300))*time.Second + time.Duration(p)*time.Millisecond
			if rng.IntN(6) == 0 {
				gap += 30 * time.Minute
			}
			clock = clock.Add(gap)
			name, item := "$pageview", pages[rng.IntN(len(pages))]
			if rng.IntN(5) == 0 {
				name, item = "clicked", "clicked"
			}
			props := `{}`
			if name == "$pageview" {
				props = `{"$current_url":"` + item + `"}`
			}
			events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: name, DistinctID: person, Timestamp: clock, Properties: props})
			views = append(views, view{person, clock, item})
		}
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	model := func(f PathsFilter) string {
		steps := cmp.Or(f.StepLimit, defaultPathSteps)
		custom := slices.Contains(f.IncludeEventTypes, "custom_event")
		type edge struct {
			count int
			total float64
		}
		found := map[[2]string]*edge{}
		var path []view
		flush := func() {
			first, last := 0, len(path)-1
			if f.StartPoint != "" {
				first = slices.IndexFunc(path, func(v view) bool { return v.item == f.StartPoint })
			}
			if f.EndPoint != "" {
				last = slices.IndexFunc(path, func(v view) bool { return v.item == f.EndPoint })
			}
			if first < 0 || last < 0 {
				path = path[:0]
				return
			}
			for i := first; i < last && i+1-first < steps; i++ {
				key := [2]string{fmt.Sprintf("%d_%s", i-first+1, path[i].item), fmt.Sprintf("%d_%s", i-first+2, path[i+1].item)}
				if found[key] == nil {
					found[key] = &edge{}
				}
				found[key].count++
				found[key].total += float64(path[i+1].at.Sub(path[i].at).Milliseconds())
			}
			path = path[:0]
		}
		sorted := slices.Clone(views)
		slices.SortStableFunc(sorted, func(a, b view) int { return cmp.Or(cmp.Compare(a.person, b.person), a.at.Compare(b.at)) })
		var previous *view
		for i := range sorted {
			v := sorted[i]
			if v.item == "clicked" && !custom {
				continue
			}
			if previous != nil && (previous.person != v.person || v.at.Sub(previous.at) > pathSessionGap) {
				flush()
			}
			if len(path) == 0 || path[len(path)-1].item != v.item {
				path = append(path, v)
			}
			previous = &sorted[i]
		}
		flush()
		var keys [][2]string
		for k := range found {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b [2]string) int {
			return cmp.Or(-cmp.Compare(found[a].count, found[b].count), cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
		})
		var out []string
		for _, k := range keys[:min(len(keys), cmp.Or(f.EdgeLimit, defaultPathEdges))] {
			out = append(out, fmt.Sprintf("%s>%s %d %.3f", k[0], k[1], found[k].count, found[k].total/float64(found[k].count)))
		}
		return strings.Join(out, "; ")
	}
	for _, f := range []PathsFilter{{}, {StepLimit: 2}, {StepLimit: 20, EdgeLimit: 500}, {StartPoint: "/pricing"}, {EndPoint: "/signup"},
		{StartPoint: "/docs", EndPoint: "/blog", StepLimit: 3}, {IncludeEventTypes: []string{"$pageview", "custom_event"}, StepLimit: 7, EdgeLimit: 100},
		{IncludeEventTypes: []string{"custom_event", "$pageview"}, StartPoint: "clicked"}} {
		r, err := w.Queries().Paths(context.Background(), utc, PathsQuery{DateRange: DateRange{DateFrom: "2026-11-01", DateTo: "2026-11-05"}, PathsFilter: f},
			at("2026-11-10T00:00:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range r.Results {
			got = append(got, fmt.Sprintf("%s>%s %d %.3f", e.Source, e.Target, e.Value, e.AverageConversionTime))
		}
		if want := model(f); strings.Join(got, "; ") != want {
			t.Fatalf("%+v:\ngot  %s\nwant %s", f, strings.Join(got, "; "), want)
		}
	}
}
