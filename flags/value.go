package flags

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hedge-analytics/hedge/internal/jsontext"
)

// valueKind is the JSON type of a value.
type valueKind uint8

const (
	kindNull valueKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// value is a JSON value as the operators read it: a property of a person or a group,
// or the value of a filter.
type value struct {
	kind valueKind
	b    bool
	// num is a number's value.
	num float64
	// s is the text of a string, a number, an array or an object (see text).
	s string
	// items are an array's elements.
	items []value
}

// text is the text of a value, the form every text operator compares: a string as it
// is; null as "null"; a boolean as "true" or "false"; a number as JSON writes it,
// integers as integers and any other number with a fraction or an exponent (5.0 stays
// "5.0", 1.50 becomes "1.5"); an array or an object as compact JSON with the members
// of objects sorted by key.
func (v *value) text() string {
	switch v.kind {
	case kindNull:
		return "null"
	case kindBool:
		if v.b {
			return "true"
		}
		return "false"
	}
	return v.s
}

func stringValue(s string) value { return value{kind: kindString, s: s} }

// numberValue is the number written as text (a valid JSON number).
func numberValue(text string) value {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !isRangeError(err) {
		return value{kind: kindString, s: text}
	}
	return value{kind: kindNumber, num: f, s: numberText(text, f)}
}

func isRangeError(err error) bool { return errors.Is(err, strconv.ErrRange) }

// rawValue is the value of the JSON text raw, which must be valid JSON. Strings alias
// raw unless they hold escapes.
func rawValue(raw []byte) value {
	if len(raw) == 0 {
		return value{}
	}
	switch c := raw[0]; {
	case c == '"':
		return stringValue(jsontext.String(raw))
	case c == '-' || (c >= '0' && c <= '9'):
		return numberValue(jsontext.BytesToString(raw))
	case c == 't':
		return value{kind: kindBool, b: true}
	case c == 'f':
		return value{kind: kindBool}
	case c == 'n':
		return value{}
	}
	x, err := decodeValue(raw)
	if err != nil {
		return value{}
	}
	return anyValue(x)
}

// anyValue is the value of x, a JSON value decoded with json.Decoder.UseNumber (so
// numbers are json.Number). float64 and the integer types are read too.
func anyValue(x any) value {
	switch x := x.(type) {
	case nil:
		return value{}
	case bool:
		return value{kind: kindBool, b: x}
	case string:
		return stringValue(x)
	case json.Number:
		return numberValue(string(x))
	case float64:
		return value{kind: kindNumber, num: x, s: floatText(x)}
	case float32:
		return anyValue(float64(x))
	case int:
		return numberValue(strconv.Itoa(x))
	case int64:
		return numberValue(strconv.FormatInt(x, 10))
	case int32:
		return numberValue(strconv.FormatInt(int64(x), 10))
	case uint64:
		return numberValue(strconv.FormatUint(x, 10))
	case json.RawMessage:
		return rawValue(x)
	case []any:
		items := make([]value, len(x))
		for i, e := range x {
			items[i] = anyValue(e)
		}
		return value{kind: kindArray, items: items, s: string(appendJSON(nil, x))}
	case map[string]any:
		return value{kind: kindObject, s: string(appendJSON(nil, x))}
	}
	return value{}
}

// numberText is the text of the JSON number written as text, whose value is f: an
// integer that fits 64 bits as an integer, anything else as the shortest decimal
// that reads back as f (see floatText).
func numberText(text string, f float64) string {
	if isIntegerLiteral(text) {
		if len(text) <= 18 && !strings.HasPrefix(text, "-0") {
			return text // JSON has no leading zeros: already canonical
		}
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			return strconv.FormatInt(i, 10)
		}
		if u, err := strconv.ParseUint(text, 10, 64); err == nil {
			return strconv.FormatUint(u, 10)
		}
	}
	return floatText(f)
}

func isIntegerLiteral(s string) bool { return isDigits(strings.TrimPrefix(s, "-")) }

