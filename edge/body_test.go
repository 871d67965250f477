package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"testing"
	"testing/iotest"
	"time"

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
	f(2*mb, 2*mb, 8*mb, 2*mb, errBodyTooLarge, 2*mb+1, 5)

	// A client that announces 10 MB and stalls after 64 KB holds what it sent and the
	// room of one more step, not what it announced.
	stalled := io.MultiReader(bytes.NewReader(make([]byte, 64*kb)), iotest.ErrReader(errStalled))
	res := &reservation{budget: newBudget(1<<30, time.Second)}
	defer res.release()
	if _, err := readAll(stalled, nil, 20*mb, res, 10*mb); !errors.Is(err, errStalled) || res.held > 64*kb+readStep {
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
