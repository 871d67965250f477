package edge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/valyala/fasthttp"
	"golang.org/x/sync/semaphore"
)

// Reading a request: its body, within its route's limit and the in-flight budget, then
// its encodings undone down to the JSON payload.

// Body limits, counted as PostHog counts them (20 MB = 20 x 1024 x 1024 bytes): a
// /batch/ body must be smaller than 20 MB, any other body smaller than 2 MB.
const (
	maxBatchBody = 20 << 20
	maxEventBody = 2 << 20
)

// Limits on what one request may make the server hold, as PostHog sets them.
const (
	// maxPayload caps a decompressed payload: 5 x the /batch/ body limit.
	maxPayload = 100 << 20
	// maxEventSize caps one event's JSON (PostHog's Kafka message limit).
	maxEventSize = 1 << 20
	// prefetchSize is how much of a body fasthttp reads before the handler runs;
	// the handler reads the rest itself, within its route's limit and the budget.
	prefetchSize = 64 << 10
	// readStep is how much more budget a growing buffer takes at a time.
	readStep = 256 << 10
)

var (
	errBodyTooLarge    = errors.New("body too large")
	errPayloadTooLarge = errors.New("payload too large")
	errOverBudget      = errors.New("in-flight bytes over budget")
	errTooManyEvents   = errors.New("more events than the in-flight budget holds")
	errBadGzip         = errors.New("corrupt gzip")
	errBadBase64       = errors.New("corrupt base64")
)

// budget bounds the bytes that all requests together hold at once: bodies as read and
// the payloads they decompress to. A request that cannot get its share within wait is
// answered 503, which every SDK retries.
type budget struct {
	sem  *semaphore.Weighted
	max  int64
	wait time.Duration
}

func newBudget(max int64, wait time.Duration) *budget {
	return &budget{sem: semaphore.NewWeighted(max), max: max, wait: wait}
}

// reservation is one request's share of the budget, returned by release.
type reservation struct {
	budget *budget
	held   int64
}

// charge takes n more bytes of the budget for the request. A request that would need
// more than the whole budget gets all of it, alone, rather than waiting forever.
func (r *reservation) charge(n int) error {
	need := min(int64(n), r.budget.max-r.held)
	if need <= 0 {
		return nil
	}
	if !r.budget.sem.TryAcquire(need) {
		ctx, cancel := context.WithTimeout(context.Background(), r.budget.wait)
		err := r.budget.sem.Acquire(ctx, need)
		cancel()
		if err != nil {
			return errOverBudget
		}
	}
	r.held += need
	return nil
}

// chargeWithin takes n more bytes of the budget, or refuses with errTooManyEvents when
// the request would then hold more than the whole budget: for memory that grows with
// the events a payload holds rather than with its bytes.
func (r *reservation) chargeWithin(n int) error {
	if r.held+int64(n) > r.budget.max {
		return errTooManyEvents
	}
	return r.charge(n)
}

func (r *reservation) release() {
	if r.held > 0 {
		r.budget.sem.Release(r.held)
		r.held = 0
	}
}

// readBody reads the request body into dst. A body of limit bytes or more is refused
// with errBodyTooLarge: at once when Content-Length says so, else while reading; a
// body whose bytes stop coming for idle fails.
func readBody(ctx *fasthttp.RequestCtx, limit int, idle time.Duration, res *reservation, dst []byte) ([]byte, error) {
	contentLength := ctx.Request.Header.ContentLength()
	if contentLength >= limit {
		return dst, errBodyTooLarge
	}
	stream := ctx.RequestBodyStream()
	if stream == nil {
		return dst, nil
	}
	first := readStep
	if contentLength > 0 {
		first = min(contentLength+1, readStep) // +1 to see EOF without another round
	}
	return readAll(idleDeadline{stream, ctx.Conn(), idle}, dst, limit, res, contentLength, first)
}

// idleDeadline reads a body on the condition that its bytes keep coming: each Read
// must start returning within idle, or the read fails with a timeout and the
// connection is closed. A client that stalls holds its budget and its connection for
// idle at most, not for the whole request's read timeout.
type idleDeadline struct {
	r    io.Reader
	conn net.Conn
	idle time.Duration
}

func (d idleDeadline) Read(p []byte) (int, error) {
	if d.conn != nil && d.idle > 0 {
		d.conn.SetReadDeadline(time.Now().Add(d.idle))
	}
	return d.r.Read(p)
}

