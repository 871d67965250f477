package jsontext

import "bytes"

// Members calls fn for each member of the JSON object obj, in the order they are
// written, with the key as written (quoted, possibly escaped; see KeyIs and String)
// and the value's text. Both alias obj. It allocates nothing.
func Members(obj []byte, fn func(key, value []byte)) {
	i := SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i = SkipSpace(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		keyEnd := skipString(obj, i)
		colon := SkipSpace(obj, keyEnd)
		if colon >= len(obj) || obj[colon] != ':' {
			return
		}
		valueStart := SkipSpace(obj, colon+1)
		valueEnd := SkipValue(obj, valueStart)
		if valueEnd <= valueStart || valueEnd > len(obj) {
			return
		}
		fn(obj[i:keyEnd], obj[valueStart:valueEnd])
		i = SkipSpace(obj, valueEnd)
		if i < len(obj) && obj[i] == ',' {
			i = SkipSpace(obj, i+1)
		}
	}
}

// SkipSpace returns the index of the first byte at or after b[i] that is not JSON
// white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] == '"'. It jumps
// from quote to quote (IndexByte is vectorized); a quote is the end unless an odd
// number of backslashes escapes it.
func skipString(b []byte, i int) int {
	for i++; i < len(b); {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		end := i + j
		escapes := 0
		for k := end - 1; k >= i && b[k] == '\\'; k-- {
			escapes++
		}
		if escapes%2 == 0 {
			return end + 1
		}
		i = end + 1
	}
	return len(b)
}

// structural marks the bytes that SkipValue looks at inside an object or an array.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// SkipValue returns the index after the JSON value that starts at b[i].
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			if !structural[b[i]] {
				continue
			}
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}

// KeyIs reports whether the quoted key, as Members passes it, is name once unescaped.
// It allocates only for a key that holds escapes.
func KeyIs(key []byte, name string) bool {
	if len(key) < 2 {
		return false
	}
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == name
	}
	var unescaped string
	return unescaper.UnmarshalFromString(BytesToString(key), &unescaped) == nil && unescaped == name
}

// IsObject reports whether value, with no white space before it, is a JSON object.
func IsObject(value []byte) bool { return len(value) > 0 && value[0] == '{' }

// IsArray reports whether value, with no white space before it, is a JSON array.
func IsArray(value []byte) bool { return len(value) > 0 && value[0] == '[' }

// ObjectWriter appends a JSON object to a buffer, one member at a time. The zero
// ObjectWriter writes into a new buffer.
type ObjectWriter struct {
	buf     []byte
	members int
}

// NewObjectWriter returns an ObjectWriter that appends to dst.
func NewObjectWriter(dst []byte) ObjectWriter { return ObjectWriter{buf: dst} }

// Member appends a member: key as written (quoted) and value's JSON text.
func (w *ObjectWriter) Member(key, value []byte) {
	if w.members == 0 {
		w.buf = append(w.buf, '{')
	} else {
		w.buf = append(w.buf, ',')
	}
	w.members++
	w.buf = append(w.buf, key...)
	w.buf = append(w.buf, ':')
	w.buf = append(w.buf, value...)
}

// End ends the object and returns the buffer with it appended.
func (w *ObjectWriter) End() []byte {
	if w.members == 0 {
		w.buf = append(w.buf, '{')
	}
	return append(w.buf, '}')
}

// MergeObjects appends to dst the object with the members of base and over, over
// winning: base's members in base's order (with over's value where over has the key),
// then over's other members. Keys compare as written. It is linear in the members,
// whatever their number: a client controls both objects.
func MergeObjects(dst, base, over []byte) []byte {
	overValues := map[string][]byte{}
	Members(over, func(key, value []byte) { overValues[string(key)] = value })
	inBase := map[string]bool{}
	w := NewObjectWriter(dst)
	Members(base, func(key, value []byte) {
		inBase[string(key)] = true
		if v, ok := overValues[string(key)]; ok {
			value = v
		}
		w.Member(key, value)
	})
	Members(over, func(key, value []byte) {
		if !inBase[string(key)] {
			w.Member(key, value)
		}
	})
	return w.End()
}

// ConcatArrays appends to dst the array with the elements of a, then those of b.
func ConcatArrays(dst, a, b []byte) []byte {
	inner := func(arr []byte) []byte {
		arr = bytes.TrimSpace(arr)
		return bytes.TrimSpace(arr[1 : len(arr)-1])
	}
	ia, ib := inner(a), inner(b)
	dst = append(dst, '[')
	dst = append(dst, ia...)
	if len(ia) > 0 && len(ib) > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, ib...)
	return append(dst, ']')
}
