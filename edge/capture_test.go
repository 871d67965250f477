package edge_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/admin"
	"github.com/hedge-analytics/hedge/edge"
	"github.com/hedge-analytics/hedge/eventlog"
	"github.com/hedge-analytics/hedge/flags"
	"github.com/hedge-analytics/hedge/internal/faults"
	"github.com/hedge-analytics/hedge/warehouse"
)

// captureEnv is a capture listener on loopback over a real warehouse whose project
// tokens come from a real bootstrap, wired as hedge serve wires it: its flags are a
// flags.Store shared with the management API, which also listens on loopback (adminURL)
// and answers the SDK routes the capture listener forwards.
type captureEnv struct {
	url       string
	token     string
	team      int64
	warehouse *warehouse.Warehouse
	flags     *flags.Store
	adminURL  string
	// personalKey (scope "*") and organization are the bootstrap's.
	personalKey  string
	organization string
}

func testLogger() *slog.Logger {
	if os.Getenv("HEDGE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func newCaptureEnv(t *testing.T, cfg edge.Config) *captureEnv {
	t.Helper()
	return newCaptureEnvWith(t, cfg, warehouse.Config{})
}

// newCaptureEnvWith is newCaptureEnv over a warehouse that writes as whCfg says (its
// Path and Logger are set here).
func newCaptureEnvWith(t *testing.T, cfg edge.Config, whCfg warehouse.Config) *captureEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	log := testLogger()
	whCfg.Path, whCfg.Logger = dir+"/hedge.duckdb", log
	wh, err := warehouse.Open(ctx, whCfg)
	if err != nil {
		t.Fatal(err)
	}
	boot, err := admin.BootstrapIfEmpty(ctx, wh.DB(), dir, admin.Bootstrap{UserEmail: "admin@localhost"})
	if err != nil {
		t.Fatal(err)
	}
	store := flags.NewStore(flags.Config{DB: wh.DB(), GroupTypes: wh.GroupTypes, Logger: log})
	api, err := admin.New(ctx, admin.Config{Warehouse: wh, Logger: log, Flags: store})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Handoff == nil {
		cfg.Handoff = wh.Writer()
	}
	cfg.Teams, cfg.Logger = api.ProjectTokens().Team, log
	cfg.Flags, cfg.People, cfg.SDKAPI, cfg.Locations = store, wh, api.Handler(), api.ProjectTokens().Location
	srv := edge.New(cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adminLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	go api.Serve(adminLn)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		api.Shutdown(ctx)
		wh.Close()
	})
	return &captureEnv{url: "http://" + ln.Addr().String(), token: boot.ProjectAPIKey, team: boot.ProjectID, warehouse: wh,
		flags: store, adminURL: "http://" + adminLn.Addr().String(), personalKey: boot.PersonalAPIKey, organization: boot.OrganizationID}
}

type answer struct {
	status int
	body   string
	header http.Header
}

func (env *captureEnv) send(t *testing.T, method, path string, body []byte, headers map[string]string) answer {
	t.Helper()
	a, err := env.do(method, path, body, headers)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// do is send for goroutines other than the test's, which must not call t.Fatal.
func (env *captureEnv) do(method, path string, body []byte, headers map[string]string) (answer, error) {
	req, err := http.NewRequest(method, env.url+path, bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(text), resp.Header}, err
}

func (env *captureEnv) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := env.warehouse.DB().QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// storedEvent is an events row.
type storedEvent struct {
	name, distinctID, properties, lane string
	timestamp                          time.Time
}

func (env *captureEnv) event(t *testing.T, id string) (storedEvent, bool) {
	t.Helper()
	var e storedEvent
	err := env.warehouse.DB().QueryRow(`SELECT event, distinct_id, `+warehouse.PropertiesText+`, lane, "timestamp" FROM events WHERE uuid = ?`, id).
		Scan(&e.name, &e.distinctID, &e.properties, &e.lane, &e.timestamp)
	return e, err == nil
}

func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// sample is a request recorded from a real SDK.
type sample struct {
	Request struct {
		Path      string            `json:"path"`
		Headers   map[string]string `json:"headers"`
		DecodedAs []string          `json:"decodedAs"`
	} `json:"request"`
	Body json.RawMessage `json:"body"`
}

// TestSDKSamples replays every recorded SDK request, encoded as its SDK encoded it, and
// checks every event row.
func TestSDKSamples(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	files, _ := filepath.Glob("testdata/sdk-samples/*.json")
	if len(files) == 0 {
		t.Fatal("no samples")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var s sample
			if err := json.Unmarshal(text, &s); err != nil {
				t.Fatal(err)
			}
			body := bytes.ReplaceAll(s.Body, []byte("phc_drive"), []byte(env.token))
			headers := map[string]string{"Content-Type": s.Request.Headers["content-type"]}
			switch {
			case s.Request.Headers["content-encoding"] == "gzip": // posthog-node
				body = gzipped(t, body)
				headers["Content-Encoding"] = "gzip"
			case len(s.Request.DecodedAs) > 0: // posthog-js: gzip as text/plain, announced nowhere
				body = gzipped(t, body)
			}
			a := env.send(t, "POST", s.Request.Path, body, headers)
			if a.status != 200 || a.body != `{"status": 1}` {
				t.Fatalf("answered %d %s", a.status, a.body)
			}

			var envelope struct {
				Historical bool `json:"historical_migration"`
				Batch      []struct {
					UUID       string          `json:"uuid"`
					Event      string          `json:"event"`
					DistinctID string          `json:"distinct_id"`
					Set        json.RawMessage `json:"$set"`
					Properties struct {
						DistinctID string          `json:"distinct_id"`
						Set        json.RawMessage `json:"$set"`
					} `json:"properties"`
				} `json:"batch"`
			}
			if err := json.Unmarshal(s.Body, &envelope); err != nil {
				t.Fatal(err)
			}
			wantLane := "realtime"
			if envelope.Historical {
				wantLane = "historical"
			}
			for _, sent := range envelope.Batch {
				got, ok := env.event(t, sent.UUID)
				if !ok {
					t.Fatalf("event %s (%s) not stored", sent.UUID, sent.Event)
				}
				wantDistinctID := sent.DistinctID
				if wantDistinctID == "" {
					wantDistinctID = sent.Properties.DistinctID
				}
				if got.name != sent.Event || got.distinctID != wantDistinctID || got.lane != wantLane {
					t.Fatalf("event %s stored as %+v, want %s by %s on %s", sent.UUID, got, sent.Event, wantDistinctID, wantLane)
				}
				var props map[string]json.RawMessage
				if err := json.Unmarshal([]byte(got.properties), &props); err != nil {
					t.Fatalf("stored properties are not JSON: %v", err)
				}
				if sent.Set != nil { // a top-level $set ends up in properties.$set
					var want, have map[string]any
					json.Unmarshal(sent.Set, &want)
					json.Unmarshal(props["$set"], &have)
					for k, v := range want {
						if fmt.Sprint(have[k]) != fmt.Sprint(v) {
							t.Fatalf("event %s: properties.$set[%s] = %v, want %v", sent.UUID, k, have[k], v)
						}
					}
				}
			}
		})
	}
}

