package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
	"unsafe"

	"github.com/klauspost/compress/s2"

	"github.com/hedge-analytics/hedge/warehouse"
)

// A message is a version byte and one or more frames, each the part of one request:
// the lane, the events (a count, then each event's fields) and the warnings
// (likewise). Every frame of a message has the lane of the message's subject; the
// Publisher puts concurrent requests' frames for one subject into one message, so that
// the log fsyncs them at once. Integers are varints, strings a uvarint length and
// their bytes, a time its Unix nanoseconds (the instant, not the location), a uuid its
// 16 bytes.
//
// A message of compressedVersion is that version byte and the frames compressed as one
// S2 block (klauspost/compress/s2, Snappy's format extended): the Publisher sends
// messages so, which makes the log's bytes on disk, its fsyncs and the JetStream block
// caches that hold recently written bytes for 10 s three to four times fewer (a block
// of make bench's plain events, 8.3 MB, took 2.1 MB with LZ4, a compressor of S2's
// kind; TestMessageCompressed holds S2 to a third at most). Plain messages stay
// readable, those of an older hedge among them.
const (
	messageVersion    = 1
	compressedVersion = 2
	// maxDecodedBytes bounds what one compressed message may expand to: a message holds
	// about MessageBytes, or one event alone, which the edge bounds far below this.
	maxDecodedBytes = 256 << 20
)

// eventStrings and warningStrings are how many strings each holds.
const (
	eventStrings   = 12
	warningStrings = 4
	// minEventBytes and minWarningBytes are the fewest bytes one takes encoded: a
	// count in a message is checked against them before anything is sized by it.
	minEventBytes   = 16 + 1 + 2 + 1 + eventStrings // uuid, team, time, personless, strings
	minWarningBytes = 1 + 2 + warningStrings
)

// AppendMessage appends the message of one frame, lane's events and warnings, to dst.
func AppendMessage(dst []byte, lane warehouse.Lane, events []warehouse.Event, warnings []warehouse.Warning) []byte {
	return appendFrame(append(dst, messageVersion), lane, events, warnings)
}

// appendFrame appends a frame of lane's events and warnings to dst.
func appendFrame(dst []byte, lane warehouse.Lane, events []warehouse.Event, warnings []warehouse.Warning) []byte {
	dst = append(dst, byte(lane))
	dst = binary.AppendUvarint(dst, uint64(len(events)))
	for i := range events {
		e := &events[i]
		dst = append(dst, e.UUID[:]...)
		dst = binary.AppendVarint(dst, e.TeamID)
		dst = appendTime(dst, e.Timestamp)
		personless := byte(0)
		if e.Personless {
			personless = 1
		}
		dst = append(dst, personless)
		for _, s := range [eventStrings]string{e.Name, e.DistinctID, e.Properties, e.Set, e.SetOnce, e.Unset,
			e.AnonDistinctID, e.Alias, e.Groups, e.GroupType, e.GroupKey, e.GroupSet} {
			dst = appendString(dst, s)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(warnings)))
	for i := range warnings {
		w := &warnings[i]
		dst = binary.AppendVarint(dst, w.TeamID)
		dst = appendTime(dst, w.Time)
		for _, s := range [warningStrings]string{w.Type, w.Event, w.DistinctID, w.Details} {
			dst = appendString(dst, s)
		}
	}
	return dst
}