// floatText writes f with the shortest digits that read back as f: a point and a
// fraction always ("5.0"); decimal notation while the point is within 16 digits of the
// first one and at most 5 zeros follow the point, exponent notation otherwise ("1e21",
// "1.5e-7").
func floatText(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	e := strconv.AppendFloat(make([]byte, 0, 32), f, 'e', -1, 64)
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	mark := bytes.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(string(e[mark+1:]))
	digits := make([]byte, 0, 24)
	for _, c := range e[:mark] {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	n := len(digits)
	point := exp + 1 // digits before the decimal point
	k := point - n   // the value is digits × 10^k
	out := make([]byte, 0, 32)
	if neg {
		out = append(out, '-')
	}
	switch {
	case k >= 0 && point <= 16:
		out = append(out, digits...)
		for range k {
			out = append(out, '0')
		}
		out = append(out, ".0"...)
	case point > 0 && point <= 16:
		out = append(out, digits[:point]...)
		out = append(out, '.')
		out = append(out, digits[point:]...)
	case point > -5 && point <= 0:
		out = append(out, "0."...)
		for range -point {
			out = append(out, '0')
		}
		out = append(out, digits...)
	default:
		out = append(out, digits[0])
		if n > 1 {
			out = append(out, '.')
			out = append(out, digits[1:]...)
		}
		out = append(out, 'e')
		out = strconv.AppendInt(out, int64(point-1), 10)
	}
	return string(out)
}

// appendJSON appends x as compact JSON: members of objects sorted by key, numbers as
// numberText writes them, strings escaping only what JSON requires.
func appendJSON(dst []byte, x any) []byte {
	switch x := x.(type) {
	case nil:
		return append(dst, "null"...)
	case bool:
		return strconv.AppendBool(dst, x)
	case string:
		return appendJSONString(dst, x)
	case json.Number:
		v := numberValue(string(x))
		return append(dst, v.text()...)
	case float64:
		return append(dst, floatText(x)...)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, e)
		}
		return append(dst, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst = appendJSON(dst, x[k])
		}
		return append(dst, '}')
	}
	v := anyValue(x)
	if v.kind == kindString {
		return appendJSONString(dst, v.s)
	}
	return append(dst, v.text()...)
}

func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}

// isASCII reports whether s holds only ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerASCII lowercases the ASCII letters of s and leaves every other byte.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// lowerUnicode lowercases s by the full Unicode mapping: every letter to its lowercase
// form, İ to "i̇", and Σ to ς at the end of a word, σ elsewhere. There is no case
// folding: "Straße" and "STRASSE" stay different.
func lowerUnicode(s string) string {
	if isASCII(s) {
		return lowerASCII(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch r {
		case 'İ':
			b.WriteString("i\u0307")
		case 'Σ':
			if casedBefore(s[:i]) && !casedAfter(s[i+len("Σ"):]) {
				b.WriteRune('ς')
			} else {
				b.WriteRune('σ')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// casedBefore reports whether the last letter of s, past case-ignorable marks, is
// cased; casedAfter does the same for the first letter of s.
func casedBefore(s string) bool {
	for len(s) > 0 {
		r, n := utf8.DecodeLastRuneInString(s)
		if !caseIgnorable(r) {
			return cased(r)
		}
		s = s[:len(s)-n]
	}
	return false
}

func casedAfter(s string) bool {
	for _, r := range s {
		if !caseIgnorable(r) {
			return cased(r)
		}
	}
	return false
}

func cased(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '^', '`', '\u00AD', '\u00B7', '\u2018', '\u2019', '\u2024', '\u2027', '\uFE13', '\uFE52', '\uFE55', '\uFF07', '\uFF0E', '\uFF1A':
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// equalLowerASCII reports whether s, which is all ASCII, is lower once its letters are
// lowercased.
func equalLowerASCII(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// equalFoldASCII reports whether s and t are equal once their ASCII letters are
// lowercased.
func equalFoldASCII(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		a, b := s[i], t[i]
		if a >= 'A' && a <= 'Z' {
			a += 'a' - 'A'
		}
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// hasPrefixFoldASCII reports whether s starts with lower (ASCII-lowercase) once the
// ASCII letters of s are lowercased.
func hasPrefixFoldASCII(s, lower string) bool {
	return len(s) >= len(lower) && equalFoldASCII(s[:len(lower)], lower)
}

func hasSuffixFoldASCII(s, lower string) bool {
	return len(s) >= len(lower) && equalFoldASCII(s[len(s)-len(lower):], lower)
}