// TestEncodings sends one event in every encoding PostHog's SDKs use.
func TestEncodings(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	event := func(id string) []byte {
		return fmt.Appendf(nil, `{"api_key":%q,"batch":[{"event":"enc","uuid":%q,"properties":{"distinct_id":"u","token":%q}}]}`, env.token, id, env.token)
	}
	single := func(id string) []byte {
		return fmt.Appendf(nil, `{"event":"enc","uuid":%q,"properties":{"distinct_id":"u","token":%q}}`, id, env.token)
	}
	form := func(values url.Values) []byte { return []byte(values.Encode()) }
	b64 := base64.StdEncoding.EncodeToString
	const formType = "application/x-www-form-urlencoded"
	lz64 := func(t *testing.T, plain []byte) string {
		t.Helper()
		// Made with the lz-string npm package 1.5.0 (see testdata/lz64-vectors.json).
		var vectors []struct{ Plain, Compressed string }
		text, _ := os.ReadFile("testdata/lz64-vectors.json")
		json.Unmarshal(text, &vectors)
		for _, v := range vectors {
			if v.Plain == strings.ReplaceAll(string(plain), env.token, "TOKEN") {
				return v.Compressed
			}
		}
		t.Skip("no lz-string vector")
		return ""
	}
	for _, tc := range []struct {
		name    string
		path    string
		body    func(id string) []byte
		headers map[string]string
	}{
		{"plain JSON", "/batch/", event, map[string]string{"Content-Type": "application/json"}},
		{"Content-Encoding gzip", "/batch/", func(id string) []byte { return gzipped(t, event(id)) },
			map[string]string{"Content-Encoding": "gzip"}},
		{"?compression=gzip", "/batch/?compression=gzip", func(id string) []byte { return gzipped(t, event(id)) }, nil},
		{"?compression=gzip-js", "/e/?compression=gzip-js", func(id string) []byte { return gzipped(t, event(id)) }, nil},
		{"gzip sniffed, text/plain", "/e/", func(id string) []byte { return gzipped(t, event(id)) },
			map[string]string{"Content-Type": "text/plain"}},
		{"form data= base64, ?compression=base64", "/e/?compression=base64",
			func(id string) []byte { return form(url.Values{"data": {b64(event(id))}}) }, map[string]string{"Content-Type": formType}},
		{"form data= base64, compression in the form", "/e/",
			func(id string) []byte { return form(url.Values{"data": {b64(event(id))}, "compression": {"base64"}}) },
			map[string]string{"Content-Type": formType}},
		{"form data= base64 with + sent as spaces", "/e/", func(id string) []byte {
			return []byte("data=" + strings.ReplaceAll(b64(append(event(id), "   ~~~>>>"[:0]...)), "+", " "))
		}, map[string]string{"Content-Type": formType}},
		{"form data= plain JSON", "/e/", func(id string) []byte { return form(url.Values{"data": {string(event(id))}}) },
			map[string]string{"Content-Type": formType}},
		{"form data= lz64, compression in the form", "/e/", func(id string) []byte {
			return form(url.Values{"data": {lzCompressToBase64(string(event(id)))}, "compression": {"lz64"}})
		}, map[string]string{"Content-Type": formType}},
		{"form data= lz64, ?compression=lz64 (older posthog-js)", "/e/?compression=lz64", func(id string) []byte {
			return form(url.Values{"data": {lzCompressToBase64(string(event(id)))}})
		}, map[string]string{"Content-Type": formType}},
		{"form data= base64 of gzip", "/e/", func(id string) []byte { return form(url.Values{"data": {b64(gzipped(t, event(id)))}}) },
			map[string]string{"Content-Type": formType}},
		{"whole body base64, ?compression=base64", "/e/?compression=base64", func(id string) []byte { return []byte(b64(event(id))) }, nil},
		{"whole body base64, sniffed", "/e/", func(id string) []byte { return []byte(b64(event(id))) }, nil},
		{"whole body URL-safe base64 without padding", "/e/", func(id string) []byte {
			return []byte(base64.RawURLEncoding.EncodeToString(event(id)))
		}, nil},
		{"data= in the query string", "/e/", nil, nil},
		{"bare array", "/e/", func(id string) []byte { return []byte("[" + string(single(id)) + "]") }, nil},
		{"single event object", "/capture/", single, nil},
		{"single event, token at the top", "/capture/", func(id string) []byte {
			return fmt.Appendf(nil, `{"token":%q,"event":"enc","uuid":%q,"distinct_id":"u"}`, env.token, id)
		}, nil},
		{"single event, $token", "/i/v0/e/", func(id string) []byte {
			return fmt.Appendf(nil, `{"$token":%q,"event":"enc","uuid":%q,"distinct_id":"u"}`, env.token, id)
		}, nil},
		{"/track without a trailing slash", "/track", single, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := uuid.NewString()
			path, body := tc.path, []byte(nil)
			if tc.body == nil {
				path += "?data=" + url.QueryEscape(b64(event(id)))
			} else {
				body = tc.body(id)
			}
			a := env.send(t, "POST", path, body, tc.headers)
			if a.status != 200 || a.body != `{"status": 1}` {
				t.Fatalf("answered %d %s", a.status, a.body)
			}
			if e, ok := env.event(t, id); !ok || e.name != "enc" || e.distinctID != "u" {
				t.Fatalf("event stored as %+v (found %v)", e, ok)
			}
		})
	}
	t.Run("form data= lz64", func(t *testing.T) {
		plain := []byte(`{"event":"$pageview","properties":{"distinct_id":"u1","token":"TOKEN","$current_url":"https://example.com/?a=1&b=2"}}`)
		compressed := lz64(t, plain)
		// The vector's token is TOKEN: register nothing, expect the unknown-token answer,
		// which proves the payload decoded down to its token.
		a := env.send(t, "POST", "/e/", form(url.Values{"data": {compressed}, "compression": {"lz64"}}), map[string]string{"Content-Type": formType})
		if a.status != 401 || !strings.Contains(a.body, `"code":"invalid_api_key"`) {
			t.Fatalf("lz64 payload answered %d %s", a.status, a.body)
		}
	})
}

