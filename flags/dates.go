package flags

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// dateKind is how a date filter's text places its instant.
type dateKind uint8

const (
	// dateRelative: N hours, days, weeks, months or years before now.
	dateRelative dateKind = iota
	// dateInstant: an instant, the text carrying its offset (or a Unix timestamp).
	dateInstant
	// dateWallClock: a date or a date and time without offset, in the project's time
	// zone.
	dateWallClock
)

// dateSpec is a date read from text: the filter of is_date_before, is_date_after and
// is_date_exact, or a property's text.
type dateSpec struct {
	kind dateKind
	n    int
	unit byte // h, d, w, m or y
	at   time.Time
	wall time.Time // the wall clock, as if in UTC
}

// parseDateSpec reads a date's text, in this order: relative ("-7d", "3m": the sign
// is optional and the count is always in the past; h, d, w, m and y, fewer than 10000);
// RFC 3339 with its offset ("2024-06-01T10:00:00Z", also with t or a space); a date
// ("2024-06-01", midnight) or a date and time ("2024-06-01 10:00[:00[.123]]", also with
// T) in the project's time zone; then a Unix timestamp of 10 (seconds), 13
// (milliseconds) or 19 (nanoseconds) digits, RFC 2822 ("Wed, 02 Jun 2021 06:31:39
// GMT"), or a date and time followed by its offset or UTC/GMT ("2021-05-02 23:31:36
// +02:00"). Any other text is not a date.
func parseDateSpec(s string) (dateSpec, bool) {
	if n, unit, ok := parseRelativeDate(s); ok {
		return dateSpec{kind: dateRelative, n: n, unit: unit}, true
	}
	if t, ok := parseRFC3339(s); ok {
		return dateSpec{kind: dateInstant, at: t}, true
	}
	if wall, ok := parseWallClock(s); ok {
		return dateSpec{kind: dateWallClock, wall: wall}, true
	}
	if t, ok := parseOtherDate(s); ok {
		return dateSpec{kind: dateInstant, at: t}, true
	}
	return dateSpec{}, false
}

// instant is the date's instant, now and in the project's time zone; a wall clock that
// the zone skips (a change to summer time) has none, one it repeats is the earlier.
func (d *dateSpec) instant(mc *matchContext) (time.Time, bool) {
	switch d.kind {
	case dateInstant:
		return d.at, true
	case dateWallClock:
		return wallClockInstant(d.wall, mc.loc)
	}
	return relativeInstant(d.n, d.unit, mc)
}

// parseRelativeDate reads -?N[hdwmy] with N < 10000.
func parseRelativeDate(s string) (int, byte, bool) {
	digits := strings.TrimPrefix(s, "-")
	if len(digits) < 2 {
		return 0, 0, false
	}
	unit := digits[len(digits)-1]
	digits = digits[:len(digits)-1]
	if strings.IndexByte("hdwmy", unit) < 0 {
		return 0, 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, 0, false
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n >= 10000 {
		return 0, 0, false
	}
	return int(n), unit, true
}

// relativeInstant goes back n units from now on the wall clock of the project's time
// zone, then reads that wall clock in the zone: hours, days (24 hours) and weeks are
// fixed lengths of the wall clock; a month goes back one calendar month at a time,
// keeping the day of the month unless the month is shorter (March 31 → February 29 →
// January 29); a year goes back one at a time, February 29 becoming February 28.
func relativeInstant(n int, unit byte, mc *matchContext) (time.Time, bool) {
	now := mc.now.In(mc.loc)
	wall := time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), now.Minute(), now.Second(), now.Nanosecond(), time.UTC)
	switch unit {
	case 'h':
		wall = wall.Add(-time.Duration(n) * time.Hour)
	case 'd':
		wall = wall.Add(-time.Duration(n) * 24 * time.Hour)
	case 'w':
		wall = wall.Add(-time.Duration(n) * 7 * 24 * time.Hour)
	case 'm':
		y, m, d := wall.Date()
		for range n {
			if m == time.January {
				y, m = y-1, time.December
			} else {
				m--
			}
			d = min(d, daysIn(y, m))
		}
		wall = time.Date(y, m, d, wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), time.UTC)
	case 'y':
		y, m, d := wall.Date()
		for range n {
			y--
			if m == time.February {
				d = min(d, daysIn(y, m))
			}
		}
		wall = time.Date(y, m, d, wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), time.UTC)
	}
	return wallClockInstant(wall, mc.loc)
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// wallClockInstant is the instant at which the clocks of loc show wall (a wall clock
// held as a UTC time): none when loc skips it, the earlier when loc shows it twice.
func wallClockInstant(wall time.Time, loc *time.Location) (time.Time, bool) {
	if loc == time.UTC {
		return wall, true
	}
	var best time.Time
	found := false
	for _, probe := range [...]time.Duration{-30 * time.Hour, 0, 30 * time.Hour} {
		_, offset := wall.Add(probe).In(loc).Zone()
		candidate := wall.Add(-time.Duration(offset) * time.Second)
		if _, got := candidate.In(loc).Zone(); got != offset {
			continue
		}
		if !found || candidate.Before(best) {
			best, found = candidate, true
		}
	}
	return best, found
}

