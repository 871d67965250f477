package jsontext

import (
	"math"
	"testing"
	"unsafe"
)

func TestText(t *testing.T) {
	f := func(raw, want string) {
		t.Helper()
		if got := Text([]byte(raw)); got != want {
			t.Fatalf("Text(%s) = %q, want %q", raw, got, want)
		}
	}
	f(`"user-1"`, "user-1")
	f(`"a\"b"`, `a"b`)
	f(`"\u00e9t\u00e9"`, "été")
	f(`"\ud800"`, "\uFFFD") // a lone surrogate
	f(`12345`, "12345")
	f(`-1.5e3`, "-1.5e3") // as written
	f(`1e400`, "1e400")
	f(`""`, "")
	f(`null`, "")
	f(`true`, "")
	f(`{"a":1}`, "")
	f(`[1]`, "")
	f(``, "")
	f(`"`, "")
	f("\"a\\n\x01\"", "") // an unescaped control character, with escapes: refused
}

func TestString(t *testing.T) {
	f := func(raw, want string) {
		t.Helper()
		if got := String([]byte(raw)); got != want {
			t.Fatalf("String(%s) = %q, want %q", raw, got, want)
		}
	}
	f(`"2026-11-22T03:39:11Z"`, "2026-11-22T03:39:11Z")
	f(`"a\\b"`, `a\b`)
	f(`"\u0000"`, "\x00")
	f(`12`, "") // not a string
	f(`null`, "")
	f(`"bad \x"`, "") // an invalid escape
}

func TestNumber(t *testing.T) {
	f := func(raw string, want float64, wantOK bool) {
		t.Helper()
		got, ok := Number([]byte(raw))
		if ok != wantOK || (ok && got != want) {
			t.Fatalf("Number(%s) = %v, %v; want %v, %v", raw, got, ok, want, wantOK)
		}
	}
	f(`1795318751125`, 1795318751125, true)
	f(`-1.5`, -1.5, true)
	f(`1e300`, 1e300, true)
	f(`"12"`, 0, false)
	f(`null`, 0, false)
	f(``, 0, false)
	f(`1e400`, math.Inf(1), false) // out of range
}

// A string without escapes and a number are views of the text; an unescaped string
// is new.
func TestTextAliasing(t *testing.T) {
	within := func(s string, raw []byte) bool {
		start := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		base := uintptr(unsafe.Pointer(&raw[0]))
		return start >= base && start < base+uintptr(len(raw))
	}
	f := func(raw string, aliases bool) {
		t.Helper()
		b := []byte(raw)
		if got := within(Text(b), b); got != aliases {
			t.Fatalf("Text(%s) aliases its text: %v, want %v", raw, got, aliases)
		}
	}
	f(`"plain"`, true)
	f(`42`, true)
	f(`"esc\"aped"`, false)
}

func TestViews(t *testing.T) {
	if BytesToString(nil) != "" || len(StringToBytes("")) != 0 {
		t.Fatal("empty views are not empty")
	}
	b := []byte("text")
	s := BytesToString(b)
	b[0] = 'n'
	if s != "next" {
		t.Fatalf("BytesToString copied: %q", s)
	}
	if got := StringToBytes("text"); string(got) != "text" || cap(got) != 4 {
		t.Fatalf("StringToBytes = %q (cap %d)", got, cap(got))
	}
}
