package edge_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf16"
)

// lzCompressToBase64 is lz-string's compressToBase64 (the npm package, 1.5.0), which
// older posthog-js sends as data= with compression=lz64: LZW over the text's UTF-16
// code units, written 6 bits to a base64 character. Tests use it to encode payloads
// that carry their own project token; TestLZCompressToBase64 checks it against vectors
// made with the npm package.
func lzCompressToBase64(text string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
	var out strings.Builder
	val, pos := 0, 0
	writeBit := func(bit int) {
		val = val<<1 | bit
		if pos == 5 {
			out.WriteByte(alphabet[val])
			val, pos = 0, 0
		} else {
			pos++
		}
	}
	// writeBits writes n bits of value, lowest first, as lz-string does.
	writeBits := func(n, value int) {
		for range n {
			writeBit(value & 1)
			value >>= 1
		}
	}
	// Strings of code units are map keys: two bytes a unit.
	unit := func(u uint16) string { return string([]byte{byte(u >> 8), byte(u)}) }
	firstUnit := func(s string) int { return int(s[0])<<8 | int(s[1]) }

	dictionary := map[string]int{}
	toCreate := map[string]bool{}
	w := ""
	enlargeIn, dictSize, numBits := 2, 3, 2
	enlarge := func() {
		if enlargeIn--; enlargeIn == 0 {
			enlargeIn = 1 << numBits
			numBits++
		}
	}
	emit := func(w string) {
		if toCreate[w] {
			if c := firstUnit(w); c < 256 {
				writeBits(numBits, 0)
				writeBits(8, c)
			} else {
				writeBits(numBits, 1)
				writeBits(16, c)
			}
			enlarge()
			delete(toCreate, w)
		} else {
			writeBits(numBits, dictionary[w])
		}
		enlarge()
	}
	for _, u := range utf16.Encode([]rune(text)) {
		c := unit(u)
		if _, ok := dictionary[c]; !ok {
			dictionary[c] = dictSize
			dictSize++
			toCreate[c] = true
		}
		if _, ok := dictionary[w+c]; ok {
			w += c
			continue
		}
		emit(w)
		dictionary[w+c] = dictSize
		dictSize++
		w = c
	}
	if w != "" {
		emit(w)
	}
	writeBits(numBits, 2) // the end of the stream
	for {                 // the last character, padded with zero bits
		val <<= 1
		if pos == 5 {
			out.WriteByte(alphabet[val])
			break
		}
		pos++
	}
	if n := out.Len() % 4; n > 0 {
		out.WriteString("==="[n-1:])
	}
	return out.String()
}

func TestLZCompressToBase64(t *testing.T) {
	text, err := os.ReadFile("testdata/lz64-vectors.json") // made with the lz-string npm package 1.5.0
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct{ Plain, Compressed string }
	if err := json.Unmarshal(text, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, v := range vectors {
		if got := lzCompressToBase64(v.Plain); got != v.Compressed {
			t.Fatalf("compressToBase64(%q)\n got %s\nwant %s", v.Plain, got, v.Compressed)
		}
	}
}