// propertyDate is the instant of a property for the date operators: a number, or text
// that reads as one, is a Unix timestamp in seconds (with a fraction); other text is
// read by parseDateSpec.
func propertyDate(v *value, mc *matchContext) (time.Time, bool) {
	switch v.kind {
	case kindNumber:
		return unixSeconds(v.num)
	case kindString:
		if f, ok := parseFloatText(v.s); ok {
			return unixSeconds(f)
		}
		spec, ok := parseDateSpec(v.s)
		if !ok {
			return time.Time{}, false
		}
		return spec.instant(mc)
	}
	return time.Time{}, false
}

// maxUnixSeconds bounds the timestamps that are dates (years up to about 262000).
const maxUnixSeconds = 8_210_266_876_799

// unixSeconds is the instant f seconds after the Unix epoch: the fraction counts to the
// nanosecond for a positive f and is dropped for a negative one; NaN is the epoch.
func unixSeconds(f float64) (time.Time, bool) {
	if math.IsNaN(f) {
		return time.Unix(0, 0).UTC(), true
	}
	whole := math.Floor(f)
	if math.Abs(whole) > maxUnixSeconds {
		return time.Time{}, false
	}
	nanos := math.Round(math.Mod(f, 1) * 1e9)
	if nanos < 0 {
		nanos = 0
	}
	return time.Unix(int64(whole), int64(nanos)).UTC(), true
}

// civil is a date and time read from text, with its offset when it has one.
type civil struct {
	year, month, day, hour, minute, second, nanos int
	offset                                        int // seconds east of UTC
	hasOffset                                     bool
}

func (c *civil) valid() bool {
	return c.month >= 1 && c.month <= 12 && c.day >= 1 && c.day <= daysIn(c.year, time.Month(c.month)) &&
		c.hour <= 23 && c.minute <= 59 && c.second <= 60
}

func (c *civil) wall() time.Time {
	return time.Date(c.year, time.Month(c.month), c.day, c.hour, c.minute, c.second, c.nanos, time.UTC)
}

func (c *civil) instant() time.Time {
	return c.wall().Add(-time.Duration(c.offset) * time.Second)
}

// textScanner reads the fields of a date's text.
type textScanner struct {
	s string
	i int
}

func (p *textScanner) done() bool { return p.i >= len(p.s) }

func (p *textScanner) peek() byte {
	if p.done() {
		return 0
	}
	return p.s[p.i]
}

func (p *textScanner) accept(c byte) bool {
	if p.peek() == c && !p.done() {
		p.i++
		return true
	}
	return false
}

// digits reads from min to max decimal digits.
func (p *textScanner) digits(min, max int) (int, bool) {
	start, n := p.i, 0
	for p.i < len(p.s) && p.i-start < max && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		n = n*10 + int(p.s[p.i]-'0')
		p.i++
	}
	return n, p.i-start >= min
}

// fraction reads the digits after a decimal point as nanoseconds.
func (p *textScanner) fraction() (int, bool) {
	start, nanos, scale := p.i, 0, 100_000_000
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		nanos += int(p.s[p.i]-'0') * scale
		scale /= 10
		p.i++
	}
	return nanos, p.i > start
}

// date reads YYYY-MM-DD; loose lets the month and the day have one digit.
func (p *textScanner) date(c *civil, loose bool) bool {
	var ok bool
	least := 2
	if loose {
		least = 1
	}
	if c.year, ok = p.digits(4, 4); !ok || !p.accept('-') {
		return false
	}
	if c.month, ok = p.digits(least, 2); !ok || !p.accept('-') {
		return false
	}
	c.day, ok = p.digits(least, 2)
	return ok
}

