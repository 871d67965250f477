package gen

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"
)

// A Body is a request body built once and sent many times. Stamp gives the events of
// every send uuids of their own, so that a load test can count each send's rows in the
// database, while building the body (the costly part) stays out of the timed loop.
//
// Stamped uuids read "rrrrrrrr-ssss-ssss-ssss-iiiiiiiiiiii": the run in hex, then the
// send number (12 decimal digits) and the event's index in the body (12 decimal
// digits). Decimal digits are valid hex, and they let SQL take the send number out of
// the uuid's text: CAST(substr(u, 10, 4) || substr(u, 15, 4) || substr(u, 20, 4) AS BIGINT).
type Body struct {
	// Events is how many events the body holds.
	Events int
	plain  []byte
	uuids  []int // offset of each event's uuid text in plain
	// gz is the gzip form of plain when the body is compressed, and gzUUIDs the bit
	// offsets of the uuids' literals in it (see Gzip).
	gz      []byte
	gzUUIDs []int
}

// uuidLen is the length of a uuid's text.
const uuidLen = 36

// eventPrefix is how Event starts each event, up to its uuid's text.
const eventPrefix = `{"uuid":"`

// BodyConfig says what a /batch/ body holds.
type BodyConfig struct {
	Token string
	// Events is how many events the body holds, at most.
	Events int
	// MaxBytes, when positive, ends the body before the event that would make it
	// MaxBytes long or longer (PostHog's limits are "smaller than").
	MaxBytes int
	// Historical marks the batch historical_migration, as an import would send it.
	Historical bool
	// Time is the events' timestamp and the batch's sent_at.
	Time time.Time
}

// BatchBody returns a /batch/ body: {"api_key", "sent_at", ["historical_migration",] "batch"}.
func (g *Generator) BatchBody(c BodyConfig) *Body {
	b := &Body{}
	head := fmt.Appendf(nil, `{"api_key":%q,"sent_at":%q,`, c.Token, c.Time.UTC().Format(time.RFC3339Nano))
	if c.Historical {
		head = append(head, `"historical_migration":true,`...)
	}
	b.plain = append(head, `"batch":[`...)
	var event []byte
	for b.Events < c.Events {
		event = g.Event(event[:0], c.Token, c.Time)
		// the separator before the event and the closing "]}"
		if c.MaxBytes > 0 && len(b.plain)+1+len(event)+2 >= c.MaxBytes {
			break
		}
		if b.Events > 0 {
			b.plain = append(b.plain, ',')
		}
		b.uuids = append(b.uuids, len(b.plain)+len(eventPrefix))
		b.plain = append(b.plain, event...)
		b.Events++
	}
	b.plain = append(b.plain, "]}"...)
	return b
}

// SingleBody returns a /capture/ body of one event, the token at the top.
func (g *Generator) SingleBody(token string, now time.Time) *Body {
	head := fmt.Appendf(nil, `{"api_key":%q,`, token)
	event := g.Event(nil, token, now)
	return &Body{
		Events: 1,
		plain:  append(head, event[1:]...),
		uuids:  []int{len(head) - 1 + len(eventPrefix)},
	}
}

// Len is the number of bytes a send of the body carries.
func (b *Body) Len() int {
	if b.gz != nil {
		return len(b.gz)
	}
	return len(b.plain)
}

// PlainLen is the number of bytes of the body's JSON text.
func (b *Body) PlainLen() int { return len(b.plain) }

// Gzip returns the body gzip-compressed, as posthog-js sends it, in a form whose uuids
// Stamp can rewrite without compressing again: one deflate block with the fixed
// Huffman code (RFC 1951, 3.2.6), in which every character a uuid's text can hold is
// an 8-bit literal, so each uuid is 288 bits at a known offset. No back-reference
// reaches into a uuid, so a stamped uuid changes nothing else. It compresses JSON
// events about 5x (gzip -6: about 8x) and inflates as fast as an ordinary gzip body.
func (b *Body) Gzip() *Body {
	gz := &Body{Events: b.Events, plain: b.plain, uuids: b.uuids}
	gz.gz, gz.gzUUIDs = deflateFixed(b.plain, b.uuids)
	return gz
}

// Stamp appends the body to dst with the uuids of run's send number send, and returns
// it. Sends must be numbered below 10^12.
func (b *Body) Stamp(dst []byte, run uint32, send uint64) []byte {
	var id [uuidLen]byte
	if b.gz == nil {
		dst = append(dst, b.plain...)
		body := dst[len(dst)-len(b.plain):]
		for i, at := range b.uuids {
			StampedUUID(id[:0], run, send, uint64(i))
			copy(body[at:], id[:])
		}
		return dst
	}
	dst = append(dst, b.gz...)
	body := dst[len(dst)-len(b.gz):]
	crc, start := uint32(0), 0
	for i, at := range b.uuids {
		StampedUUID(id[:0], run, send, uint64(i))
		for j, c := range id {
			putLiteral(body, b.gzUUIDs[i]+8*j, c)
		}
		crc = crc32.Update(crc, crc32.IEEETable, b.plain[start:at])
		crc = crc32.Update(crc, crc32.IEEETable, id[:])
		start = at + uuidLen
	}
	crc = crc32.Update(crc, crc32.IEEETable, b.plain[start:])
	binary.LittleEndian.PutUint32(body[len(body)-8:], crc)
	return dst
}

// StampedUUID appends the uuid text of event index of run's send number send to dst.
func StampedUUID(dst []byte, run uint32, send, index uint64) []byte {
	const hex = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		dst = append(dst, hex[run>>shift&0xf])
	}
	var digits [12]byte
	decimal(digits[:], send)
	dst = append(dst, '-')
	dst = append(dst, digits[0:4]...)
	dst = append(dst, '-')
	dst = append(dst, digits[4:8]...)
	dst = append(dst, '-')
	dst = append(dst, digits[8:12]...)
	dst = append(dst, '-')
	decimal(digits[:], index)
	return append(dst, digits[:]...)
}

// decimal writes n into digits as zero-padded decimal, keeping its lowest digits.
func decimal(digits []byte, n uint64) {
	for i := len(digits) - 1; i >= 0; i-- {
		digits[i] = byte('0' + n%10)
		n /= 10
	}
}