// appendTime appends t's Unix seconds and nanoseconds: exact for every instant, where
// Unix nanoseconds alone end in 2262.
func appendTime(dst []byte, t time.Time) []byte {
	return binary.AppendUvarint(binary.AppendVarint(dst, t.Unix()), uint64(t.Nanosecond()))
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

var errTruncated = errors.New("truncated")

// CompressMessage appends to dst msg, a message AppendMessage wrote, as a message of
// compressedVersion, or msg itself when compressing does not make it smaller.
func CompressMessage(dst, msg []byte) []byte {
	need := s2.MaxEncodedLen(len(msg) - 1)
	if len(msg) < 2 || msg[0] != messageVersion || need < 0 {
		return append(dst, msg...)
	}
	start := len(dst)
	dst = append(slices.Grow(dst, 1+need), compressedVersion)
	block := s2.Encode(dst[len(dst):len(dst)+need], msg[1:])
	if 1+len(block) >= len(msg) {
		return append(dst[:start], msg...)
	}
	return dst[:len(dst)+len(block)]
}

// DecodeMessage decodes msg into b, reusing b's slices; b's Position is the caller's.
// A compressed message is expanded into *scratch, grown as needed. The strings of b
// alias msg or *scratch: both must stay unchanged while b is in use. A message that is
// not one AppendMessage or CompressMessage wrote is an error, never a panic.
func DecodeMessage(msg []byte, b *warehouse.Batch, scratch *[]byte) error {
	position := b.Position
	b.Reset()
	b.Position = position
	d := decoder{msg: msg}
	switch version := d.byte(); {
	case d.err != nil:
		return fmt.Errorf("cannot decode a log message: %w", d.err)
	case version == compressedVersion:
		n, err := s2.DecodedLen(d.msg)
		if err == nil && n > maxDecodedBytes {
			err = fmt.Errorf("expands to %d bytes, over %d", n, maxDecodedBytes)
		}
		if err == nil {
			*scratch, err = s2.Decode((*scratch)[:cap(*scratch)], d.msg)
		}
		if err != nil {
			return fmt.Errorf("cannot decode a log message: cannot expand it: %w", err)
		}
		d.msg = *scratch
	case version != messageVersion:
		return fmt.Errorf("cannot decode a log message: version %d, want %d or %d", version, messageVersion, compressedVersion)
	}
	for frame := 0; ; frame++ {
		if err := d.frame(b, frame); err != nil {
			return err
		}
		if len(d.msg) == 0 {
			return nil
		}
	}
}

// frame decodes a frame into b, appending to its events and warnings.
func (d *decoder) frame(b *warehouse.Batch, frame int) error {
	lane := warehouse.Lane(d.byte())
	if d.err == nil && lane >= warehouse.Lane(laneCount) {
		return fmt.Errorf("cannot decode a log message: frame %d: lane %d", frame, lane)
	}
	if d.err == nil && frame > 0 && lane != b.Lane {
		return fmt.Errorf("cannot decode a log message: frame %d: lane %s after %s", frame, lane, b.Lane)
	}
	b.Lane = lane
	events := d.count(minEventBytes)
	for i := 0; i < events && d.err == nil; i++ {
		var e warehouse.Event
		copy(e.UUID[:], d.bytes(16))
		e.TeamID = d.varint()
		e.Timestamp = d.time()
		switch d.byte() {
		case 0:
		case 1:
			e.Personless = true
		default:
			d.fail(errors.New("personless is neither 0 nor 1"))
		}
		e.Name, e.DistinctID, e.Properties = d.string(), d.string(), d.string()
		e.Set, e.SetOnce, e.Unset = d.string(), d.string(), d.string()
		e.AnonDistinctID, e.Alias, e.Groups = d.string(), d.string(), d.string()
		e.GroupType, e.GroupKey, e.GroupSet = d.string(), d.string(), d.string()
		if d.err != nil {
			return fmt.Errorf("cannot decode a log message: frame %d: event %d: %w", frame, i, d.err)
		}
		b.Events = append(b.Events, e)
	}
	warnings := d.count(minWarningBytes)
	for i := 0; i < warnings && d.err == nil; i++ {
		var w warehouse.Warning
		w.TeamID = d.varint()
		w.Time = d.time()
		w.Type, w.Event, w.DistinctID, w.Details = d.string(), d.string(), d.string(), d.string()
		if d.err != nil {
			return fmt.Errorf("cannot decode a log message: frame %d: warning %d: %w", frame, i, d.err)
		}
		b.Warnings = append(b.Warnings, w)
	}
	if d.err != nil {
		return fmt.Errorf("cannot decode a log message: frame %d: %w", frame, d.err)
	}
	return nil
}

// decoder reads a message from its front; the first failure sticks, and every read
// after it returns zero values.
type decoder struct {
	msg []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.msg = nil
}

func (d *decoder) byte() byte {
	if len(d.msg) < 1 {
		d.fail(errTruncated)
		return 0
	}
	c := d.msg[0]
	d.msg = d.msg[1:]
	return c
}

func (d *decoder) bytes(n int) []byte {
	if len(d.msg) < n {
		d.fail(errTruncated)
		return nil
	}
	p := d.msg[:n]
	d.msg = d.msg[n:]
	return p
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.msg)
	if n <= 0 {
		d.fail(errTruncated)
		return 0
	}
	d.msg = d.msg[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.msg)
	if n <= 0 {
		d.fail(errTruncated)
		return 0
	}
	d.msg = d.msg[n:]
	return v
}

// time reads an instant that appendTime wrote, in UTC.
func (d *decoder) time() time.Time {
	sec, nsec := d.varint(), d.uvarint()
	if nsec >= 1e9 {
		d.fail(fmt.Errorf("%d nanoseconds in a second", nsec))
	}
	if d.err != nil {
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

// count reads a count of items of at least minBytes each, refusing one that the bytes
// left cannot hold, so that nothing is sized by a forged count.
func (d *decoder) count(minBytes int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.msg)/minBytes) {
		d.fail(fmt.Errorf("a count of %d in %d bytes", n, len(d.msg)))
		return 0
	}
	return int(n)
}

// string reads a string that aliases the message.
func (d *decoder) string() string {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.msg)) {
		d.fail(errTruncated)
	}
	if d.err != nil || n == 0 {
		return ""
	}
	p := d.bytes(int(n))
	return unsafe.String(&p[0], len(p))
}
