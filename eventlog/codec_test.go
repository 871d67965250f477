package eventlog

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

// fullEvent sets every field of an event.
func fullEvent(i int) warehouse.Event {
	return warehouse.Event{
		UUID: uuid.Must(uuid.NewV7()), TeamID: int64(i + 1), Name: "$identify", DistinctID: fmt.Sprintf("user-%d", i),
		Timestamp:  time.Date(2026, 11, 28, 10, 0, 0, i, time.UTC),
		Properties: `{"$current_url":"https://example.com/ü","n":1}`, Personless: i%2 == 1,
		Set: `{"email":"a@example.com"}`, SetOnce: `{"first":"x"}`, Unset: `["old"]`,
		AnonDistinctID: "anon-ü-😀", Alias: "alias", Groups: `{"company":"acme"}`,
		GroupType: "company", GroupKey: "acme", GroupSet: `{"name":"Acme"}`,
	}
}

func TestMessageRoundTrip(t *testing.T) {
	warning := warehouse.Warning{TeamID: 3, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Type: "skipped", Event: "e", DistinctID: "d", Details: `{"why":"x"}`}
	for _, c := range []struct {
		name     string
		lane     warehouse.Lane
		events   []warehouse.Event
		warnings []warehouse.Warning
	}{
		{"empty", warehouse.LaneRealtime, nil, nil},
		{"warnings only", warehouse.LaneRealtime, nil, []warehouse.Warning{warning, {}}},
		{"every field", warehouse.LaneHistorical, []warehouse.Event{fullEvent(0), fullEvent(1)}, []warehouse.Warning{warning}},
		{"empty strings and zero time", warehouse.LaneOverflow, []warehouse.Event{{TeamID: -1, Timestamp: time.Unix(0, 0).UTC()}}, nil},
		{"far timestamps", warehouse.LaneRealtime, []warehouse.Event{
			{Timestamp: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}, {Timestamp: time.Date(1500, 1, 1, 0, 0, 0, 1, time.UTC)},
			{Timestamp: time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC)}, {Timestamp: time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			plain := AppendMessage([]byte("kept"), c.lane, c.events, c.warnings)
			if !bytes.HasPrefix(plain, []byte("kept")) {
				t.Fatal("AppendMessage overwrote dst")
			}
			compressed := CompressMessage([]byte("kept"), plain[4:])
			if !bytes.HasPrefix(compressed, []byte("kept")) {
				t.Fatal("CompressMessage overwrote dst")
			}
			for _, msg := range [][]byte{plain[4:], compressed[4:]} {
				decodeEqual(t, msg, c.lane, c.events, c.warnings)
			}
		})
	}
}