// readAll appends r's bytes to dst until EOF, refusing with errBodyTooLarge once
// limit bytes are read, and charging the growth to res before using it. hint, when
// positive, is the expected size; first is how much room the first read gets.
//
// The budget is charged as bytes arrive, never for what a client only announced: the
// room read into starts at first and at most doubles with what has come, so a client
// that announces 20 MB and stalls after 64 KB holds a few hundred KB, not 20 MB (24
// such connections held the whole default budget, and every other body over 9 KB was
// refused).
//
// The budget is charged for the memory the request makes the heap hold, not only for
// the bytes it keeps: the array dst grows into is allocated to exactly the room
// charged (append's rounding up would hold more), and an array left behind stays
// charged until the request ends, for it stays on the heap until the GC takes it.
// Without that, eight concurrent decompression bombs held 4.7 times the budget.
func readAll(r io.Reader, dst []byte, limit int, res *reservation, hint, first int) ([]byte, error) {
	start := len(dst)
	held := 0 // the budget taken for dst's current array, past start
	hint = min(hint, limit)
	want := first
	for {
		// The room left is read into while it is at least want or a quarter of
		// readStep; past that dst moves to an array of exactly want more.
		room := cap(dst) - len(dst)
		grow := room < want && room < readStep/4
		if grow {
			held, room = 0, want // the array left behind keeps its charge
		}
		step := min(room, want)
		if need := len(dst) - start + step; need > held {
			if err := res.charge(need - held); err != nil {
				return dst, err
			}
			held = need
		}
		if grow {
			grown := make([]byte, len(dst), len(dst)+want)
			copy(grown, dst)
			dst = grown
		}
		n, err := r.Read(dst[len(dst) : len(dst)+step])
		dst = dst[:len(dst)+n]
		if len(dst)-start >= limit {
			return dst, errBodyTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
		// A short read must not make the request take budget beyond what it announced
		// (a 100 KB body took the whole of a 300 KB budget), and a hint that was only a
		// guess must not leave the rest to be read a byte at a time.
		switch read := len(dst) - start; {
		case hint > 0 && read < hint:
			want = min(hint-read+1, max(readStep, read)) // at most the rest announced, and EOF
		case hint > 0 && read == hint:
			want = 1 // all that was announced has come: only EOF is left
		default:
			want = max(readStep, read) // doubling: the arrays left behind sum to less than the last
		}
	}
}

// maxDrain is how much of a refused body is read and thrown away so that the client
// reads the refusal; past it the connection is closed.
const maxDrain = 2 * maxBatchBody

// drain reads the rest of the body into nothing and reports whether it ended within max bytes.
func drain(ctx *fasthttp.RequestCtx, max int64) bool {
	stream := ctx.RequestBodyStream()
	if stream == nil {
		return true
	}
	if cl := ctx.Request.Header.ContentLength(); cl > int(max) {
		return false
	}
	_, err := io.CopyN(io.Discard, stream, max)
	return err == io.EOF
}

// payload undoes the request's encodings and returns its JSON text: Content-Encoding
// gzip, a form with data= (and maybe compression=), data= in the query string, the
// compression named by ?compression= or the form (gzip, gzip-js, lz64, base64), and
// then whatever the bytes show: gzip magic, or base64 text, up to three layers deep.
func (q *request) payload(ctx *fasthttp.RequestCtx) ([]byte, *captureError) {
	data := q.body
	next := 0 // the scratch buffer the next decoding writes to
	decoded := func(out []byte, err error) *captureError {
		q.scratch[next] = out
		if err != nil {
			return readError(err)
		}
		data = out
		next = 1 - next
		return nil
	}
	if bytes.EqualFold(ctx.Request.Header.Peek(fasthttp.HeaderContentEncoding), []byte("gzip")) && len(data) > 0 {
		if err := decoded(gunzip(data, q.scratch[next][:0], &q.res)); err != nil {
			return nil, err
		}
	}
	compression := ctx.QueryArgs().Peek("compression")
	if bytes.HasPrefix(ctx.Request.Header.ContentType(), []byte("application/x-www-form-urlencoded")) || bytes.HasPrefix(data, []byte("data=")) {
		q.args.ParseBytes(data)
		data = q.args.Peek("data")
		if c := q.args.Peek("compression"); len(c) > 0 {
			compression = c
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = ctx.QueryArgs().Peek("data")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errNoData
	}
	switch strings.ToLower(string(compression)) {
	case "gzip", "gzip-js":
		if isGzip(data) {
			if err := decoded(gunzip(data, q.scratch[next][:0], &q.res)); err != nil {
				return nil, err
			}
		}
	case "lz64", "lz-string":
		if err := decoded(q.lz.decode(bytes.TrimSpace(data), q.scratch[next][:0], &q.res)); err != nil {
			return nil, err
		}
	case "base64", "b64":
		if err := decoded(decodeBase64(bytes.TrimSpace(data), q.scratch[next][:0], &q.res)); err != nil {
			return nil, err
		}
	}
	for range 3 {
		data = bytes.TrimSpace(data)
		switch {
		case len(data) == 0:
			return nil, errNoData
		case data[0] == '{' || data[0] == '[':
			return data, nil
		case isGzip(data):
			if err := decoded(gunzip(data, q.scratch[next][:0], &q.res)); err != nil {
				return nil, err
			}
		case looksBase64(data):
			if err := decoded(decodeBase64(data, q.scratch[next][:0], &q.res)); err != nil {
				return nil, err
			}
		default:
			return nil, errInvalidPayload("the body is not JSON, gzip, base64 or lz64 data")
		}
	}
	return nil, errInvalidPayload("the body is encoded more than three layers deep")
}

// readError maps a failure to read or decode the body to its answer.
func readError(err error) *captureError {
	switch {
	case errors.Is(err, errBodyTooLarge):
		return errTooLarge
	case errors.Is(err, errPayloadTooLarge):
		return errDecompressedTooLarge
	case errors.Is(err, errOverBudget):
		return errUnavailable
	case errors.Is(err, errTooManyEvents):
		return errTooManyEventsAtOnce
	case errors.Is(err, errBadGzip):
		return errInvalidPayload("the body is not valid gzip")
	case errors.Is(err, errBadBase64):
		return errInvalidPayload("the data is not valid base64")
	case errors.Is(err, errLZString):
		return errInvalidPayload("the data is not valid lz-string (lz64)")
	}
	return errInvalidPayload("the body could not be read")
}

var gzipReaders sync.Pool

// gunzip appends the decompression of src to dst, at most maxPayload bytes.
//
// The header is read first: a body that is not gzip is corrupt, whatever its last
// bytes say. A gzip member ends with the size of its data (modulo 4 GB), which the
// decompressor checks at the end. The size is where decompression starts, in one
// array when it is true: the bytes come as fast as the CPU makes them, so no client
// can hold that room by stalling, and a size that lies ends the payload as corrupt, or
// costs the growth any unknown size does. A payload that says it is larger than
// maxPayload is either that large or corrupt, and only decompressing it tells which
// (oversized): an SDK told "too large" splits its batch and sends it again, forever if
// the truth was "corrupt".
func gunzip(src, dst []byte, res *reservation) ([]byte, error) {
	if len(src) < 18 { // a header and a trailer
		return dst, errBadGzip
	}
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(src))
	} else {
		err = zr.Reset(bytes.NewReader(src))
	}
	if err != nil {
		return dst, errBadGzip
	}
	defer gzipReaders.Put(zr)
	size := int(binary.LittleEndian.Uint32(src[len(src)-4:]))
	if size >= maxPayload {
		return dst, oversized(zr)
	}
	dst, err = readAll(zr, dst, maxPayload, res, size, size+1) // +1 to see EOF without another round
	switch {
	case errors.Is(err, errBodyTooLarge):
		return dst, errPayloadTooLarge
	case errors.Is(err, errOverBudget):
		return dst, err
	case err != nil:
		return dst, errBadGzip
	}
	return dst, nil
}

