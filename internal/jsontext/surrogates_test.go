package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestRepairSurrogates(t *testing.T) {
	f := func(in, want string, repaired int) {
		t.Helper()
		text := []byte(in)
		if n := RepairSurrogates(text); string(text) != want || n != repaired {
			t.Fatalf("RepairSurrogates(%s) = %s, %d; want %s, %d", in, text, n, want, repaired)
		}
	}
	f(`{"a":"b"}`, `{"a":"b"}`, 0)
	f(`{"a":"\ud800"}`, `{"a":"\ufffd"}`, 1)
	f(`{"a":"\uDFFF"}`, `{"a":"\ufffd"}`, 1)
	// A pair is a character; its halves stay.
	f(`{"a":"\ud83d\ude00"}`, `{"a":"\ud83d\ude00"}`, 0)
	f(`{"a":"\ud83d\ude00\ude00"}`, `{"a":"\ud83d\ude00\ufffd"}`, 1)
	// A high half followed by anything but a low half, at the end of a string too.
	f(`{"a":"\ud83dx","b":"\ud83d"}`, `{"a":"\ufffdx","b":"\ufffd"}`, 2)
	f(`{"a":"\ud83d\ud83d\ude00"}`, `{"a":"\ufffd\ud83d\ude00"}`, 1)
	// An escaped backslash followed by the letters ud800 is no escape of a code unit.
	f(`{"a":"\\ud800","b":"\\\ud800"}`, `{"a":"\\ud800","b":"\\\ufffd"}`, 1)
	// Other escapes, and text that ends early, are left as they are.
	f(`{"a":"\n\u00e9\"\/"}`, `{"a":"\n\u00e9\"\/"}`, 0)
	f(`"\ud8`, `"\ud8`, 0)
	f(`\`, `\`, 0)
}

// FuzzRepairSurrogates: whatever the text, the repair keeps its length and leaves no
// lone surrogate behind, and valid JSON stays valid.
func FuzzRepairSurrogates(f *testing.F) {
	for _, s := range []string{`{"a":"\ud800"}`, `"\ud83d\ude00"`, `"\\ud800"`, `"\udc00\ud800"`, `"\u12"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		text := []byte(in)
		valid := json.Valid(text)
		RepairSurrogates(text)
		if len(text) != len(in) {
			t.Fatalf("length changed: %q -> %q", in, text)
		}
		if n := RepairSurrogates(text); n != 0 {
			t.Fatalf("%q: %d lone surrogates left after a repair", text, n)
		}
		if valid {
			var s any
			dec := json.NewDecoder(bytes.NewReader(text))
			dec.UseNumber()
			if err := dec.Decode(&s); err != nil {
				t.Fatalf("%q became invalid: %q: %v", in, text, err)
			}
		}
	})
}
