package edge

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"testing"
	"testing/iotest"
	"time"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/sync/semaphore"
)

// shortReader returns at most max bytes a Read, as a network stream or a decompressor
// may, and counts its Reads.
type shortReader struct {
	r     io.Reader
	max   int
	reads int
}

func (s *shortReader) Read(p []byte) (int, error) {
	s.reads++
	return s.r.Read(p[:min(len(p), s.max)])
}

const kb, mb = 1 << 10, 1 << 20

func TestReadAll(t *testing.T) {
	// f reads size bytes, chunk at most a Read, with hint, under limit, and checks the
	// budget the read took and how many Reads it needed.
	f := func(size, chunk, hint, limit int, wantErr error, maxHeld int64, maxReads int) {
		t.Helper()
		body := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		r := &shortReader{r: bytes.NewReader(body), max: chunk}
		res := &reservation{budget: newBudget(1<<30, time.Second)}
		defer res.release()
		first := readStep // as readBody starts
		if hint > 0 {
			first = min(hint+1, readStep)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := readAll(r, nil, limit, res, hint, first)
		runtime.ReadMemStats(&after)
		// Every array the read allocated is charged, those it left behind included (the
		// allocator rounds each up to its pages).
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > uint64(res.held+res.held/64)+16*kb {
			t.Fatalf("readAll of %d bytes %d at a time, hint %d: allocated %d bytes, charged %d", size, chunk, hint, allocated, res.held)
		}
		if !errors.Is(err, wantErr) {
			t.Fatalf("readAll of %d bytes, hint %d, limit %d: error %v, want %v", size, hint, limit, err, wantErr)
		}
		if err == nil && !bytes.Equal(got, body) {
			t.Fatalf("readAll of %d bytes, hint %d: read %d bytes that differ", size, hint, len(got))
		}
		if res.held > maxHeld || r.reads > maxReads {
			t.Fatalf("readAll of %d bytes %d at a time, hint %d: took %d bytes of budget in %d reads, want at most %d in %d",
				size, chunk, hint, res.held, r.reads, maxHeld, maxReads)
		}
	}
	// A Content-Length body that arrives in pieces takes what it announced, no more
	// (it took the whole of a 300 KB budget for 100 KB, and then was refused as holding
	// too many events).
	f(100*kb, 100*kb, 100*kb, 20*mb, nil, 100*kb+1, 3)
	f(100*kb, 10*kb, 100*kb, 20*mb, nil, 100*kb+1, 12)
	f(100*kb, 1, 100*kb, 20*mb, nil, 100*kb+1, 100*kb+1)
	// A hint that is only a guess, and too small: the rest is read in doubling steps,
	// not a byte at a time. The arrays left behind are charged with the last one: at
	// most four times the bytes.
	f(8*mb, 8*mb, 64*kb, 100*mb, nil, 4*8*mb, 20)
	f(8*mb, 64*kb, 64*kb, 100*mb, nil, 4*8*mb, 8*mb/(64*kb)+20)
	// A hint too large, or none.
	f(10*kb, 10*kb, 1*mb, 20*mb, nil, readStep, 3)
	f(3*mb, 3*mb, 0, 20*mb, nil, 4*3*mb, 20)
	// The limit holds whatever the hint says.
	f(2*mb, 2*mb, 0, 2*mb, errBodyTooLarge, 4*2*mb, 20)
	f(2*mb-1, 2*mb, 0, 2*mb, nil, 4*2*mb, 20)
	f(2*mb, 2*mb, 64*kb, 2*mb, errBodyTooLarge, 4*2*mb, 20)
	f(2*mb, 2*mb, 8*mb, 2*mb, errBodyTooLarge, 2*2*mb, 5)

	// A client that announces 10 MB and stalls after 64 KB holds what it sent and the
	// room of one more step, not what it announced.
	stalled := io.MultiReader(bytes.NewReader(make([]byte, 64*kb)), iotest.ErrReader(errStalled))
	res := &reservation{budget: newBudget(1<<30, time.Second)}
	defer res.release()
	if _, err := readAll(stalled, nil, 20*mb, res, 10*mb, readStep); !errors.Is(err, errStalled) || res.held > 64*kb+readStep {
		t.Fatalf("a stalled body: %v, %d bytes of budget held", err, res.held)
	}
}

var errStalled = errors.New("stalled")

func TestLZString(t *testing.T) {
	text, err := os.ReadFile("testdata/lz64-vectors.json") // made with the lz-string npm package 1.5.0
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct{ Plain, Compressed string }
	if err := json.Unmarshal(text, &vectors); err != nil {
		t.Fatal(err)
	}
	res := &reservation{budget: newBudget(1<<30, time.Second)}
	var d lzDecoder
	for _, v := range vectors {
		got, err := d.decode([]byte(v.Compressed), nil, res)
		if v.Plain == "" {
			continue // lz-string's own decoder returns null for some empty inputs
		}
		if err != nil || string(got) != v.Plain {
			t.Fatalf("lz decode %q = %q, %v; want %q", v.Compressed, got, err, v.Plain)
		}
	}
	for _, bad := range []string{"", "!!!!", "N4Ig", "N4IgpgbmB2A"} {
		if _, err := d.decode([]byte(bad), nil, res); err == nil {
			t.Fatalf("lz decode %q succeeded", bad)
		}
	}
}

func TestBudget(t *testing.T) {
	b := &budget{sem: semaphore.NewWeighted(100), max: 100, wait: 10 * time.Millisecond}
	first := &reservation{budget: b}
	if err := first.charge(60); err != nil {
		t.Fatal(err)
	}
	second := &reservation{budget: b}
	if err := second.charge(60); err != errOverBudget {
		t.Fatalf("charge over the budget: %v", err)
	}
	first.release()
	if err := second.charge(60); err != nil {
		t.Fatalf("charge after release: %v", err)
	}
	// More than the whole budget: takes all of it rather than waiting forever.
	second.release()
	huge := &reservation{budget: b}
	if err := huge.charge(1000); err != nil || huge.held != 100 {
		t.Fatalf("huge charge: %v, held %d", err, huge.held)
	}
	huge.release()
}

// gunzip refuses a payload whose gzip trailer gives a size past maxPayload before
// decompressing it, decompresses an honest one into one array, and charges a forged
// size for every array the payload then grows into.
func TestGunzip(t *testing.T) {
	zeros := func(n int, size uint32) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(make([]byte, n))
		zw.Close()
		if size > 0 {
			binary.LittleEndian.PutUint32(b.Bytes()[b.Len()-4:], size) // forged
		}
		return b.Bytes()
	}
	f := func(src []byte, wantErr error, maxHeld int64) {
		t.Helper()
		res := &reservation{budget: newBudget(1<<30, time.Second)}
		defer res.release()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := gunzip(src, nil, res)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, wantErr) {
			t.Fatalf("gunzip of %d bytes: %v, want %v", len(src), err, wantErr)
		}
		if res.held > maxHeld {
			t.Fatalf("gunzip of %d bytes: held %d bytes of budget, want at most %d", len(src), res.held, maxHeld)
		}
		// The decompressor's own state aside (some 64 KB), what it allocated is charged.
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > uint64(res.held+res.held/64)+256*kb {
			t.Fatalf("gunzip of %d bytes: allocated %d bytes, charged %d", len(src), allocated, res.held)
		}
	}
	f(zeros(3*mb, 0), nil, 3*mb+1)                               // honest: one array
	f(zeros(200*mb, 0), errPayloadTooLarge, 0)                   // honest and too large: refused at once
	f(zeros(200*mb, 1000), errPayloadTooLarge, 4*maxPayload)     // forged small: stopped at the limit
	f(zeros(1*mb, maxPayload), errBadGzip, 0)                    // forged large: decompressed holding nothing, corrupt
	f(zeros(1*mb, 4*kb), errBadGzip, 4*mb)                       // forged small, within the limit: the decompressor checks it
	f([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0}, errBadGzip, 0) // no trailer
	// Not gzip, or a gzip header and garbage: corrupt, whatever the last four bytes
	// read as a size (here far more than maxPayload).
	f([]byte("this is not gzip at all"), errBadGzip, 0)
	f(append([]byte{0x1f, 0x8b, 8, 0}, bytes.Repeat([]byte{0xff}, 64)...), errBadGzip, 0)
}
