package jsontext

import "bytes"

// replacementEscape is U+FFFD written as a JSON escape: as long as the escape of one
// UTF-16 code unit, so a repair never moves the text around it.
var replacementEscape = [6]byte{'\\', 'u', 'f', 'f', 'f', 'd'}

// RepairSurrogates replaces, in place, every \u escape of a UTF-16 surrogate that is
// not half of a pair (a high one not followed by a low one, a low one not preceded by
// a high one) with \ufffd, and reports how many it replaced. Such an escape is valid
// JSON syntax but no character: DuckDB's JSON functions refuse a document holding one,
// so one stored event would make every property read of its project fail. The text's
// length and every other byte stay as they are, so views of it stay valid.
func RepairSurrogates(text []byte) int {
	repaired := 0
	for i := 0; ; {
		j := bytes.IndexByte(text[i:], '\\')
		if j < 0 {
			return repaired
		}
		i += j
		if i+1 >= len(text) {
			return repaired
		}
		if text[i+1] != 'u' {
			i += 2 // an escape of one character, \\ among them: what follows is not escaped
			continue
		}
		unit, ok := escapedUnit(text, i)
		if !ok {
			i += 2
			continue
		}
		switch {
		case unit >= 0xD800 && unit <= 0xDBFF:
			if low, ok := escapedUnit(text, i+6); ok && low >= 0xDC00 && low <= 0xDFFF {
				i += 12 // a pair
				continue
			}
		case unit >= 0xDC00 && unit <= 0xDFFF:
		default:
			i += 6
			continue
		}
		copy(text[i:i+6], replacementEscape[:])
		repaired++
		i += 6
	}
}

// escapedUnit reads the code unit of the \uXXXX escape at text[i:].
func escapedUnit(text []byte, i int) (rune, bool) {
	if i+6 > len(text) || text[i] != '\\' || text[i+1] != 'u' {
		return 0, false
	}
	var unit rune
	for _, c := range text[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			unit = unit<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			unit = unit<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			unit = unit<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return unit, true
}
