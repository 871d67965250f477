package warehouse

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

var materializeSeed = flag.Uint64("materialize.seed", 0, "the seed of TestMaterializerMatchesDuckDB (0: a new one)")

// TestMaterializedColumnsMatchMigration: migration 14's columns are materializedKeys',
// then migration 15's the slots', in the order of materializer.values.
func TestMaterializedColumnsMatchMigration(t *testing.T) {
	w := openTestWarehouse(t, filepath.Join(t.TempDir(), "hedge.duckdb"), Config{})
	defer w.Close()
	rows, err := w.DB().Query(`SELECT column_name FROM duckdb_columns() WHERE table_name = 'events' AND column_name LIKE 'mat\_%' ESCAPE '\' ORDER BY column_index`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var c string
		rows.Scan(&c)
		got = append(got, c)
	}
	var want []string
	for _, k := range materializedKeys {
		want = append(want, materializedColumn(k))
	}
	for s := range slotCount {
		want = append(want, slotColumn(s))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events' materialized columns %q, want %q", got, want)
	}
}

// checkedSlots are the keys of a project's slots that materializeCheck checks, some
// slots free; randomObject writes them plainly and with escapes.
var checkedSlots = [slotCount]string{"plan", "", "$browser_version", "browser", "", "$", "é", "ok"}