func TestCaptureAnswers(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	tok := env.token
	for _, sc := range []struct {
		name   string
		method string
		path   string
		body   string
		status int
		want   string // exact body, or a fragment when it does not start with '{'
	}{
		{"missing token", "POST", "/capture/", `{"event":"e","distinct_id":"u"}`, 401,
			`{"type":"authentication_error","code":"missing_api_key","detail":"API key not provided. You can find your project API key in PostHog project settings.","attr":null}`},
		{"unknown token", "POST", "/batch/", `{"api_key":"phc_nobody","batch":[{"event":"e","distinct_id":"u"}]}`, 401,
			`{"type":"authentication_error","code":"invalid_api_key","detail":"Project API key invalid. You can find your project API key in PostHog project settings.","attr":null}`},
		{"personal API key", "POST", "/capture/", `{"api_key":"phx_abc","event":"e","distinct_id":"u"}`, 401, `personal API key`},
		{"different tokens in one batch", "POST", "/batch/",
			`{"batch":[{"api_key":"` + tok + `","event":"e","distinct_id":"u"},{"api_key":"phc_other","event":"e","distinct_id":"u"}]}`, 401, `different project API keys`},
		{"event token against the envelope", "POST", "/batch/",
			`{"api_key":"` + tok + `","batch":[{"event":"e","distinct_id":"u","properties":{"token":"phc_other"}}]}`, 401, `different project API keys`},
		{"empty body", "POST", "/batch/", ``, 400, `"code":"no_data"`},
		{"whitespace body", "POST", "/batch/", "  \n ", 400, `"code":"no_data"`},
		{"malformed JSON", "POST", "/batch/", `{"api_key":"` + tok + `","batch":[`, 400, `"code":"invalid_payload"`},
		{"trailing garbage", "POST", "/capture/", `{"api_key":"` + tok + `","event":"e","distinct_id":"u"} x`, 400, `"code":"invalid_payload"`},
		{"not JSON at all", "POST", "/capture/", `hello there`, 400, `"code":"invalid_payload"`},
		{"corrupt gzip", "POST", "/batch/?compression=gzip", "\x1f\x8b\x08garbage", 400, `not valid gzip`},
		{"corrupt base64", "POST", "/e/?compression=base64", `e30=!!`, 400, `not valid base64`},
		{"batch item not an object", "POST", "/batch/", `{"api_key":"` + tok + `","batch":[1]}`, 400, `event 0 is not a valid event object`},
		{"batch not an array", "POST", "/batch/", `{"api_key":"` + tok + `","batch":{"event":"e"}}`, 400, `batch must be a JSON array of events`},
		{"garbage between events", "POST", "/batch/", `{"api_key":"` + tok + `","batch":[{"event":"e","distinct_id":"u"} x {}]}`, 400, `"code":"invalid_payload"`},
		{"bare array with garbage", "POST", "/batch/", `[{"api_key":"` + tok + `","event":"e","distinct_id":"u"}, x]`, 400, `"code":"invalid_payload"`},
		{"event name not a string", "POST", "/batch/", `{"api_key":"` + tok + `","batch":[{"event":5,"distinct_id":"u"}]}`, 400, `"code":"invalid_payload"`},
		{"properties not an object", "POST", "/capture/", `{"api_key":"` + tok + `","event":"e","distinct_id":"u","properties":[1]}`, 400, `properties of event 0 must be a JSON object`},
		{"invalid uuid", "POST", "/capture/", `{"api_key":"` + tok + `","event":"e","distinct_id":"u","uuid":"nope"}`, 400, `uuid that is not a valid UUID`},
		{"GET", "GET", "/capture/", ``, 405, `"code":"method_not_allowed"`},
		{"PUT on batch", "PUT", "/batch/", `{}`, 405, `"code":"method_not_allowed"`},
		{"unknown path", "POST", "/nowhere", `{}`, 404, `"code":"not_found"`},
		{"health", "GET", "/_health", ``, 200, `{"status":"ok"}`},
		{"empty batch", "POST", "/batch/", `{"api_key":"` + tok + `","batch":[]}`, 200, `{"status": 1}`},
	} {
		t.Run(sc.name, func(t *testing.T) {
			a := env.send(t, sc.method, sc.path, []byte(sc.body), nil)
			if a.status != sc.status {
				t.Fatalf("status %d, want %d: %s", a.status, sc.status, a.body)
			}
			if strings.HasPrefix(sc.want, "{") && a.body != sc.want || !strings.Contains(a.body, sc.want) {
				t.Fatalf("body %s, want %s", a.body, sc.want)
			}
			if a.header.Get("Access-Control-Allow-Origin") == "" {
				t.Fatal("answer without Access-Control-Allow-Origin")
			}
			if sc.status >= 400 && a.header.Get("Content-Type") != "application/json" {
				t.Fatalf("error answered as %q", a.header.Get("Content-Type"))
			}
			if sc.status == 405 && a.header.Get("Allow") != "POST, OPTIONS" {
				t.Fatalf("405 with Allow %q", a.header.Get("Allow"))
			}
		})
	}
	if a := env.send(t, "POST", "/batch/", nil, map[string]string{"Content-Encoding": "gzip"}); a.status != 400 || !strings.Contains(a.body, `"code":"no_data"`) {
		t.Fatalf("an empty body announced as gzip: %d %s", a.status, a.body)
	}
	// A body announced as gzip that is not, or is garbage after a gzip header, is
	// corrupt (400), not too large (413), whatever its last four bytes read as a size:
	// an SDK told "too large" splits the batch and sends it again.
	for _, body := range []string{"this is not gzip at all", "\x1f\x8b\x08\x00" + strings.Repeat("\xff", 64)} {
		a := env.send(t, "POST", "/batch/", []byte(body), map[string]string{"Content-Encoding": "gzip"})
		if a.status != 400 || !strings.Contains(a.body, `"code":"invalid_payload"`) || !strings.Contains(a.body, "not valid gzip") {
			t.Fatalf("a corrupt body announced as gzip (%q): %d %s", body[:8], a.status, a.body)
		}
	}
	if n := env.count(t, `SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("refused requests stored %d events", n)
	}
}

func TestCORSPreflight(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	for _, path := range []string{"/e/", "/batch/", "/i/v0/e/"} {
		a := env.send(t, "OPTIONS", path, nil, map[string]string{
			"Origin":                         "https://app.example.com",
			"Access-Control-Request-Method":  "POST",
			"Access-Control-Request-Headers": "content-type",
		})
		h := a.header
		if a.status != 200 || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
			h.Get("Access-Control-Allow-Credentials") != "true" || h.Get("Access-Control-Allow-Methods") != "POST, OPTIONS" ||
			h.Get("Access-Control-Allow-Headers") != "content-type" {
			t.Fatalf("preflight of %s answered %d %v", path, a.status, h)
		}
	}
	a := env.send(t, "POST", "/e/", []byte(`{}`), map[string]string{"Origin": "https://app.example.com"})
	if a.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Fatalf("POST from an origin answered without it mirrored: %v", a.header)
	}
}

// TestSkippedEvents: events without a name, a distinct_id, a survey id, or identity
// events marked personless are skipped, the request still answers 200, and each skip
// is an ingestion_warnings row.
func TestSkippedEvents(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	body := fmt.Sprintf(`{"api_key":%q,"batch":[
		{"event":"kept","distinct_id":"u"},
		{"distinct_id":"u"},
		{"event":"","distinct_id":"u"},
		{"event":"no id"},
		{"event":"empty id","distinct_id":""},
		{"event":"null id","distinct_id":null},
		{"event":"survey sent","distinct_id":"u","properties":{"$survey_response":"yes"}},
		{"event":"survey shown","distinct_id":"u","properties":{"$survey_id":"s1"}},
		{"event":"$identify","distinct_id":"u","properties":{"$process_person_profile":false}},
		{"event":"personless","distinct_id":"u","properties":{"$process_person_profile":false}}
	]}`, env.token)
	if a := env.send(t, "POST", "/batch/", []byte(body), nil); a.status != 200 {
		t.Fatalf("answered %d %s", a.status, a.body)
	}
	var kept []string
	rows, _ := env.warehouse.DB().Query(`SELECT event FROM events ORDER BY rowid`)
	for rows.Next() {
		var name string
		rows.Scan(&name)
		kept = append(kept, name)
	}
	rows.Close()
	if fmt.Sprint(kept) != "[kept survey shown personless]" {
		t.Fatalf("kept %v", kept)
	}
	var warnings []string
	rows, _ = env.warehouse.DB().Query(`SELECT type || ':' || event || ':' || distinct_id FROM ingestion_warnings WHERE team_id = ? ORDER BY rowid`, env.team)
	for rows.Next() {
		var w string
		rows.Scan(&w)
		warnings = append(warnings, w)
	}
	rows.Close()
	want := []string{
		"missing_event_name::u", "missing_event_name::u", "missing_distinct_id:no id:",
		"missing_distinct_id:empty id:", "missing_distinct_id:null id:", "missing_survey_id:survey sent:u",
		"invalid_event_when_process_person_profile_is_false:$identify:u",
	}
	if strings.Join(warnings, "|") != strings.Join(want, "|") {
		t.Fatalf("warnings\n%v\nwant\n%v", warnings, want)
	}
	// /engage/ takes an event without a name as $identify.
	if a := env.send(t, "POST", "/engage/", fmt.Appendf(nil, `{"token":%q,"distinct_id":"e1","$set":{"a":1}}`, env.token), nil); a.status != 200 {
		t.Fatalf("engage answered %d %s", a.status, a.body)
	}
	if n := env.count(t, `SELECT count(*) FROM events WHERE event = '$identify' AND distinct_id = 'e1' AND `+warehouse.PropertiesText+` = '{"$set":{"a":1}}'`); n != 1 {
		t.Fatal("engage without a name was not stored as $identify")
	}
}

// A retried request (its 200 lost to a timeout or a dropped connection) stores its
// events once and is answered 200 again; an event without a uuid gets a new one each
// time, so it is stored each time; a uuid reused by another project is that project's
// event.
func TestRetriedEvents(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	other := env.newProject(t, "")
	const u1, u2 = "0192f0c4-0000-7000-8000-0000000000a1", "0192f0c4-0000-7000-8000-0000000000a2"
	batch := fmt.Appendf(nil, `{"api_key":%q,"batch":[
		{"event":"a","distinct_id":"u","uuid":%q},
		{"event":"b","distinct_id":"u","uuid":%q},
		{"event":"no uuid","distinct_id":"u"},
		{"event":"no uuid","distinct_id":"u"}
	]}`, env.token, u1, u2)
	single := fmt.Appendf(nil, `{"api_key":%q,"event":"b","distinct_id":"u","uuid":%q}`, env.token, u2)
	otherProject := fmt.Appendf(nil, `{"api_key":%q,"event":"a","distinct_id":"u","uuid":%q}`, other.token, u1)
	for _, r := range []struct {
		path string
		body []byte
	}{{"/batch/", batch}, {"/batch/", batch}, {"/capture/", single}, {"/e/", gzipped(t, batch)}, {"/capture/", otherProject}} {
		headers := map[string]string{}
		if r.path == "/e/" {
			headers["Content-Encoding"] = "gzip"
		}
		if a := env.send(t, "POST", r.path, r.body, headers); a.status != 200 || a.body != `{"status": 1}` {
			t.Fatalf("%s answered %d %s", r.path, a.status, a.body)
		}
	}
	for _, c := range []struct {
		team int64
		uuid string
		want int
	}{{env.team, u1, 1}, {env.team, u2, 1}, {other.id, u1, 1}} {
		if n := env.count(t, `SELECT count(*) FROM events WHERE team_id = ? AND uuid = ?`, c.team, c.uuid); n != c.want {
			t.Errorf("project %d has %d events %s, want %d", c.team, n, c.uuid, c.want)
		}
	}
	if n := env.count(t, `SELECT count(DISTINCT uuid) FROM events WHERE event = 'no uuid'`); n != 6 {
		t.Errorf("%d events without a uuid stored, want the 6 sent", n)
	}
}

func TestLanes(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{OverflowRate: 1, OverflowBurst: 3})
	var batch []string
	for i := range 5 {
		batch = append(batch, fmt.Sprintf(`{"event":"hot","distinct_id":"hot-user","properties":{"i":%d}}`, i))
	}
	batch = append(batch, `{"event":"cold","distinct_id":"cold-user"}`)
	body := fmt.Sprintf(`{"api_key":%q,"batch":[%s]}`, env.token, strings.Join(batch, ","))
	if a := env.send(t, "POST", "/batch/", []byte(body), nil); a.status != 200 {
		t.Fatalf("answered %d", a.status)
	}
	// The first 3 of the hot user's events fit its burst; 2 overflow; the cold user is untouched.
	if n := env.count(t, `SELECT count(*) FROM events WHERE distinct_id = 'hot-user' AND lane = 'overflow'`); n != 2 {
		t.Fatalf("%d overflow events, want 2", n)
	}
	if n := env.count(t, `SELECT count(*) FROM events WHERE lane = 'realtime'`); n != 4 {
		t.Fatalf("%d realtime events, want 4", n)
	}
	// Historical batches bypass the overflow rate and keep their order.
	var hist []string
	for i := range 20 {
		hist = append(hist, fmt.Sprintf(`{"event":"h%02d","distinct_id":"hot-user","timestamp":"2023-01-15T10:%02d:00Z"}`, i, i))
	}
	// posthog-node sends sent_at with historical batches too; their timestamps stay exact.
	body = fmt.Sprintf(`{"api_key":%q,"historical_migration":true,"sent_at":%q,"batch":[%s]}`,
		env.token, time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano), strings.Join(hist, ","))
	if a := env.send(t, "POST", "/batch/", []byte(body), nil); a.status != 200 {
		t.Fatalf("answered %d", a.status)
	}
	var order string
	env.warehouse.DB().QueryRow(`SELECT string_agg(event, ',' ORDER BY rowid) FROM events WHERE lane = 'historical'`).Scan(&order)
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("h%02d", i))
	}
	if order != strings.Join(want, ",") {
		t.Fatalf("historical events stored as %s", order)
	}
	if n := env.count(t, `SELECT count(*) FROM events WHERE lane = 'historical' AND "timestamp" = '2023-01-15T10:07:00Z' AND event = 'h07'`); n != 1 {
		t.Fatal("a historical event did not keep its exact timestamp")
	}
}

// batchOfSize builds a /batch/ body of exactly size bytes from events of at most 900 KB.
func batchOfSize(t *testing.T, token string, size int) []byte {
	t.Helper()
	head, tail := fmt.Sprintf(`{"api_key":%q,"batch":[`, token), `]}`
	var events []string
	total := len(head) + len(tail)
	for i := 0; total < size; i++ {
		comma := min(i, 1)
		event := fmt.Sprintf(`{"event":"big","distinct_id":"u","properties":{"i":%d,"pad":""}}`, i)
		remaining := size - total - comma - len(event)
		if remaining < 0 {
			t.Fatal("cannot reach the size exactly")
		}
		pad := min(remaining, 900<<10)
		events = append(events, strings.Replace(event, `"pad":""`, `"pad":"`+strings.Repeat("x", pad)+`"`, 1))
		total += comma + len(event) + pad
	}
	body := head + strings.Join(events, ",") + tail
	if len(body) != size {
		t.Fatalf("built %d bytes, want %d", len(body), size)
	}
	return []byte(body)
}

func TestBodyLimits(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	tooLarge := `{"type":"client_error","code":"request_too_large","detail":"Request too large.","attr":null}`

	// /batch/: smaller than 20 MB (20 x 1024 x 1024 bytes) is accepted, 20 MB is not.
	a := env.send(t, "POST", "/batch/", batchOfSize(t, env.token, 20<<20-1), nil)
	if a.status != 200 {
		t.Fatalf("20 MB - 1 byte: %d %s", a.status, a.body)
	}
	stored := env.count(t, `SELECT count(*) FROM events WHERE event = 'big'`)
	a = env.send(t, "POST", "/batch/", batchOfSize(t, env.token, 20<<20), nil)
	if a.status != 413 || a.body != tooLarge {
		t.Fatalf("20 MB: %d %s", a.status, a.body)
	}
	// Other routes: 2 MB.
	if a := env.send(t, "POST", "/e/", batchOfSize(t, env.token, 2<<20-1), nil); a.status != 200 {
		t.Fatalf("/e/ 2 MB - 1: %d %s", a.status, a.body)
	}
	if a := env.send(t, "POST", "/e/", batchOfSize(t, env.token, 2<<20), nil); a.status != 413 {
		t.Fatalf("/e/ 2 MB: %d %s", a.status, a.body)
	}
	if n := env.count(t, `SELECT count(*) FROM events WHERE event = 'big'`); n <= stored || n != stored+3 {
		t.Fatalf("%d big events after the limit tests, want %d", n, stored+3)
	}

	// Without Content-Length (chunked), the limit holds while reading.
	req, _ := http.NewRequest("POST", env.url+"/e/", io.MultiReader(bytes.NewReader(batchOfSize(t, env.token, 3<<20))))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Fatalf("chunked 3 MB on /e/: %d", resp.StatusCode)
	}

	// A gzip body that decompresses past 100 MB.
	bomb := gzipped(t, append([]byte(`{"api_key":"`+env.token+`","batch":[`), bytes.Repeat([]byte(" "), 101<<20)...))
	if a := env.send(t, "POST", "/batch/", bomb, map[string]string{"Content-Encoding": "gzip"}); a.status != 413 || !strings.Contains(a.body, "100 MB") {
		t.Fatalf("gzip bomb: %d %s", a.status, a.body)
	}
	// One event over 1 MB.
	big := fmt.Sprintf(`{"api_key":%q,"batch":[{"event":"e","distinct_id":"u","properties":{"pad":"%s"}}]}`, env.token, strings.Repeat("x", 1<<20))
	if a := env.send(t, "POST", "/batch/", []byte(big), nil); a.status != 413 || !strings.Contains(a.body, "1 MB") {
		t.Fatalf("event over 1 MB: %d %s", a.status, a.body)
	}
}

// TestOverloaded holds the in-flight byte budget with an upload that stalls half-way,
// and checks that the next request is answered 503 with Retry-After, then that the
// budget comes back.
func TestOverloaded(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{MaxInflightBytes: 300 << 10})
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	// A chunked upload: its first chunk makes the handler take a 256 KB share.
	fmt.Fprintf(conn, "POST /batch/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	chunk := strings.Repeat(" ", 70<<10)
	fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk)
	time.Sleep(200 * time.Millisecond)

	body := fmt.Appendf(nil, `{"api_key":%q,"batch":[{"event":"e","distinct_id":"u","properties":{"pad":"%s"}}]}`, env.token, strings.Repeat("x", 100<<10))
	a := env.send(t, "POST", "/batch/", body, nil)
	if a.status != 503 || a.header.Get("Retry-After") == "" || !strings.Contains(a.body, `"type":"server_error"`) {
		t.Fatalf("over budget: %d %s %v", a.status, a.body, a.header)
	}
	conn.Close() // the stalled upload ends and returns its share
	time.Sleep(100 * time.Millisecond)
	if a := env.send(t, "POST", "/batch/", body, nil); a.status != 200 {
		t.Fatalf("after the budget came back: %d %s", a.status, a.body)
	}
}

// Uploads that announce large bodies and stall hold what they sent, not what they
// announced, and only until the body idle timeout: they neither refuse other clients'
// bodies nor keep their connections.
func TestStalledUploads(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{MaxInflightBytes: 4 << 20, BodyIdleTimeout: 2 * time.Second})
	var stalled []net.Conn
	for range 8 { // 8 x 10 MB announced: twenty times the budget
		conn, err := net.Dial("tcp", strings.TrimPrefix(env.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /batch/ HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", 10<<20, strings.Repeat(" ", 100<<10))
		stalled = append(stalled, conn)
	}
	time.Sleep(200 * time.Millisecond)
	body := fmt.Appendf(nil, `{"api_key":%q,"batch":[{"event":"e","distinct_id":"u","properties":{"pad":"%s"}}]}`, env.token, strings.Repeat("x", 500<<10))
	if a := env.send(t, "POST", "/batch/", body, nil); a.status != 200 {
		t.Fatalf("a 500 KB body beside the stalled uploads: %d %s", a.status, a.body)
	}
	// Each stalled upload is ended within the idle timeout (closed, or reset).
	for _, conn := range stalled {
		conn.SetReadDeadline(time.Now().Add(4 * time.Second))
		var timeout net.Error
		if _, err := io.ReadAll(conn); errors.As(err, &timeout) && timeout.Timeout() {
			t.Fatalf("a stalled upload was not ended by the server: %v", err)
		}
	}
}

// Decoded events take memory beyond their bytes: a payload of empty objects is charged
// for it as it is decoded, and refused once it would hold more than the whole in-flight
// budget, instead of taking gigabytes (an unauthenticated request could).
func TestManyTinyEventsAreBounded(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{MaxInflightBytes: 32 << 20})
	tiny := []byte(`{"batch":[` + strings.Repeat(`{},`, 1<<20) + `{}]}`)
	if a := env.send(t, "POST", "/batch/", tiny, nil); a.status != 413 || !strings.Contains(a.body, "more events than the capture listener holds at once") {
		t.Fatalf("a million empty events: %d %s", a.status, a.body)
	}
	var batch strings.Builder
	for i := range 2000 {
		if i > 0 {
			batch.WriteByte(',')
		}
		fmt.Fprintf(&batch, `{"event":"e","distinct_id":"u%d","properties":{"n":%d}}`, i, i)
	}
	body := fmt.Sprintf(`{"api_key":%q,"batch":[%s]}`, env.token, batch.String())
	if a := env.send(t, "POST", "/batch/", []byte(body), nil); a.status != 200 {
		t.Fatalf("2000 ordinary events under the same budget: %d %s", a.status, a.body)
	}
	if n := env.count(t, `SELECT count(*) FROM events WHERE event = 'e'`); n != 2000 {
		t.Fatalf("%d events stored, want 2000", n)
	}
}

// An lz64 form body (older posthog-js: data=<lz-string base64>&compression=lz64) is
// stored end to end, its properties as the client wrote them, characters outside the
// BMP included (lz-string works on UTF-16 code units).
func TestLZ64Stored(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	id := uuid.NewString()
	props := `{"distinct_id":"lz-user","token":"` + env.token + `","$current_url":"https://example.com/?a=1&b=2","title":"été 😀 日本","n":[1,2.5,null,true]}`
	payload := `[{"event":"$pageview","uuid":"` + id + `","properties":` + props + `}]`
	body := url.Values{"data": {lzCompressToBase64(payload)}, "compression": {"lz64"}}.Encode()
	a := env.send(t, "POST", "/e/?ver=1.0&_="+fmt.Sprint(time.Now().UnixMilli()), []byte(body),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if a.status != 200 || a.body != `{"status": 1}` {
		t.Fatalf("answered %d %s", a.status, a.body)
	}
	got, ok := env.event(t, id)
	if !ok || got.name != "$pageview" || got.distinctID != "lz-user" || got.lane != "realtime" || got.properties != props {
		t.Fatalf("stored %+v (found %v), want the $pageview of lz-user with properties %s", got, ok, props)
	}
}

// Past the queue of rows waiting for a commit (MaxQueuedRows for QueueTimeout), or once
// the Writer is closed, capture answers 503 with Retry-After, which every SDK retries,
// and stores nothing of the request.
func TestWriterUnavailable(t *testing.T) {
	const unavailable = `{"type":"server_error","code":"unavailable","detail":"The server cannot take events right now; retry shortly.","attr":null}`
	capture := func(env *captureEnv, id string) []byte {
		return fmt.Appendf(nil, `{"api_key":%q,"event":"e","distinct_id":"u","uuid":%q}`, env.token, id)
	}
	check503 := func(t *testing.T, a answer) {
		t.Helper()
		if a.status != 503 || a.body != unavailable || a.header.Get("Retry-After") != "1" {
			t.Fatalf("answered %d %s, Retry-After %q; want 503 %s with Retry-After 1", a.status, a.body, a.header.Get("Retry-After"), unavailable)
		}
	}

	t.Run("overloaded", func(t *testing.T) {
		// One row may wait for a commit, and a group waits 400 ms for more rows: the
		// first of two requests holds the queue that long, the second gives up after 20 ms.
		env := newCaptureEnvWith(t, edge.Config{}, warehouse.Config{
			MaxQueuedRows: 1, QueueTimeout: 20 * time.Millisecond, FlushInterval: 400 * time.Millisecond})
		ids := [2]string{uuid.NewString(), uuid.NewString()}
		var answers [2]answer
		var errs [2]error
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() { answers[i], errs[i] = env.do("POST", "/capture/", capture(env, ids[i]), nil) })
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		ok, refused := 0, 1
		if answers[0].status != 200 {
			ok, refused = 1, 0
		}
		if answers[ok].status != 200 {
			t.Fatalf("neither request was accepted: %d %s, %d %s", answers[0].status, answers[0].body, answers[1].status, answers[1].body)
		}
		check503(t, answers[refused])
		if _, stored := env.event(t, ids[ok]); !stored {
			t.Fatal("the accepted event is not stored")
		}
		if _, stored := env.event(t, ids[refused]); stored {
			t.Fatal("the refused event is stored")
		}
		// The queue is free again once the first commit is done.
		if a := env.send(t, "POST", "/capture/", capture(env, uuid.NewString()), nil); a.status != 200 {
			t.Fatalf("after the commit: %d %s", a.status, a.body)
		}
	})

	t.Run("full log", func(t *testing.T) {
		// The log holds 64 KB and nothing applies it: once full, capture answers 503
		// with Retry-After, never 200 from memory.
		node, err := eventlog.Open(context.Background(), eventlog.Config{Dir: t.TempDir(), Partitions: 1, MaxBytes: 64 << 10, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		publisher := eventlog.NewPublisher(node)
		t.Cleanup(func() {
			publisher.Close()
			node.Close()
		})
		env := newCaptureEnv(t, edge.Config{Handoff: publisher})
		// The log compresses its messages: the padding is random, which does not shrink.
		pad := make([]byte, 4<<10)
		rand.Read(pad)
		body := fmt.Appendf(nil, `{"api_key":%q,"batch":[{"event":"e","distinct_id":"u","properties":{"pad":%q}}]}`, env.token, hex.EncodeToString(pad))
		for i := 0; ; i++ {
			a := env.send(t, "POST", "/batch/", body, nil)
			if a.status == 503 {
				check503(t, a)
				break
			}
			if a.status != 200 || i > 100 {
				t.Fatalf("send %d into a 64 KB log: %d %s", i, a.status, a.body)
			}
		}
	})

	t.Run("closed", func(t *testing.T) {
		env := newCaptureEnv(t, edge.Config{})
		env.warehouse.Writer().Close()
		check503(t, env.send(t, "POST", "/capture/", capture(env, uuid.NewString()), nil))
		// A request whose events are all skipped still has warnings to commit.
		check503(t, env.send(t, "POST", "/batch/", fmt.Appendf(nil, `{"api_key":%q,"batch":[{"distinct_id":"u"}]}`, env.token), nil))
		if n := env.count(t, `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM ingestion_warnings)`); n != 0 {
			t.Fatalf("%d rows stored after the writer closed", n)
		}
	})
}

// A body that is one event (no "batch", or "batch": null) is refused past 1 MB, on
// every route, even where the body limit is larger.
func TestSingleEventLimit(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	const eventTooLarge = `{"type":"client_error","code":"request_too_large","detail":"Request too large: an event is larger than 1 MB.","attr":null}`
	f := func(path, batch string, size, status int) {
		t.Helper()
		id := uuid.NewString()
		body := fmt.Sprintf(`{"api_key":%q,%s"event":"one","distinct_id":"u","uuid":%q,"properties":{"pad":""}}`, env.token, batch, id)
		body = strings.Replace(body, `"pad":""`, `"pad":"`+strings.Repeat("x", size-len(body))+`"`, 1)
		if len(body) != size {
			t.Fatalf("built %d bytes, want %d", len(body), size)
		}
		a := env.send(t, "POST", path, []byte(body), nil)
		if a.status != status || status == 413 && a.body != eventTooLarge {
			t.Fatalf("%d-byte event on %s: %d %s, want %d", size, path, a.status, a.body, status)
		}
		if _, stored := env.event(t, id); stored != (status == 200) {
			t.Fatalf("%d-byte event on %s: stored %v", size, path, stored)
		}
	}
	f("/capture/", "", 1<<20, 200)
	f("/capture/", "", 1<<20+1, 413)
	f("/e/", `"batch":null,`, 1<<20, 200)
	f("/e/", `"batch":null,`, 1<<20+1, 413)
	f("/batch/", "", 1<<20+1, 413)
	f("/i/v0/e/", "", 2<<20-1, 413)
}

// sent_at may come in the query string (posthog-js: ?_=<epoch ms>; or ?sent_at=) when
// the body has none; it corrects the client's clock as a body sent_at does.
func TestSentAtFromQuery(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	ms := func(at time.Time) string { return fmt.Sprint(at.UnixMilli()) }
	for _, sc := range []struct {
		name       string
		query      func(now time.Time) string
		bodySentAt bool // the body's sent_at is 10 minutes ahead
		props      string
		corrected  bool // stored at about now, rather than 10 minutes ahead as sent
	}{
		{"?_= (posthog-js)", func(now time.Time) string { return "?_=" + ms(now.Add(10*time.Minute)) }, false, `{}`, true},
		{"?sent_at=", func(now time.Time) string { return "?sent_at=" + ms(now.Add(10*time.Minute)) }, false, `{}`, true},
		{"?_= before ?sent_at=", func(now time.Time) string {
			return "?_=" + ms(now.Add(10*time.Minute)) + "&sent_at=" + ms(now.Add(-time.Hour))
		}, false, `{}`, true},
		{"the body's sent_at before the query's", func(now time.Time) string { return "?_=" + ms(now.Add(-time.Hour)) }, true, `{}`, true},
		{"no sent_at", func(time.Time) string { return "" }, false, `{}`, false},
		{"?_= in seconds is no sent_at", func(now time.Time) string { return fmt.Sprint("?_=", now.Add(10*time.Minute).Unix()) }, false, `{}`, false},
		{"$ignore_sent_at", func(now time.Time) string { return "?_=" + ms(now.Add(10*time.Minute)) }, false, `{"$ignore_sent_at":true}`, false},
	} {
		t.Run(sc.name, func(t *testing.T) {
			now := time.Now()
			ahead := now.Add(10 * time.Minute).UTC().Format(time.RFC3339Nano)
			sentAt := ""
			if sc.bodySentAt {
				sentAt = fmt.Sprintf(`"sent_at":%q,`, ahead)
			}
			id := uuid.NewString()
			body := fmt.Sprintf(`{"api_key":%q,%s"event":"skewed","distinct_id":"u","uuid":%q,"timestamp":%q,"properties":%s}`,
				env.token, sentAt, id, ahead, sc.props)
			if a := env.send(t, "POST", "/e/"+sc.query(now), []byte(body), nil); a.status != 200 {
				t.Fatalf("answered %d %s", a.status, a.body)
			}
			got, ok := env.event(t, id)
			if !ok {
				t.Fatal("not stored")
			}
			want := now.Add(10 * time.Minute)
			if sc.corrected {
				want = now
			}
			if d := got.timestamp.Sub(want); d < -30*time.Second || d > 30*time.Second {
				t.Fatalf("stored at %v, %v from %v", got.timestamp, d, want)
			}
		})
	}
}

// A chunked /batch/ body (no Content-Length) is held to the same 20 MB as one that
// announces its length: 20 x 1024 x 1024 bytes is refused, one byte less is not.
func TestChunkedBatchLimit(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	f := func(size, status int) {
		t.Helper()
		body := batchOfSize(t, env.token, size)
		before := env.count(t, `SELECT count(*) FROM events WHERE event = 'big'`)
		req, err := http.NewRequest("POST", env.url+"/batch/", io.MultiReader(bytes.NewReader(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1 // sent chunked
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Fatalf("chunked %d bytes: %d %s, want %d", size, resp.StatusCode, text, status)
		}
		want := 0
		if status == 200 {
			want = bytes.Count(body, []byte(`"event":"big"`))
		}
		if n := env.count(t, `SELECT count(*) FROM events WHERE event = 'big'`) - before; n != want {
			t.Fatalf("chunked %d bytes: %d events stored, want %d", size, n, want)
		}
	}
	f(20<<20, 413)
	f(20<<20-1, 200)
}

// A $groupidentify whose $group_key is longer than 400 characters, or whose $group_set
// is not an object, is skipped with its reason in ingestion_warnings; the request and
// the rest of its events are accepted.
func TestGroupIdentifySkipped(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	group := func(distinctID, key, set string) string {
		return fmt.Sprintf(`{"event":"$groupidentify","distinct_id":%q,"properties":{"$group_type":"company","$group_key":%q,"$group_set":%s}}`,
			distinctID, key, set)
	}
	body := fmt.Sprintf(`{"api_key":%q,"batch":[%s]}`, env.token, strings.Join([]string{
		group("long-key", strings.Repeat("k", 401), `{"name":"A"}`),
		group("longest-key", strings.Repeat("é", 400), `{"name":"B"}`), // characters, not bytes
		group("string-set", "acme", `"name=Acme"`),
		group("array-set", "acme", `[{"name":"Acme"}]`),
		group("number-set", "acme", `5`),
		group("null-set", "acme", `null`),
		group("object-set", "acme", `{"name":"Acme"}`),
		`{"event":"kept","distinct_id":"u"}`,
	}, ","))
	if a := env.send(t, "POST", "/batch/", []byte(body), nil); a.status != 200 || a.body != `{"status": 1}` {
		t.Fatalf("answered %d %s", a.status, a.body)
	}
	var warnings, kept string
	env.warehouse.DB().QueryRow(`SELECT string_agg(type || ':' || event || ':' || distinct_id, '|' ORDER BY rowid) FROM ingestion_warnings WHERE team_id = ?`,
		env.team).Scan(&warnings)
	if want := "group_key_too_long:$groupidentify:long-key|invalid_group_set:$groupidentify:string-set|" +
		"invalid_group_set:$groupidentify:array-set|invalid_group_set:$groupidentify:number-set"; warnings != want {
		t.Fatalf("warnings\n%s\nwant\n%s", warnings, want)
	}
	env.warehouse.DB().QueryRow(`SELECT string_agg(distinct_id, ',' ORDER BY rowid) FROM events`).Scan(&kept)
	if kept != "longest-key,null-set,object-set,u" {
		t.Fatalf("kept %s", kept)
	}
}

// Requests share group commits, and no commit holds more than FlushRows rows: twenty
// concurrent one-event requests, which a 300 ms wait would otherwise gather into one
// commit, are committed three at a time (events committed together share inserted_at).
func TestGroupCommitFlushRows(t *testing.T) {
	env := newCaptureEnvWith(t, edge.Config{}, warehouse.Config{FlushRows: 3, FlushInterval: 300 * time.Millisecond})
	const requests = 20
	var answers [requests]answer
	var errs [requests]error
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			body := fmt.Appendf(nil, `{"api_key":%q,"event":"grouped","distinct_id":"u%d"}`, env.token, i)
			answers[i], errs[i] = env.do("POST", "/capture/", body, nil)
		})
	}
	wg.Wait()
	for i := range requests {
		if errs[i] != nil || answers[i].status != 200 {
			t.Fatalf("request %d: %v %d %s", i, errs[i], answers[i].status, answers[i].body)
		}
	}
	var events, commits, largest int
	err := env.warehouse.DB().QueryRow(`SELECT sum(n), count(*), max(n) FROM (SELECT count(*) AS n FROM events GROUP BY inserted_at)`).
		Scan(&events, &commits, &largest)
	if err != nil {
		t.Fatal(err)
	}
	if events != requests || largest != 3 {
		t.Fatalf("%d events in %d commits, the largest of %d rows; want %d events, at most 3 (and 3) a commit", events, commits, largest, requests)
	}
}

// Every answer of the capture listener is nosniff: no browser may take it for a page
// or a script, whatever its path or status.
func TestNosniff(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	event := []byte(`{"api_key":"` + env.token + `","event":"e","distinct_id":"u"}`)
	for _, r := range []struct {
		method, path string
		body         []byte
		status       int
	}{
		{"POST", "/capture/", event, 200},
		{"POST", "/capture/", []byte(`{`), 400},
		{"GET", "/capture/", nil, 405},
		{"GET", "/nowhere", nil, 404},
		{"GET", "/_health", nil, 200},
	} {
		a := env.send(t, r.method, r.path, r.body, map[string]string{"Content-Type": "application/json"})
		if a.status != r.status || a.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: %d, X-Content-Type-Options %q", r.method, r.path, a.status, a.header.Get("X-Content-Type-Options"))
		}
	}
}

// A lone UTF-16 surrogate is stored as U+FFFD, pairs and the rest of the batch as sent,
// so the project's property reads keep working.
func TestLoneSurrogates(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	body := `{"api_key":"` + env.token + `","batch":[` +
		`{"event":"lone","distinct_id":"u1","properties":{"a":"x\ud800y","$set":{"name":"\udc00"}}},` +
		`{"event":"pair","distinct_id":"u1","properties":{"a":"\ud83d\ude00","b":"\\ud800"}}]}`
	if a := env.send(t, "POST", "/batch/", []byte(body), map[string]string{"Content-Type": "application/json"}); a.status != 200 {
		t.Fatalf("answered %d %s", a.status, a.body)
	}
	rows, err := env.warehouse.DB().Query(`SELECT event, json_extract_string(` + warehouse.PropertiesText + `, '$.a'), json_extract_string(` + warehouse.PropertiesText + `, '$.b')
		FROM events ORDER BY event`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var event string
		var a, b *string
		if err := rows.Scan(&event, &a, &b); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %q %v", event, *a, b != nil && *b == `\ud800`))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"lone \"x\ufffdy\" false", "pair \"\U0001f600\" true"}; !slices.Equal(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	props, found, err := env.warehouse.PersonProperties(context.Background(), env.team, "u1")
	if err != nil || !found || props != `{"name":"\ufffd"}` {
		t.Fatalf("person properties %s %v %v", props, found, err)
	}
}

// A half-sent request is closed once the header timeout passes, and one address holds
// at most MaxConnsPerIP connections: stalled clients cannot hold the listener.
func TestHalfSentRequests(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{HeaderTimeout: 300 * time.Millisecond, MaxConnsPerIP: 4})
	addr := strings.TrimPrefix(env.url, "http://")
	var conns []net.Conn
	for range 4 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /batch/ HTTP/1.1\r\nHost: x\r\n") // never ends its headers
		conns = append(conns, conn)
	}
	time.Sleep(100 * time.Millisecond)
	fifth, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer fifth.Close()
	fmt.Fprintf(fifth, "GET /_health HTTP/1.1\r\nHost: x\r\n\r\n")
	fifth.SetReadDeadline(time.Now().Add(2 * time.Second))
	if answer, _ := io.ReadAll(fifth); !bytes.HasPrefix(answer, []byte("HTTP/1.1 429")) {
		t.Fatalf("a fifth connection from the same address: %q", answer)
	}
	for _, conn := range conns {
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		var timeout net.Error
		if _, err := io.ReadAll(conn); errors.As(err, &timeout) && timeout.Timeout() {
			t.Fatalf("a half-sent request was not closed: %v", err)
		}
	}
	if a := env.send(t, "GET", "/_health", nil, nil); a.status != 200 {
		t.Fatalf("after the half-sent requests: %d", a.status)
	}
}

// TestLongIdentityIDs: $anon_distinct_id and alias are cut to 200 characters as
// distinct_id is, so an anonymous id longer than that, stored cut as its events'
// distinct_id, is the one an $identify or a $create_alias naming it in full merges;
// and no id longer than 200 characters is stored.
func TestLongIdentityIDs(t *testing.T) {
	env := newCaptureEnv(t, edge.Config{})
	for _, sc := range []struct{ name, merge string }{
		{"$identify", `{"event":"$identify","distinct_id":"user-%[1]s","properties":{"$anon_distinct_id":%[2]q}}`},
		{"$create_alias", `{"event":"$create_alias","distinct_id":"user-%[1]s","properties":{"alias":%[2]q}}`},
	} {
		t.Run(sc.name, func(t *testing.T) {
			anon := sc.name + strings.Repeat("x", 300)
			env.ingest(t, env.token, fmt.Sprintf(`{"event":"pageview","distinct_id":%q}`, anon))
			env.ingest(t, env.token, fmt.Sprintf(sc.merge, sc.name, anon))
			persons, _, err := env.warehouse.Persons(context.Background(), env.team, warehouse.PersonFilter{DistinctID: "user-" + sc.name}, 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{anon[:200], "user-" + sc.name}; len(persons) != 1 || !slices.Equal(persons[0].DistinctIDs, want) {
				t.Fatalf("the user's person: %+v, want one with distinct ids %q", persons, want)
			}
		})
	}
	if n := env.count(t, `SELECT count(*) FROM person_distinct_ids WHERE length(distinct_id) > 200`); n != 0 {
		t.Fatalf("%d distinct ids longer than 200 characters stored", n)
	}
}

// TestHealthQueriesTheDatabase: both listeners' /_health run a query, so once DuckDB has
// invalidated the database (every statement fails, Ping still succeeds) they answer
// 503, where they answered 200 before.
func TestHealthQueriesTheDatabase(t *testing.T) {
	env := newCaptureEnvWith(t, edge.Config{}, warehouse.Config{MemoryLimit: "64MB"})
	admin := &captureEnv{url: env.adminURL}
	for _, l := range []*captureEnv{env, admin} {
		if a := l.send(t, "GET", "/_health", nil, nil); a.status != 200 || a.body != `{"status":"ok"}` {
			t.Fatalf("%s/_health of a healthy database: %d %s", l.url, a.status, a.body)
		}
	}
	if err := faults.Invalidate(env.warehouse.DB()); err == nil {
		t.Fatal("the database was not invalidated")
	}
	for _, l := range []*captureEnv{env, admin} {
		if a := l.send(t, "GET", "/_health", nil, nil); a.status != 503 || a.body != `{"status":"unavailable"}` {
			t.Fatalf("%s/_health of an invalidated database: %d %s", l.url, a.status, a.body)
		}
	}
}
