package edge

import "bytes"

// The functions here walk JSON text that sonic has already validated. They never
// allocate; on text that is not valid after all they stop early instead of panicking.

// members calls fn for each member of the JSON object obj, with the key as written
// (quoted, possibly escaped) and the value's text.
func members(obj []byte, fn func(key, value []byte)) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		keyEnd := skipString(obj, i)
		colon := skipSpace(obj, keyEnd)
		if colon >= len(obj) || obj[colon] != ':' {
			return
		}
		valueStart := skipSpace(obj, colon+1)
		valueEnd := skipValue(obj, valueStart)
		if valueEnd <= valueStart || valueEnd > len(obj) {
			return
		}
		fn(obj[i:keyEnd], obj[valueStart:valueEnd])
		i = skipSpace(obj, valueEnd)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
}

func skipSpace(b []byte, i int) int {
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

// structural marks the bytes that skipValue looks at inside an object or an array.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) int {
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

// keyIs reports whether the quoted key is name.
func keyIs(key []byte, name string) bool {
	if len(key) < 2 {
		return false
	}
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == name
	}
	var unescaped string
	return jsonAPI.UnmarshalFromString(bytesToString(key), &unescaped) == nil && unescaped == name
}

func isObject(value []byte) bool { return len(value) > 0 && value[0] == '{' }
func isArray(value []byte) bool  { return len(value) > 0 && value[0] == '[' }

// objectWriter appends a JSON object to buf, one member at a time.
type objectWriter struct {
	buf     []byte
	members int
}

func (w *objectWriter) member(key, value []byte) {
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

// close ends the object and returns buf.
func (w *objectWriter) close() []byte {
	if w.members == 0 {
		w.buf = append(w.buf, '{')
	}
	return append(w.buf, '}')
}

// mergeObjects appends to dst the object with the members of base and over, over
// winning: base's members in base's order (with over's value where over has the key),
// then over's other members. Keys compare as written. It is linear in the members,
// whatever their number: a client controls both objects.
func mergeObjects(dst, base, over []byte) []byte {
	overValues := map[string][]byte{}
	members(over, func(key, value []byte) { overValues[string(key)] = value })
	inBase := map[string]bool{}
	w := objectWriter{buf: dst}
	members(base, func(key, value []byte) {
		inBase[string(key)] = true
		if v, ok := overValues[string(key)]; ok {
			value = v
		}
		w.member(key, value)
	})
	members(over, func(key, value []byte) {
		if !inBase[string(key)] {
			w.member(key, value)
		}
	})
	return w.close()
}

// concatArrays appends to dst the array with the elements of a, then those of b.
func concatArrays(dst, a, b []byte) []byte {
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