// clock reads H:M, then optionally :S and a fraction; strict wants two digits each and
// the seconds.
func (p *textScanner) clock(c *civil, strict bool) bool {
	least := 1
	if strict {
		least = 2
	}
	var ok bool
	if c.hour, ok = p.digits(least, 2); !ok || !p.accept(':') {
		return false
	}
	if c.minute, ok = p.digits(least, 2); !ok {
		return false
	}
	if !p.accept(':') {
		return !strict
	}
	if c.second, ok = p.digits(least, 2); !ok {
		return false
	}
	if p.accept('.') {
		if c.nanos, ok = p.fraction(); !ok {
			return false
		}
	}
	return true
}

// zone reads Z or an offset ±HH:MM; loose also takes ±HHMM, ±HH, and UTC or GMT after
// optional spaces.
func (p *textScanner) zone(c *civil, loose bool) bool {
	if loose {
		for p.accept(' ') {
		}
		rest := p.s[p.i:]
		if rest == "UTC" || rest == "GMT" || rest == "Z" || rest == "z" {
			p.i = len(p.s)
			c.hasOffset = true
			return true
		}
	} else if p.accept('Z') || p.accept('z') {
		c.hasOffset = true
		return true
	}
	sign := 1
	switch {
	case p.accept('+'):
	case p.accept('-'):
		sign = -1
	default:
		return false
	}
	hours, ok := p.digits(2, 2)
	if !ok {
		return false
	}
	minutes := 0
	if p.accept(':') || (loose && !p.done()) {
		if minutes, ok = p.digits(2, 2); !ok {
			return false
		}
	}
	if hours > 23 || minutes > 59 {
		return false
	}
	c.offset, c.hasOffset = sign*(hours*3600+minutes*60), true
	return true
}

// parseRFC3339 reads YYYY-MM-DD(T|t| )HH:MM:SS[.frac](Z|z|±HH:MM).
func parseRFC3339(s string) (time.Time, bool) {
	p := textScanner{s: s}
	var c civil
	if !p.date(&c, false) {
		return time.Time{}, false
	}
	if !p.accept('T') && !p.accept('t') && !p.accept(' ') {
		return time.Time{}, false
	}
	if !p.clock(&c, true) || !p.zone(&c, false) || !p.done() || !c.valid() {
		return time.Time{}, false
	}
	return c.instant(), true
}

// parseWallClock reads a date, or a date and time, without offset: YYYY-MM-DD, or that
// followed by a space or T and H:M[:S[.frac]].
func parseWallClock(s string) (time.Time, bool) {
	p := textScanner{s: s}
	var c civil
	if !p.date(&c, true) {
		return time.Time{}, false
	}
	if !p.done() {
		if !p.accept(' ') && !p.accept('T') {
			return time.Time{}, false
		}
		if !p.clock(&c, false) {
			return time.Time{}, false
		}
	}
	if !p.done() || !c.valid() {
		return time.Time{}, false
	}
	return c.wall(), true
}

// rfc2822Zones are the zone names RFC 2822 allows.
var rfc2822Zones = map[string]string{
	"GMT": "+0000", "UT": "+0000", "UTC": "+0000", "Z": "+0000",
	"EST": "-0500", "EDT": "-0400", "CST": "-0600", "CDT": "-0500",
	"MST": "-0700", "MDT": "-0600", "PST": "-0800", "PDT": "-0700",
}

// parseOtherDate reads the remaining forms of parseDateSpec: a Unix timestamp, RFC 2822,
// and a date and time followed by its offset.
func parseOtherDate(s string) (time.Time, bool) {
	if isDigits(s) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		switch len(s) {
		case 10:
			return time.Unix(n, 0).UTC(), true
		case 13:
			return time.UnixMilli(n).UTC(), true
		case 19:
			return time.Unix(0, n).UTC(), true
		}
		return time.Time{}, false
	}
	if t, ok := parseRFC2822(s); ok {
		return t, true
	}
	p := textScanner{s: s}
	var c civil
	if !p.date(&c, false) || !p.accept(' ') {
		return time.Time{}, false
	}
	for p.accept(' ') {
	}
	if !p.clock(&c, false) {
		return time.Time{}, false
	}
	if !p.zone(&c, true) || !p.done() || !c.valid() {
		return time.Time{}, false
	}
	return c.instant(), true
}

func parseRFC2822(s string) (time.Time, bool) {
	if i := strings.LastIndexByte(s, ' '); i > 0 {
		if offset, ok := rfc2822Zones[s[i+1:]]; ok {
			s = s[:i+1] + offset
		}
	}
	for _, layout := range [...]string{
		"Mon, 2 Jan 2006 15:04:05 -0700",
		"2 Jan 2006 15:04:05 -0700",
		"Mon, 2 Jan 2006 15:04 -0700",
		"2 Jan 2006 15:04 -0700",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
