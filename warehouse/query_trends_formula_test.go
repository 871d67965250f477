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

func TestParseFormula(t *testing.T) {
	values := []float64{6, 3, 0}
	f := func(text string, want float64) {
		t.Helper()
		parsed, err := parseFormula(text, len(values))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if got := parsed.eval(values); got != want {
			t.Fatalf("%q = %g, want %g", text, got, want)
		}
	}
	f("A", 6)
	f("a / b", 2)
	f("A+B*2", 12)
	f("(A+B)*2", 18)
	f("A-B-1", 2)
	f("A/B/2", 1)
	f("-A + 10", 4)
	f("A/C", 0) // a division by zero is 0
	f("100 * B / A", 50)
	f(" 1.5*A ", 9)
	bad := func(text string) {
		t.Helper()
		var refused *QueryError
		if _, err := parseFormula(text, len(values)); !errors.As(err, &refused) {
			t.Fatalf("%q: %v, want a QueryError", text, err)
		}
	}
	bad("")
	bad("D")     // three series: A to C
	bad("A +")   // ends too soon
	bad("(A")    // unclosed
	bad("A B")   // no operator
	bad("A % B") // not an operator it takes
	bad("1.2.3")
	bad(strings.Repeat("(", 40) + "A" + strings.Repeat(")", 40))
	bad(strings.Repeat("A+", 200) + "A")
}

// A formula over two series, counted by hand: purchases per pageview, a day at a time,
// per browser (a browser without purchases is 0), and as a total.
func TestTrendsFormula(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	var events []Event
	add := func(name string, day int, browser string, n int) {
		for range n {
			events = append(events, Event{UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: name, DistinctID: "u",
				Timestamp: at("2026-11-02T10:00:00Z").Add(time.Duration(day) * 24 * time.Hour), Properties: `{"$browser":"` + browser + `"}`})
		}
	}
	add("$pageview", 0, "Chrome", 4)
	add("purchase", 0, "Chrome", 1)
	add("$pageview", 1, "Chrome", 5)
	add("purchase", 1, "Chrome", 2)
	add("$pageview", 0, "Safari", 1)
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	purchase, pageview := "purchase", "$pageview"
	tq := TrendsQuery{Series: []TrendsSeries{{Event: &purchase}, {Event: &pageview}}, Interval: "day",
		DateRange: DateRange{DateFrom: "2026-11-02", DateTo: "2026-11-03"}, TrendsFilter: &TrendsFilter{Formula: "A / B * 100"}}
	f := func(want string) {
		t.Helper()
		r, err := w.Queries().Trends(context.Background(), utc, tq, at("2026-11-10T00:00:00Z"))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range r.Results {
			if l.AggregatedValue != nil {
				got = append(got, fmt.Sprintf("%s: %g", l.Label, *l.AggregatedValue))
				continue
			}
			got = append(got, fmt.Sprintf("%s: %v %g", l.Label, l.Data, l.Count))
		}
		if strings.Join(got, "; ") != want {
			t.Fatalf("got %s\nwant %s", strings.Join(got, "; "), want)
		}
	}
	f("A / B * 100: [20 40] 60") // 1 of 5, 2 of 5
	tq.BreakdownFilter = &BreakdownFilter{Breakdown: "$browser"}
	f("A / B * 100 - Chrome: [25 40] 65; A / B * 100 - Safari: [0 0] 0")
	tq.BreakdownFilter, tq.TrendsFilter.Display = nil, "BoldNumber"
	f("A / B * 100: 30") // 3 of 10 over the range
	tq.TrendsFilter = &TrendsFilter{Formula: "A / C"}
	var refused *QueryError
	if _, err := w.Queries().Trends(context.Background(), utc, tq, at("2026-11-10T00:00:00Z")); !errors.As(err, &refused) {
		t.Fatalf("a formula naming a third series of two: %v, want a QueryError", err)
	}
}