// decodeEqual decodes msg and checks it holds lane's events and warnings.
func decodeEqual(t *testing.T, msg []byte, lane warehouse.Lane, events []warehouse.Event, warnings []warehouse.Warning) {
	t.Helper()
	b := warehouse.Batch{Position: warehouse.LogPosition{Partition: 2, Sequence: 9}}
	var scratch []byte
	if err := DecodeMessage(msg, &b, &scratch); err != nil {
		t.Fatalf("version %d: %v", msg[0], err)
	}
	if b.Lane != lane || len(b.Events) != len(events) || len(b.Warnings) != len(warnings) {
		t.Fatalf("decoded lane %v, %d events, %d warnings", b.Lane, len(b.Events), len(b.Warnings))
	}
	for i := range events {
		if !reflect.DeepEqual(b.Events[i], events[i]) {
			t.Errorf("event %d:\n got %+v\nwant %+v", i, b.Events[i], events[i])
		}
	}
	for i := range warnings {
		if !warnings[i].Time.Equal(b.Warnings[i].Time) && !warnings[i].Time.IsZero() {
			t.Errorf("warning %d time %v, want %v", i, b.Warnings[i].Time, warnings[i].Time)
		}
		got, want := b.Warnings[i], warnings[i]
		got.Time, want.Time = time.Time{}, time.Time{}
		if got != want {
			t.Errorf("warning %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	if b.Position != (warehouse.LogPosition{Partition: 2, Sequence: 9}) {
		t.Errorf("position %+v: DecodeMessage must leave it to the caller", b.Position)
	}
}

// The Publisher's messages are compressed when that makes them smaller, as the events
// of real requests (repeated property names) do; decoding reuses the scratch.
func TestMessageCompressed(t *testing.T) {
	events := benchmarkEvents()
	plain := AppendMessage(nil, warehouse.LaneRealtime, events, nil)
	msg := CompressMessage(nil, plain)
	if msg[0] != compressedVersion || len(msg)*3 > len(plain) {
		t.Fatalf("a message of %d bytes compressed to %d, version %d", len(plain), len(msg), msg[0])
	}
	decodeEqual(t, msg, warehouse.LaneRealtime, events, nil)
	// A message compressing would grow stays plain.
	tiny := AppendMessage(nil, warehouse.LaneRealtime, nil, nil)
	if got := CompressMessage(nil, tiny); !bytes.Equal(got, tiny) {
		t.Fatalf("an empty message compressed to %x, want %x", got, tiny)
	}
	var b warehouse.Batch
	scratch := make([]byte, 0, len(plain))
	if err := DecodeMessage(msg, &b, &scratch); err != nil {
		t.Fatal(err)
	}
	if cap(scratch) != len(plain) || len(scratch) != len(plain)-1 {
		t.Fatalf("scratch of %d/%d bytes after expanding %d: not reused", len(scratch), cap(scratch), len(plain)-1)
	}
}

func TestMessageFrames(t *testing.T) {
	// Two requests' frames in one message decode as one batch, in order.
	first, second := []warehouse.Event{fullEvent(0)}, []warehouse.Event{fullEvent(1), fullEvent(2)}
	msg := appendFrame(AppendMessage(nil, warehouse.LaneOverflow, first, nil), warehouse.LaneOverflow, second, []warehouse.Warning{{Type: "w"}})
	var b warehouse.Batch
	var scratch []byte
	if err := DecodeMessage(msg, &b, &scratch); err != nil {
		t.Fatal(err)
	}
	if b.Lane != warehouse.LaneOverflow || len(b.Events) != 3 || b.Events[2].UUID != second[1].UUID || len(b.Warnings) != 1 {
		t.Fatalf("decoded %+v", b)
	}
	mixed := appendFrame(AppendMessage(nil, warehouse.LaneOverflow, first, nil), warehouse.LaneRealtime, second, nil)
	if err := DecodeMessage(mixed, &b, &scratch); err == nil {
		t.Fatal("a message of two lanes decoded")
	}
}

func TestMessageRefused(t *testing.T) {
	valid := AppendMessage(nil, warehouse.LaneRealtime, []warehouse.Event{fullEvent(0)}, []warehouse.Warning{{Type: "t"}})
	var b warehouse.Batch
	var scratch []byte
	for n := range len(valid) {
		if err := DecodeMessage(valid[:n], &b, &scratch); err == nil {
			t.Fatalf("the first %d of %d bytes decoded", n, len(valid))
		}
	}
	compressed := CompressMessage(nil, AppendMessage(nil, warehouse.LaneRealtime, benchmarkEvents(), nil))
	for n := range len(compressed) {
		if err := DecodeMessage(compressed[:n], &b, &scratch); err == nil {
			t.Fatalf("the first %d of %d compressed bytes decoded", n, len(compressed))
		}
	}
	for name, msg := range map[string][]byte{
		"another version":          append([]byte{3}, valid[1:]...),
		"a corrupt block":          append([]byte{compressedVersion}, valid[1:]...),
		"expanding past the bound": {compressedVersion, 0x80, 0x80, 0x80, 0x80, 0x01},
		"compressed nothing":       {compressedVersion, 0},
		"an unknown lane":          append([]byte{messageVersion, 7}, valid[2:]...),
		"trailing bytes":           append(append([]byte{}, valid...), 0),
		"a forged count":           {messageVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"personless 2":             bytes.Replace(append([]byte{}, valid...), []byte{0, 9, '$', 'i'}, []byte{2, 9, '$', 'i'}, 1),
		"a string too long":        {messageVersion, 0, 0, 1, 0, 0, 0xff, 0x01},
	} {
		if err := DecodeMessage(msg, &b, &scratch); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzDecodeMessage(f *testing.F) {
	f.Add(AppendMessage(nil, warehouse.LaneRealtime, []warehouse.Event{fullEvent(0)}, []warehouse.Warning{{Type: "t"}}))
	f.Add(AppendMessage(nil, warehouse.LaneOverflow, nil, nil))
	f.Add(CompressMessage(nil, AppendMessage(nil, warehouse.LaneRealtime, benchmarkEvents()[:3], nil)))
	f.Fuzz(func(t *testing.T, msg []byte) {
		var b warehouse.Batch
		var scratch, scratch2 []byte
		if DecodeMessage(msg, &b, &scratch) != nil {
			return
		}
		// What decodes, frames joined, decodes the same from one frame, compressed.
		again := CompressMessage(nil, AppendMessage(nil, b.Lane, b.Events, b.Warnings))
		var b2 warehouse.Batch
		if err := DecodeMessage(again, &b2, &scratch2); err != nil {
			t.Fatalf("%x decoded, and its encoding %x does not: %v", msg, again, err)
		}
		if !reflect.DeepEqual(b, b2) {
			t.Fatalf("%x decoded as %+v, and encoded again as %+v", msg, b, b2)
		}
	})
}

func benchmarkEvents() []warehouse.Event {
	events := make([]warehouse.Event, 1000)
	for i := range events {
		events[i] = warehouse.Event{
			UUID: uuid.Must(uuid.NewV7()), TeamID: 1, Name: "$pageview", DistinctID: fmt.Sprintf("0190a2b4-%d", i),
			Timestamp:  time.Now().UTC(),
			Properties: `{"$current_url":"https://example.com/pricing","$browser":"Chrome","$os":"Mac OS X","$lib":"web","$lib_version":"1.200.0","$session_id":"0190a2b4-5c1e-7b2a-9f3d-0a1b2c3d4e5f","$screen_height":1080,"$screen_width":1920}`,
		}
	}
	return events
}

func BenchmarkAppendMessage(b *testing.B) {
	events := benchmarkEvents()
	var dst []byte
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendMessage(dst[:0], warehouse.LaneRealtime, events, nil)
	}
	b.SetBytes(int64(len(dst)))
}

func BenchmarkCompressMessage(b *testing.B) {
	msg := AppendMessage(nil, warehouse.LaneRealtime, benchmarkEvents(), nil)
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		dst = CompressMessage(dst[:0], msg)
	}
}

func BenchmarkDecodeMessage(b *testing.B) {
	plain := AppendMessage(nil, warehouse.LaneRealtime, benchmarkEvents(), nil)
	for name, msg := range map[string][]byte{"plain": plain, "compressed": CompressMessage(nil, plain)} {
		b.Run(name, func(b *testing.B) {
			var batch warehouse.Batch
			var scratch []byte
			b.ReportAllocs()
			b.SetBytes(int64(len(plain)))
			for b.Loop() {
				if err := DecodeMessage(msg, &batch, &scratch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
