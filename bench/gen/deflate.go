package gen

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
)

// deflateFixed compresses text into a gzip member holding one fixed-Huffman deflate
// block, and returns it with the bit offset, in it, of the literal of the first
// character of each 36-byte region starting at the offsets in protect (sorted). Those
// regions are written as literals and never matched, from or into, so that they can
// be rewritten in place by putLiteral. Matching is greedy over hash chains: what a load
// test needs is a realistic body built quickly, not the smallest one.
func deflateFixed(text []byte, protect []int) (gz []byte, offsets []int) {
	w := bitWriter{out: []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}} // RFC 1952 header, no name or mtime
	w.bits(1, 1)                                                       // BFINAL
	w.bits(1, 2)                                                       // BTYPE 01: fixed Huffman
	const (
		hashBits = 15
		window   = 32 << 10
		maxChain = 32
		minMatch = 4
		maxMatch = 258
	)
	head := make([]int32, 1<<hashBits)
	for i := range head {
		head[i] = -1
	}
	prev := make([]int32, len(text))
	hash := func(i int) uint32 { return binary.LittleEndian.Uint32(text[i:]) * 0x9e3779b1 >> (32 - hashBits) }
	insert := func(i int) {
		if i+minMatch <= len(text) {
			h := hash(i)
			prev[i], head[h] = head[h], int32(i)
		}
	}
	protected := make([]bool, len(text)) // where a match may not copy from
	for _, at := range protect {
		for i := at; i < at+uuidLen; i++ {
			protected[i] = true
		}
	}
	next := 0 // index in protect of the next region at or after i
	for i := 0; i < len(text); {
		if next < len(protect) && i == protect[next] {
			offsets = append(offsets, w.offset())
			for _, c := range text[i : i+uuidLen] {
				w.literal(c)
			}
			i += uuidLen
			next++
			continue
		}
		limit := len(text) // a match ends before the next protected region
		if next < len(protect) {
			limit = protect[next]
		}
		limit = min(limit-i, maxMatch)
		length, distance := 0, 0
		if limit >= minMatch {
			for j, chain := head[hash(i)], 0; j >= 0 && i-int(j) <= window && chain < maxChain; j, chain = prev[j], chain+1 {
				n := 0
				for n < limit && text[int(j)+n] == text[i+n] && !protected[int(j)+n] {
					n++
				}
				if n > length {
					length, distance = n, i-int(j)
				}
			}
		}
		if length < minMatch {
			w.literal(text[i])
			insert(i)
			i++
			continue
		}
		w.match(length, distance)
		for end := i + length; i < end; i++ {
			insert(i)
		}
	}
	w.code(0, 7) // end of block: symbol 256
	w.flush()
	out := binary.LittleEndian.AppendUint32(w.out, crc32.ChecksumIEEE(text))
	return binary.LittleEndian.AppendUint32(out, uint32(len(text))), offsets
}

// bitWriter writes a deflate stream: values least significant bit first, Huffman
// codes most significant bit first (RFC 1951, 3.1.1).
type bitWriter struct {
	out   []byte
	acc   uint64
	nbits int
}

func (w *bitWriter) bits(v uint64, n int) {
	w.acc |= v << w.nbits
	w.nbits += n
	for w.nbits >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nbits -= 8
	}
}

func (w *bitWriter) code(code uint64, n int) {
	w.bits(uint64(bits.Reverse16(uint16(code))>>(16-n)), n)
}

func (w *bitWriter) offset() int { return 8*len(w.out) + w.nbits }

func (w *bitWriter) flush() {
	if w.nbits > 0 {
		w.bits(0, 8-w.nbits)
	}
}

// literal writes byte c with the fixed code: 8 bits for 0-143, 9 for 144-255.
func (w *bitWriter) literal(c byte) {
	if c < 144 {
		w.code(0x30+uint64(c), 8)
	} else {
		w.code(0x190+uint64(c)-144, 9)
	}
}

var (
	lengthBase  = [...]int{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [...]int{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [...]int{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [...]int{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// match writes a back-reference: length symbol (257-285) with its fixed code and extra
// bits, then the distance code (5 bits) and its extra bits.
func (w *bitWriter) match(length, distance int) {
	l := len(lengthBase) - 1
	for lengthBase[l] > length {
		l--
	}
	if symbol := 257 + l; symbol < 280 {
		w.code(uint64(symbol-256), 7)
	} else {
		w.code(0xc0+uint64(symbol-280), 8)
	}
	w.bits(uint64(length-lengthBase[l]), lengthExtra[l])
	d := len(distBase) - 1
	for distBase[d] > distance {
		d--
	}
	w.code(uint64(d), 5)
	w.bits(uint64(distance-distBase[d]), distExtra[d])
}

// putLiteral overwrites, at bit offset at of a stream bitWriter wrote, the 8-bit fixed
// code of a literal c below 144 (every character of a uuid's text).
func putLiteral(stream []byte, at int, c byte) {
	code := uint16(bits.Reverse8(0x30+c)) << (at % 8)
	mask := uint16(0xff) << (at % 8)
	i := at / 8
	v := uint16(stream[i]) | uint16(stream[i+1])<<8
	v = v&^mask | code
	stream[i], stream[i+1] = byte(v), byte(v>>8)
}
