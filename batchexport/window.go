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

// Window is the span [Start, End) of commit times that one run exports.
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

// alignDown is the start of the window of the given length that holds t.
func alignDown(t time.Time, length time.Duration) time.Time {
	origin := windowOrigin(length)
	n := t.Sub(origin) / length
	start := origin.Add(n * length)
	if start.After(t) { // before the origin, division truncates toward zero
		start = start.Add(-length)
	}
	return start.UTC()
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

// Windows are the windows of interval that overlap [from, to) and have ended by now,
// oldest first: what a backfill of [from, to) runs. Windows are aligned to the
// schedule's, so a backfilled window is the very window the schedule would have run.
func Windows(interval string, from, to, now time.Time) []Window {
	length, ok := intervalLengths[interval]
	if !ok || !from.Before(to) {
		return nil
	}
	var windows []Window
	for start := alignDown(from, length); start.Before(to); start = start.Add(length) {
		end := start.Add(length)
		if end.After(now) {
			break
		}
		windows = append(windows, Window{Start: start, End: end})
	}
	return windows
}
