// Package jsontext reads JSON text in place: the values of a document as the text they
// are written in (strings unquoted, numbers as written), the members of an object in
// the order they are written, and objects and arrays built from members of others. It
// is the JSON of the ingestion path, from the edge's payloads to the writer's identity
// model, so it allocates nothing where it can: a value is a view of the text it was
// read from, and only a string that has to be unescaped is copied.
//
// Aliasing: every string and slice this package returns may alias the text it was
// given (BytesToString and StringToBytes always do), so the text must not change while
// they are in use, and a caller that keeps one beyond the text's lifetime (in a cache,
// in a map that outlives the request) must copy it, with strings.Clone or bytes.Clone.
//
// The text is meant to be valid JSON, as a decoder has already checked it; on text
// that is not, the functions stop early or return nothing, and never panic.
package jsontext

import (
	"bytes"
	"strconv"
	"unsafe"

	"github.com/bytedance/sonic"
)

// unescaper decodes the JSON strings that hold escapes. It refuses a string with an
// unescaped control character (ValidateString), as the edge's payload decoding does.
var unescaper = sonic.Config{ValidateString: true}.Froze()

// Text is raw's value as text: a JSON string unquoted, or a number as written; null,
// "" and the other JSON values give "". The text aliases raw unless the string held
// escapes.
func Text(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if c := raw[0]; c == '-' || (c >= '0' && c <= '9') {
		return BytesToString(raw)
	}
	return String(raw)
}

// String is raw unquoted when it is a JSON string, else "". It aliases raw unless raw
// held escapes, which are decoded into a new string ("" when they are invalid).
func String(raw []byte) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return BytesToString(raw[1 : len(raw)-1])
	}
	var s string
	if unescaper.UnmarshalFromString(BytesToString(raw), &s) != nil {
		return ""
	}
	return s
}

// Number is raw's value when it is a JSON number.
func Number(raw []byte) (float64, bool) {
	if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		return 0, false
	}
	n, err := strconv.ParseFloat(BytesToString(raw), 64)
	return n, err == nil
}

// BytesToString views b as a string without copying; b must not change while the
// string is in use.
func BytesToString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// StringToBytes views s as bytes without copying, for reading text held in a string
// with this package; the bytes must never be written to.
func StringToBytes(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}