// materializeCheck compares, for each of docs, what the Writer's materializer takes
// out of it, with checkedSlots as the project's slots, with what DuckDB's
// json_extract_string gives, key by key.
func materializeCheck(t *testing.T, db *sql.DB, docs []string) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	paths := materializedPaths()
	keys := materializedKeys[:]
	for _, k := range checkedSlots {
		if k != "" {
			paths = strings.TrimSuffix(paths, "]") + `, '$."` + k + `"']`
		}
		keys = append(keys, k)
	}
	query := `SELECT json_extract_string(?::VARCHAR, ` + paths + `)`
	for _, doc := range docs {
		var want []any
		if err := conn.QueryRowContext(ctx, query, doc).Scan(&want); err != nil {
			t.Fatalf("DuckDB cannot read %s: %v", doc, err)
		}
		var got [materializedCount + slotCount]driver.Value
		err := conn.Raw(func(c any) error {
			render, closeRender, err := renderer(c.(driver.Conn))
			if err != nil {
				return err
			}
			defer closeRender()
			m := materializer{render: render}
			err = m.extract(doc, &checkedSlots)
			got = m.values
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		j := 0
		for i, k := range keys {
			var w any // a free slot takes nothing
			if k != "" {
				w, j = want[j], j+1
			}
			if fmt.Sprintf("%#v", got[i]) != fmt.Sprintf("%#v", w) {
				t.Fatalf("%s of %s: the materializer takes %#v, DuckDB %#v", k, doc, got[i], w)
			}
		}
	}
}

// TestMaterializerMatchesDuckDB: on random objects, with every kind of value, key
// spellings, duplicates and white space, each materialized value is exactly
// json_extract_string's. -materialize.seed=N replays a failing run.
func TestMaterializerMatchesDuckDB(t *testing.T) {
	seed := *materializeSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var docs []string
	for range 1500 {
		docs = append(docs, randomObject(r, 0))
	}
	materializeCheck(t, db, docs)
}

// FuzzMaterializer: for any JSON object DuckDB reads, the materializer agrees with it.
func FuzzMaterializer(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		f.Add(randomObject(r, 0))
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	f.Fuzz(func(t *testing.T, doc string) {
		var object bool
		// Only what the edge stores reaches the Writer: a valid object, no lone surrogates.
		if db.QueryRow(`SELECT json_type(?::VARCHAR) = 'OBJECT'`, doc).Scan(&object) != nil || !object ||
			strings.Contains(strings.ToLower(doc), `\ud`) {
			return
		}
		materializeCheck(t, db, []string{doc})
	})
}

// randomObject is a JSON object of materialized and other keys, some escaped, some
// twice, with values of every kind, and white space here and there.
func randomObject(r *rand.Rand, depth int) string {
	space := func() string { return []string{"", "", "", " ", "\n\t "}[r.IntN(5)] }
	var members []string
	for range r.IntN(8) {
		var key string
		switch r.IntN(5) {
		case 0, 1:
			key = `"` + materializedKeys[r.IntN(materializedCount)] + `"`
		case 2:
			key = `"\u0024` + materializedKeys[r.IntN(materializedCount)][1:] + `"` // $ escaped
		case 3:
			key = `"` + []string{"plan", "$browser_version", "$", "$set", "browser", "é", "ok", "okay", "pla"}[r.IntN(9)] + `"`
		default: // the keys of checkedSlots spelled with escapes
			key = `"` + []string{`pl\u0061n`, `\u0024`, `\u00e9`, `\u006fk`, `brows\u0065r`, `\u0024browser_version`}[r.IntN(6)] + `"`
		}
		members = append(members, space()+key+space()+":"+space()+randomValue(r, depth)+space())
	}
	return "{" + strings.Join(members, ",") + "}"
}

func randomValue(r *rand.Rand, depth int) string {
	switch n := r.IntN(10); {
	case n < 4:
		var b strings.Builder
		b.WriteByte('"')
		for range r.IntN(6) {
			b.WriteString([]string{"Chrome", "é", `\"`, `\\`, `\/`, `\n`, `\t`, `\u00e9`, `\u0041`, `\ud83d\ude00`, `\b\f\r`, " ", "/docs?a=1&b=2", `\u001f`}[r.IntN(14)])
		}
		b.WriteByte('"')
		return b.String()
	case n < 6:
		return []string{"0", "-0", "7", "-12", "123456789012345678", "-123456789012345678", "1234567890123456789",
			"12345678901234567890", "123456789012345678901234", "1e400", "1.5", "1.50", "-0.0", "1E2", "1e-7", "0.1", "3.0",
			"2.5e+3", "100000000000000000000", "0.000001", "1e21"}[r.IntN(21)]
	case n < 8:
		return []string{"true", "false", "null"}[r.IntN(3)]
	case depth > 2:
		return `"deep"`
	case n == 8:
		return randomObject(r, depth+1)
	default:
		items := make([]string, r.IntN(4))
		for i := range items {
			items[i] = randomValue(r, depth+1)
		}
		return "[ " + strings.Join(items, " , ") + "]"
	}
}

// materializedDocs are the properties of the events of TestMaterializedReads: each
// materialized key and its twin, copy_<key>, which no column holds, with the same value.
var materializedValues = []string{`"plain"`, `"esc\"aped \u00e9"`, `42`, `1.50`, `true`, `null`, `{"a": [1, 2.0]}`, ``}

func materializedDoc(value string) string { return twinsDoc(materializedKeys[:], value) }

// twinsDoc is properties that hold each of keys and its twin, copy_<key>, with value
// ("": neither).
func twinsDoc(keys []string, value string) string {
	if value == "" {
		return `{"other":1}`
	}
	var members []string
	for _, k := range keys {
		members = append(members, `"`+k+`":`+value, `"copy_`+k+`":`+value)
	}
	return "{" + strings.Join(members, ",") + "}"
}

// TestMaterializedReads: every materialized column gives the answers reading the JSON
// gives, through HogQL, EventsQuery, TrendsQuery and FunnelsQuery, breakdowns and
// filters, for rows stored before the columns existed (before their backfill and
// after it) and after; and those queries read the column.
func TestMaterializedReads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hedge.duckdb")
	db := openBefore(t, path, 14)
	for _, v := range materializedValues {
		insertOldEvent(t, db, 1, "$pageview", materializedDoc(v))
		insertOldEvent(t, db, 1, "second", materializedDoc(v))
	}
	db.Close()
	w := openTestWarehouse(t, path, Config{BackfillRows: 3})
	defer w.Close()
	now := time.Now().Add(time.Hour)
	if w.backfill.done.Load() {
		t.Fatal("the rows stored before migration 14 are not filled yet, but the backfill says it is done")
	}
	checkMaterializedReads(t, w, utc, materializedKeys[:], now, "before the backfill")
	w.StartBackfill()
	if err := w.WaitBackfill(ctx); err != nil {
		t.Fatal(err)
	}
	var events []Event
	for _, v := range materializedValues {
		for _, name := range []string{"$pageview", "second"} {
			e := testEvent(1, name)
			e.Timestamp, e.Properties = time.Now(), materializedDoc(v)
			events = append(events, e)
		}
	}
	if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
		t.Fatal(err)
	}
	for _, k := range materializedKeys {
		var differ, rows int
		if err := w.DB().QueryRow(`SELECT count(*) FILTER ("`+materializedColumn(k)+`" IS DISTINCT FROM json_extract_string(`+PropertiesText+`, '$."`+k+`"')),
			count(*) FROM events`).Scan(&differ, &rows); err != nil || differ != 0 || rows != 4*len(materializedValues) {
			t.Fatalf("%s: %d of %d rows differ from their JSON (%v)", k, differ, rows, err)
		}
	}
	checkMaterializedReads(t, w, utc, materializedKeys[:], now, "after the backfill")

	// The queries read the columns: a column set apart from its JSON shows.
	if _, err := w.DB().Exec(`UPDATE events SET "mat_$browser" = 'column'`); err != nil {
		t.Fatal(err)
	}
	q := w.Queries()
	hogql, err := q.HogQL(ctx, utc, `SELECT DISTINCT properties.$browser FROM events`)
	if err != nil || fmt.Sprint(hogql.Results) != "[[column]]" {
		t.Fatalf("HogQL reads %v (%v), want the column's", hogql, err)
	}
	filter := []PropertyFilter{{Key: "$browser", Value: "column"}}
	events2, err := q.Events(ctx, utc, EventsQuery{Select: []string{"count()"}, Properties: filter, Limit: 10}, now)
	if err != nil || fmt.Sprint(events2.Results) != fmt.Sprint([][]any{{int64(4 * len(materializedValues))}}) {
		t.Fatalf("EventsQuery's filter reads %v (%v), want the column's", events2, err)
	}
	pageview := "$pageview"
	trends, err := q.Trends(ctx, utc, TrendsQuery{Series: []TrendsSeries{{Event: &pageview}}, DateRange: DateRange{DateFrom: "-1d"},
		BreakdownFilter: &BreakdownFilter{Breakdown: "$browser"}}, now)
	if err != nil || len(trends.Results) != 1 || trends.Results[0].BreakdownValue != "column" {
		t.Fatalf("TrendsQuery's breakdown reads %+v (%v), want the column's", trends, err)
	}
}

// checkMaterializedReads compares, for each of keys, the answers of scope's queries
// that read it with those of the same queries reading its twin from the JSON.
func checkMaterializedReads(t *testing.T, w *Warehouse, scope Scope, keys []string, now time.Time, when string) {
	t.Helper()
	ctx := context.Background()
	q := w.Queries()
	pageview, second := "$pageview", "second"
	for _, k := range keys {
		twin := "copy_" + k
		same := func(what string, answer func(key string) (any, error)) {
			t.Helper()
			got, err := answer(k)
			if err != nil {
				t.Fatalf("%s, %s of %s: %v", when, what, k, err)
			}
			want, err := answer(twin)
			if err != nil {
				t.Fatalf("%s, %s of %s: %v", when, what, twin, err)
			}
			g, _ := json.Marshal(got)
			wt, _ := json.Marshal(want)
			if string(g) != string(wt) {
				t.Fatalf("%s, %s of %s:\n column %s\n JSON   %s", when, what, k, g, wt)
			}
		}
		same("HogQL", func(key string) (any, error) {
			r, err := q.HogQL(ctx, scope, `SELECT properties.`+key+` AS v, count() AS n FROM events GROUP BY v ORDER BY v NULLS FIRST`)
			if err != nil {
				return nil, err
			}
			return r.Results, nil
		})
		same("HogQL, a join", func(key string) (any, error) {
			r, err := q.HogQL(ctx, scope, `SELECT e.properties.`+key+`, count() FROM events e LEFT JOIN persons p ON p.id = e.person_id
				WHERE e.properties.`+key+` IS NOT NULL GROUP BY 1 ORDER BY 1`)
			if err != nil {
				return nil, err
			}
			return r.Results, nil
		})
		for _, filter := range []PropertyFilter{{Value: "plain"}, {Operator: "is_not", Value: []any{"plain", "42"}},
			{Operator: "icontains", Value: "ESC"}, {Operator: "regex", Value: "^[0-9]"}, {Operator: "gt", Value: 1.0},
			{Operator: "is_set"}, {Operator: "is_not_set"}} {
			same("EventsQuery where "+cmp.Or(filter.Operator, "exact"), func(key string) (any, error) {
				filter.Key = key
				r, err := q.Events(ctx, scope, EventsQuery{Select: []string{"event", "count()"}, Properties: []PropertyFilter{filter},
					OrderBy: []string{"event"}, After: "all", Limit: 100}, now)
				if err != nil {
					return nil, err
				}
				return r.Results, nil
			})
		}
		same("EventsQuery select", func(key string) (any, error) {
			r, err := q.Events(ctx, scope, EventsQuery{Select: []string{"properties." + key, "count()"}, After: "all",
				OrderBy: []string{"1 NULLS FIRST"}, Limit: 100}, now)
			if err != nil {
				return nil, err
			}
			return r.Results, nil
		})
		same("TrendsQuery breakdown and filter", func(key string) (any, error) {
			r, err := q.Trends(ctx, scope, TrendsQuery{Series: []TrendsSeries{{Event: &pageview}, {Event: &second, Math: "dau"}},
				DateRange: DateRange{DateFrom: "-1d"}, BreakdownFilter: &BreakdownFilter{Breakdown: key},
				Properties: []PropertyFilter{{Key: key, Operator: "is_not", Value: "true"}}}, now)
			if err != nil {
				return nil, err
			}
			return r.Results, nil
		})
		same("FunnelsQuery breakdown and filter", func(key string) (any, error) {
			r, err := q.Funnels(ctx, scope, FunnelsQuery{Series: []FunnelsStep{{Event: &pageview}, {Event: &second,
				Properties: []PropertyFilter{{Key: key, Operator: "is_set"}}}},
				DateRange: DateRange{DateFrom: "-1d"}, BreakdownFilter: &BreakdownFilter{Breakdown: key}}, now)
			if err != nil {
				return nil, err
			}
			return r.Results, nil
		})
	}
}

// BenchmarkMaterialize is the Writer's cost of the materialized columns' values: one
// pass over an event's properties (bench/gen's posthog-js events) per operation, for a
// project that chose no property (/fixed) and one that chose benchChosen (/chosen-8).
func BenchmarkMaterialize(b *testing.B) {
	events, _ := benchEvents(b, 1000, true)
	for _, bench := range []struct {
		name   string
		chosen *[slotCount]string
	}{{"fixed", nil}, {"chosen-8", &benchChosen}} {
		b.Run(bench.name, func(b *testing.B) {
			m := materializer{render: func(string) (driver.Value, error) {
				b.Fatal("a bench/gen value needs DuckDB's rendering")
				return nil, nil
			}}
			var size int64
			for _, e := range events {
				size += int64(len(e.Properties))
			}
			b.SetBytes(size / int64(len(events)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := m.extract(events[i%len(events)].Properties, bench.chosen); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriterBesideBackfill measures what the backfills cost ingestion: 10,000-event
// commits of bench/gen events while the backfill of the materialized columns fills a
// million rows stored before migration 14 (the properties of bench/gen events, in
// turn), then while the move of their properties text to its zstd column runs
// (properties_text.go), then as many commits as during the first once both are done:
// each set's p50 and slowest commit, and how long each backfill took.
func BenchmarkWriterBesideBackfill(b *testing.B) {
	const stored = 1_000_000
	ctx := context.Background()
	events, _ := benchEvents(b, 10000, true)
	for range b.N {
		path := filepath.Join(b.TempDir(), "hedge.duckdb")
		db := openBefore(b, path, 14)
		if _, err := db.Exec(`INSERT INTO events (uuid, team_id, event, distinct_id, person_id, "timestamp", inserted_at, properties, lane)
			SELECT uuid(), 1, '$pageview', 'user-' || i % 1000, uuid(), now(), now(), d.doc, 'realtime'
			FROM range(?) r(i) JOIN (SELECT row_number() OVER () - 1 AS k, doc FROM (VALUES `+strings.TrimSuffix(strings.Repeat("(?), ", 100), ", ")+`) v(doc)) d
				ON d.k = i % 100`, append([]any{stored}, docArgs(events[:100])...)...); err != nil {
			b.Fatal(err)
		}
		db.Close()
		w, err := Open(ctx, Config{Path: path, FlushRows: 10000})
		if err != nil {
			b.Fatal(err)
		}
		commit := func() time.Duration {
			for i := range events {
				events[i].UUID = uuid.Must(uuid.NewV7())
			}
			begin := time.Now()
			if err := w.Writer().Submit(&Batch{Events: events}); err != nil {
				b.Fatal(err)
			}
			return time.Since(begin)
		}
		commit() // the persons, created once
		begin := time.Now()
		w.StartBackfill()
		var during, moving, after []time.Duration
		for !w.backfill.done.Load() {
			during = append(during, commit())
		}
		took := time.Since(begin)
		for !w.move.done.Load() {
			moving = append(moving, commit())
		}
		moved := time.Since(begin) - took
		if err := w.WaitBackfill(ctx); err != nil {
			b.Fatal(err)
		}
		for range during {
			after = append(after, commit())
		}
		w.Close()
		slices.Sort(during)
		slices.Sort(moving)
		slices.Sort(after)
		ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
		b.ReportMetric(took.Seconds(), "backfill-s")
		b.ReportMetric(float64(len(during)), "commits-during")
		b.ReportMetric(ms(during[len(during)/2]), "p50-during-ms")
		b.ReportMetric(ms(during[len(during)-1]), "max-during-ms")
		b.ReportMetric(moved.Seconds(), "move-s")
		if len(moving) > 0 {
			b.ReportMetric(ms(moving[len(moving)/2]), "p50-moving-ms")
			b.ReportMetric(ms(moving[len(moving)-1]), "max-moving-ms")
		}
		b.ReportMetric(ms(after[len(after)/2]), "p50-after-ms")
		b.ReportMetric(ms(after[len(after)-1]), "max-after-ms")
	}
}

func docArgs(events []Event) []any {
	args := make([]any, len(events))
	for i, e := range events {
		args[i] = e.Properties
	}
	return args
}
