package edge

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
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

func TestReadAll(t *testing.T) {
	// f reads size bytes, chunk at most a Read, with hint, under limit, and checks the
	// budget the read took and how many Reads it needed.
	f := func(size, chunk, hint, limit int, wantErr error, maxHeld int64, maxReads int) {
		t.Helper()
		body := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		r := &shortReader{r: bytes.NewReader(body), max: chunk}
		res := &reservation{budget: newBudget(1<<30, time.Second)}
		defer res.release()
		got, err := readAll(r, nil, limit, res, hint)
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
	const kb, mb = 1 << 10, 1 << 20
	// A Content-Length body that arrives in pieces takes what it announced, no more
	// (it took the whole of a 300 KB budget for 100 KB, and then was refused as holding
	// too many events).
	f(100*kb, 100*kb, 100*kb, 20*mb, nil, 100*kb+1, 3)
	f(100*kb, 10*kb, 100*kb, 20*mb, nil, 100*kb+1, 12)
	f(100*kb, 1, 100*kb, 20*mb, nil, 100*kb+1, 100*kb+1)
	// A hint that is a guess (gunzip's: 4 x the compressed size) and too small: the rest
	// is read in growing steps, not a byte at a time.
	f(8*mb, 8*mb, 64*kb, 100*mb, nil, 13*mb, 20)
	f(8*mb, 64*kb, 64*kb, 100*mb, nil, 13*mb, 8*mb/(64*kb)+20)
	// A hint too large, or none.
	f(10*kb, 10*kb, 1*mb, 20*mb, nil, 1*mb+1, 3)
	f(3*mb, 3*mb, 0, 20*mb, nil, 5*mb, 20)
	// The limit holds whatever the hint says.
	f(2*mb, 2*mb, 0, 2*mb, errBodyTooLarge, 3*mb, 20)
	f(2*mb-1, 2*mb, 0, 2*mb, nil, 3*mb, 20)
	f(2*mb, 2*mb, 64*kb, 2*mb, errBodyTooLarge, 3*mb, 20)
	f(2*mb, 2*mb, 8*mb, 2*mb, errBodyTooLarge, 2*mb+1, 3)
}