// oversized tells a payload whose trailer says maxPayload or more apart: too large
// when it decompresses past maxPayload, else corrupt (a member that decompresses
// whole within the limit cannot match such a trailer, which the reader checks). It
// holds no more than io.Discard's pooled buffer, so it charges nothing to the budget;
// its CPU is what a payload with a forged small size costs before readAll stops it.
func oversized(zr *gzip.Reader) error {
	if n, _ := io.Copy(io.Discard, io.LimitReader(zr, maxPayload+1)); n > maxPayload {
		return errPayloadTooLarge
	}
	return errBadGzip // ended or failed within the limit: the trailer's size was false
}

// decodeBase64 appends the decoding of src to dst. It takes standard or URL-safe
// base64, padded or not; spaces are taken for '+' that form decoding turned into ' '.
func decodeBase64(src, dst []byte, res *reservation) ([]byte, error) {
	src = bytes.TrimRight(src, "\r\n")
	enc := base64.StdEncoding
	if bytes.ContainsAny(src, "-_") {
		enc = base64.URLEncoding
	}
	if len(src)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	n := enc.DecodedLen(len(src))
	if n >= maxPayload {
		return dst, errPayloadTooLarge
	}
	if err := res.charge(n); err != nil {
		return dst, err
	}
	if bytes.IndexByte(src, ' ') >= 0 {
		src = bytes.ReplaceAll(src, []byte(" "), []byte("+"))
	}
	start := len(dst)
	if cap(dst)-start < n {
		grown := make([]byte, start, start+n) // exactly what was charged
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:start+n]
	written, err := enc.Decode(dst[start:], src)
	if err != nil {
		return dst[:start], errBadBase64
	}
	return dst[:start+written], nil
}

// looksBase64 reports whether b could be base64 text (of any alphabet, with spaces
// where form decoding put them for '+').
func looksBase64(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	for _, c := range b {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '+', c == '/', c == '=', c == '-', c == '_', c == ' ', c == '\n', c == '\r':
		default:
			return false
		}
	}
	return true
}

func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }
