package edge

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"
)

// fuzzHints are the ways a request may announce its encoding; the fuzzer picks one.
var fuzzHints = []struct{ contentType, contentEncoding, query string }{
	{"application/json", "", ""},
	{"text/plain", "", ""},
	{"application/json", "gzip", ""},
	{"", "", "compression=gzip-js"},
	{"application/x-www-form-urlencoded", "", "compression=base64"},
	{"application/x-www-form-urlencoded", "", ""},
	{"", "", "compression=lz64"},
	{"", "", "compression=base64"},
}

// FuzzDecode runs the whole decoding path, from body bytes to lane rows, and checks
// what the warehouse relies on. `go test` runs the seeds (the SDK bodies in every
// encoding they use, whole and truncated); `go test -fuzz FuzzDecode ./edge` explores.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/sdk-samples/*.json")
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var s struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(text, &s); err != nil {
			f.Fatal(err)
		}
		body := bytes.ReplaceAll(s.Body, []byte("phc_drive"), []byte(fuzzToken))
		var zipped bytes.Buffer
		zw := gzip.NewWriter(&zipped)
		zw.Write(body)
		zw.Close()
		b64 := base64.StdEncoding.EncodeToString(body)
		for _, seed := range []struct {
			body []byte
			hint uint8
		}{
			{body, 0}, {zipped.Bytes(), 1}, {zipped.Bytes(), 2}, {zipped.Bytes(), 3},
			{[]byte("data=" + url.QueryEscape(b64)), 4}, {[]byte("data=" + url.QueryEscape(string(body))), 5},
			{[]byte(b64), 7},
		} {
			f.Add(seed.body, seed.hint)
			f.Add(seed.body[:len(seed.body)/2], seed.hint) // truncated
			f.Add(seed.body[:len(seed.body)-1], seed.hint) // one byte short
		}
	}
	lz, _ := os.ReadFile("testdata/lz64-vectors.json")
	var vectors []struct{ Compressed string }
	json.Unmarshal(lz, &vectors)
	for _, v := range vectors {
		f.Add([]byte(v.Compressed), uint8(6))
	}
	f.Add([]byte(`{"api_key":"`+fuzzToken+`","event":"e","distinct_id":"u","$set":{"a":1},"properties":{"$set":{"b":2}}}`), uint8(0))
	f.Add([]byte(`[{"event":"e","properties":{"distinct_id":"\u0000x","token":"`+fuzzToken+`"}}]`), uint8(0))

	s := New(Config{})
	f.Fuzz(func(t *testing.T, body []byte, hint uint8) {
		h := fuzzHints[int(hint)%len(fuzzHints)]
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/batch/?" + h.query)
		if h.contentType != "" {
			ctx.Request.Header.SetContentType(h.contentType)
		}
		if h.contentEncoding != "" {
			ctx.Request.Header.Set("Content-Encoding", h.contentEncoding)
		}
		q := requestPool.Get().(*request)
		defer func() {
			q.release()
			requestPool.Put(q)
		}()
		q.res.budget = fuzzBudget
		q.body = append(q.body[:0], body...)
		payload, cerr := q.payload(&ctx)
		if cerr != nil {
			return
		}
		if cerr := q.parsed.decode(payload, &q.res); cerr != nil {
			return
		}
		if _, cerr := q.parsed.resolveToken(); cerr != nil {
			return
		}
		now := time.Now().UTC()
		if cerr := s.sort(q, 1, route{maxBody: maxBatchBody}, q.parsed.sentAt, now); cerr != nil {
			return
		}
		for _, b := range q.batches {
			for _, e := range b.Events {
				if !json.Valid([]byte(e.Properties)) || !strings.HasPrefix(e.Properties, "{") {
					t.Fatalf("properties stored that are not a JSON object: %q", e.Properties)
				}
				for _, text := range []string{e.Name, e.DistinctID, e.Properties} {
					if !utf8.ValidString(text) || strings.IndexByte(text, 0) >= 0 && text != e.Properties {
						t.Fatalf("text DuckDB would refuse or PostHog would not store: %q", text)
					}
				}
				if e.Name == "" || e.DistinctID == "" || utf8.RuneCountInString(e.DistinctID) > maxDistinctIDLength {
					t.Fatalf("event stored with name %q, distinct_id %q", e.Name, e.DistinctID)
				}
				if e.Timestamp.Sub(now) > maxFutureSkew {
					t.Fatalf("timestamp %v is more than 23 h ahead", e.Timestamp)
				}
			}
			for _, w := range b.Warnings {
				if _, ok := droppedTotal[w.Type]; !ok {
					t.Fatalf("unknown warning type %q", w.Type)
				}
			}
		}
	})
}

const fuzzToken = "phc_fuzz"

var fuzzBudget = newBudget(1<<30, time.Second)
