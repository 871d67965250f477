package batchexport

import "time"

// Intervals are the schedules a batch export may have, PostHog's: each names the
// length of its windows.
var Intervals = []string{"hour", "day", "week", "every 5 minutes", "every 15 minutes"}

var intervalLengths = map[string]time.Duration{
	"hour":             time.Hour,
	"day":              24 * time.Hour,
	"week":             7 * 24 * time.Hour,
	"every 5 minutes":  5 * time.Minute,
	"every 15 minutes": 15 * time.Minute,
}

// Window is the span [Start, End) that one run exports: of commit times, or of event
// times for a backfill's run of events (run.byEventTime).
type Window struct {
	Start, End time.Time
}

// windowOrigin is where windows are counted from: the Unix epoch, so hours, days and
// minutes fall on UTC boundaries; weeks from the first Sunday after it, as PostHog's
// weekly schedules start on Sunday 00:00 UTC.
func windowOrigin(length time.Duration) time.Time {
	if length == intervalLengths["week"] {
		return time.Date(1970, 1, 4, 0, 0, 0, 0, time.UTC)
	}
	return time.Unix(0, 0).UTC()
}

// Window arithmetic counts whole seconds in int64, never a time.Duration between two
// times: a Duration spans at most 292 years, and a timestamp the API accepts (year 1,
// year 9999) must align and count as well as one of today. Every length is a whole
// number of seconds, and every window bound a whole second.

// alignDown is the start of the window of the given length that holds t.
func alignDown(t time.Time, length time.Duration) time.Time {
	origin, seconds := windowOrigin(length).Unix(), int64(length/time.Second)
	// t.Unix() rounds down, so a fraction of a second stays in its window.
	since := t.Unix() - origin
	n := since / seconds
	if since%seconds < 0 { // before the origin, division truncates toward zero
		n--
	}
	return time.Unix(origin+n*seconds, 0).UTC()
}

// alignUp is the start of the first window of the given length that starts at or
// after t.
func alignUp(t time.Time, length time.Duration) time.Time {
	start := alignDown(t, length)
	if start.Before(t) {
		start = start.Add(length)
	}
	return start
}

// addWindows is the window bound t moved by n windows of the given length.
func addWindows(t time.Time, n int64, length time.Duration) time.Time {
	return time.Unix(t.Unix()+n*int64(length/time.Second), 0).UTC()
}

// windowsBetween is how many windows of the given length lie between the window
// bounds from and to: none when to is not after from.
func windowsBetween(from, to time.Time, length time.Duration) int64 {
	if !to.After(from) {
		return 0
	}
	return (to.Unix() - from.Unix()) / int64(length/time.Second)
}

// backfillSpan is the windows of interval that overlap [from, to) and have ended by
// now, oldest first: what a backfill of [from, to) runs, as the start of the first and
// the end of the last. Windows are aligned to the schedule's, so a backfilled window is
// the very window the schedule would have run. n is how many there are; 0 for an
// interval hedge does not know.
func backfillSpan(interval string, from, to, now time.Time) (first, end time.Time, n int64) {
	length, ok := intervalLengths[interval]
	if !ok || !from.Before(to) {
		return from, from, 0
	}
	first = alignDown(from, length)
	// A window overlaps [from, to) when it starts before to, and has ended when it
	// ends at or before now.
	end = alignUp(to, length)
	if last := alignDown(now, length); last.Before(end) {
		end = last
	}
	return first, end, windowsBetween(first, end, length)
}
