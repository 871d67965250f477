package edge

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

var errLZString = errors.New("not valid lz-string base64")

// lzDecoder decompresses lz-string's compressToBase64 format (what older posthog-js
// sends as compression=lz64). The output of lz-string is a JavaScript string, so the
// decoder works in UTF-16 code units and converts to UTF-8 at the end.
//
// Every dictionary entry is a contiguous run of the output: a literal is written right
// after it enters the dictionary, and an entry w+entry[0] is w followed by the first
// unit of the entry written after it. So the dictionary holds spans of units, not
// strings, and decoding allocates nothing per token. A decoder is reusable; its buffers
// are overwritten by the next call.
type lzDecoder struct {
	units []uint16
	dict  []lzSpan
}

type lzSpan struct{ start, end int32 }

// lzBase64Values maps an input byte to its 6-bit value, or 0xff.
var lzBase64Values = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=" {
		t[c] = byte(i)
	}
	return t
}()

// lzBits reads the input six bits a character, lowest bit first within each value, as
// lz-string does.
type lzBits struct {
	in       []byte
	index    int
	val      int
	position int
}

func (r *lzBits) next() int {
	i := r.index
	r.index++ // past the end too, as lz-string does: its index check relies on it
	if i >= len(r.in) {
		return 0
	}
	v := lzBase64Values[r.in[i]]
	if v == 0xff {
		return -1
	}
	return int(v)
}

func (r *lzBits) read(n int) (int, bool) {
	bits := 0
	for power := 0; power < n; power++ {
		if r.val < 0 {
			return 0, false
		}
		if r.val&r.position != 0 {
			bits |= 1 << power
		}
		r.position >>= 1
		if r.position == 0 {
			r.position = 32
			r.val = r.next()
		}
	}
	return bits, true
}

// lzMaxUnits caps the UTF-16 units of one decompression, so that its UTF-8 text
// stays within maxPayload even if every unit takes three bytes.
const lzMaxUnits = maxPayload / 3

// decode appends the UTF-8 text that in (lz-string base64) decompresses to onto out,
// charging the memory it takes to res, and failing with errPayloadTooLarge once the
// text would reach lzMaxUnits UTF-16 units.
func (d *lzDecoder) decode(in []byte, out []byte, res *reservation) ([]byte, error) {
	const maxUnits = lzMaxUnits
	d.units, d.dict = d.units[:0], d.dict[:0]
	if len(in) == 0 {
		return out, errLZString
	}
	r := lzBits{in: in, position: 32}
	r.val = r.next()
	// Entries 0-2 stand for the three control codes and are never looked up.
	d.dict = append(d.dict, lzSpan{}, lzSpan{}, lzSpan{})
	enlargeIn, numBits := 4, 3
	charged := 0 // units whose memory is charged to res

	literal := func(kind int) (lzSpan, bool) {
		width := 8
		if kind == 1 {
			width = 16
		}
		c, ok := r.read(width)
		if !ok {
			return lzSpan{}, false
		}
		at := int32(len(d.units))
		d.units = append(d.units, uint16(c))
		return lzSpan{at, at + 1}, true
	}

	first, ok := r.read(2)
	if !ok {
		return out, errLZString
	}
	var w lzSpan
	switch first {
	case 0, 1:
		if w, ok = literal(first); !ok {
			return out, errLZString
		}
		d.dict = append(d.dict, w)
	case 2:
		return out, nil
	default:
		return out, errLZString
	}

	for {
		if r.index > len(in) {
			return out, errLZString
		}
		c, ok := r.read(numBits)
		if !ok {
			return out, errLZString
		}
		var entry lzSpan
		switch c {
		case 0, 1:
			if entry, ok = literal(c); !ok {
				return out, errLZString
			}
			d.dict = append(d.dict, entry)
			enlargeIn--
		case 2:
			return appendUTF16(out, d.units), nil
		default:
			at := int32(len(d.units))
			switch {
			case c < len(d.dict):
				e := d.dict[c]
				if int(e.end-e.start) > maxUnits-len(d.units) {
					return out, errPayloadTooLarge
				}
				d.units = append(d.units, d.units[e.start:e.end]...)
			case c == len(d.dict):
				// The entry being defined: w followed by its own first unit.
				if int(w.end-w.start)+1 > maxUnits-len(d.units) {
					return out, errPayloadTooLarge
				}
				d.units = append(d.units, d.units[w.start:w.end]...)
				d.units = append(d.units, d.units[w.start])
			default:
				return out, errLZString
			}
			entry = lzSpan{at, int32(len(d.units))}
		}
		if enlargeIn == 0 {
			enlargeIn = 1 << numBits
			numBits++
		}
		if len(d.units) >= maxUnits {
			return out, errPayloadTooLarge
		}
		// Units take two bytes now, up to two more in the arrays append left behind
		// (on the heap until the GC takes them), and up to three as UTF-8 later:
		// charge seven.
		for len(d.units) > charged {
			if err := res.charge(7 * readStep); err != nil {
				return out, err
			}
			charged += readStep
		}
		// w + entry[0] is contiguous: entry was written right after w.
		d.dict = append(d.dict, lzSpan{w.start, w.end + 1})
		enlargeIn--
		w = entry
		if enlargeIn == 0 {
			enlargeIn = 1 << numBits
			numBits++
		}
	}
}

// appendUTF16 appends the UTF-8 form of UTF-16 units; unpaired surrogates become U+FFFD.
func appendUTF16(out []byte, units []uint16) []byte {
	for i := 0; i < len(units); i++ {
		u := units[i]
		switch {
		case u < utf8.RuneSelf:
			out = append(out, byte(u))
		case utf16.IsSurrogate(rune(u)) && i+1 < len(units):
			r := utf16.DecodeRune(rune(u), rune(units[i+1]))
			if r != utf8.RuneError {
				i++
			}
			out = utf8.AppendRune(out, r)
		default:
			out = utf8.AppendRune(out, rune(u))
		}
	}
	return out
}
