package edge

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/jsontext"
	"github.com/hedge-analytics/hedge/warehouse"
)

// PostHog's event rules: how a decoded event becomes a row of its lane, or a warning
// about why it was skipped. The rows' strings are views, not copies: of the payload, or
// of the properties rebuilt for the event; warehouse.Event allows it, since a request
// is released only once Submit has returned.

// sort turns the decoded events into rows of their lanes, and the events to skip into
// warnings: historical_migration payloads go to the historical lane, realtime events
// of a distinct_id over its rate to the overflow lane.
func (s *Server) sort(q *request, team int64, rt route, sentAt, now time.Time) *captureError {
	p := &q.parsed
	lane := warehouse.LaneRealtime
	if p.historical {
		lane = warehouse.LaneHistorical
	}
	nowNanos := now.UnixNano()
	for i := range p.events {
		e, props := &p.events[i], &p.props[i]
		name := replaceNUL(e.Event)
		if rt.engage && name == "" {
			name = warehouse.EventIdentify
		}
		distinctID := distinctIDOf(e, props)
		if reason := skipReason(name, distinctID, props); reason != "" {
			b := &q.batches[lane]
			b.Warnings = append(b.Warnings, warehouse.Warning{TeamID: team, Time: now, Type: reason, Event: name, DistinctID: distinctID})
			continue
		}
		id, ok := eventUUID(e.UUID)
		if !ok {
			return errInvalidPayload("event " + strconv.Itoa(i) + " has a uuid that is not a valid UUID")
		}
		target := lane
		if lane == warehouse.LaneRealtime && !s.overflow.allow(team, distinctID, nowNanos) {
			target = warehouse.LaneOverflow
		}
		b := &q.batches[target]
		b.Events = append(b.Events, identityOf(name, e, props))
		event := &b.Events[len(b.Events)-1]
		event.UUID, event.TeamID, event.Name, event.DistinctID = id, team, name, distinctID
		event.Timestamp = eventTime(e, props, sentAt, now)
	}
	return nil
}

// Warning types written to ingestion_warnings for events that are skipped.
const (
	warnMissingEventName   = "missing_event_name"
	warnMissingDistinctID  = "missing_distinct_id"
	warnMissingSurveyID    = "missing_survey_id"
	warnPersonlessIdentity = "invalid_event_when_process_person_profile_is_false"
	warnGroupKeyTooLong    = "group_key_too_long"
	warnInvalidGroupSet    = "invalid_group_set"
)

// dropDuplicateUUID is the reason counted for an event that the writer skipped because
// its project had stored its uuid already (a retry): answered as accepted, without a
// warning, as a retry should be.
const dropDuplicateUUID = "duplicate_uuid"

// maxGroupKeyLength is PostHog's limit on a $groupidentify's $group_key, in characters.
const maxGroupKeyLength = 400

// skipReason says why an event must be skipped while the rest of its request is
// ingested, or "" to keep it.
func skipReason(name, distinctID string, props *rawProperties) string {
	switch {
	case name == "":
		return warnMissingEventName
	case distinctID == "":
		return warnMissingDistinctID
	}
	switch name {
	case "survey sent", "survey shown", "survey dismissed":
		if jsontext.Text(props.SurveyID) == "" {
			return warnMissingSurveyID
		}
	case warehouse.EventIdentify, warehouse.EventCreateAlias, warehouse.EventMergeDangerously, warehouse.EventGroupIdentify:
		if personless(props) {
			return warnPersonlessIdentity
		}
	}
	if name == warehouse.EventGroupIdentify {
		switch {
		case utf8.RuneCountInString(jsontext.Text(props.GroupKey)) > maxGroupKeyLength:
			return warnGroupKeyTooLong
		case len(props.GroupSet) > 0 && string(props.GroupSet) != "null" && !jsontext.IsObject(props.GroupSet):
			return warnInvalidGroupSet
		}
	}
	return ""
}

// personless reports $process_person_profile: false. Any other value is taken as true,
// as PostHog does.
func personless(props *rawProperties) bool {
	return bytes.Equal(props.ProcessPersonProfile, []byte("false"))
}

// maxDistinctIDLength is PostHog's cap on a distinct_id; longer ids are cut, not
// refused. Every other id that names a person is cut the same way: $anon_distinct_id
// (capture's $identify and /flags/), a $create_alias's alias and device ids. An
// anonymous id longer than the cap was stored cut as its events' distinct_id, so only
// its cut form finds that person; and no id a client sends can make a row, an index key
// or a hash input larger than the cap (a 1.9 MB $anon_distinct_id in continuity rows
// had DuckDB run out of memory rolling back their insert, which invalidates the
// database).
const maxDistinctIDLength = 200

// distinctIDOf is the event's distinct_id: the event's own, else $distinct_id, else
// properties.distinct_id. As in PostHog, a string is taken as it is, and a number, an
// object, an array or a boolean as its JSON text; null and "" are no distinct id.
func distinctIDOf(e *rawEvent, props *rawProperties) string {
	for _, raw := range [...][]byte{e.DistinctID, e.DollarDistinctID, props.DistinctID} {
		id := jsontext.Text(raw)
		if id == "" && len(raw) > 0 && raw[0] != '"' && string(raw) != "null" {
			id = jsontext.BytesToString(raw)
		}
		if id != "" {
			return cutID(id)
		}
	}
	return ""
}

// cutID is an id as capture keeps it: NUL replaced, cut to maxDistinctIDLength
// characters.
func cutID(id string) string { return truncateChars(replaceNUL(id), maxDistinctIDLength) }

// truncateChars cuts s to maxChars characters.
func truncateChars(s string, maxChars int) string {
	if len(s) > maxChars { // only then can it have more characters
		n := 0
		for i := range s {
			if n == maxChars {
				return s[:i]
			}
			n++
		}
	}
	return s
}

// replaceNUL replaces NUL characters, as PostHog does for ids and names.
func replaceNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// eventUUID is the event's uuid, or a new UUIDv7 when it has none.
func eventUUID(raw string) (uuid.UUID, bool) {
	if raw == "" {
		return uuid.Must(uuid.NewV7()), true
	}
	id, err := uuid.Parse(raw)
	if err != nil || id == uuid.Nil {
		return uuid.Nil, false
	}
	return id, true
}

// maxFutureSkew: a time further ahead of the server clock than this is taken to be
// wrong and replaced with now.
const maxFutureSkew = 23 * time.Hour

// eventTime applies PostHog's timestamp rules: offset (milliseconds before now) wins;
// else the timestamp, shifted by the client's clock skew when the payload says when it
// was sent (sent_at) and the event does not opt out ($ignore_sent_at); else now. A time
// more than 23 h ahead becomes now.
func eventTime(e *rawEvent, props *rawProperties, sentAt, now time.Time) time.Time {
	t := now
	if offset, ok := jsontext.Number(e.Offset); ok {
		// Bounded first: a Duration overflows past 292 years.
		const maxOffset = float64(200 * 365 * 24 * time.Hour / time.Millisecond)
		offset = max(-maxOffset, min(offset, maxOffset))
		t = now.Add(-time.Duration(offset * float64(time.Millisecond)))
	} else if ts, ok := parseTime(e.Timestamp); ok {
		t = ts
		if !sentAt.IsZero() && !bytes.Equal(props.IgnoreSentAt, []byte("true")) {
			t = now.Add(ts.Sub(sentAt))
		}
	}
	if t.Sub(now) > maxFutureSkew {
		return now
	}
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Unix(0, 0).UTC()
	}
	return t.UTC()
}

// timeLayouts are the text forms a timestamp may take: ISO 8601 with any precision,
// with or without a zone (without: UTC), with T or a space, or a date alone.
var timeLayouts = [...]string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// parseTime reads a timestamp: a JSON string in one of timeLayouts or holding epoch
// digits, or a JSON number of epoch seconds or milliseconds.
func parseTime(raw []byte) (time.Time, bool) {
	if n, ok := jsontext.Number(raw); ok {
		return epochTime(n), true
	}
	s := jsontext.String(raw)
	if s == "" {
		return time.Time{}, false
	}
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return epochTime(n), true
	}
	return time.Time{}, false
}

// epochTime reads n as epoch milliseconds when it is too large to be seconds of any
// plausible date (1e11 s is year 5138), else as epoch seconds.
func epochTime(n float64) time.Time {
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return time.Unix(0, 0)
	}
	if math.Abs(n) >= 1e11 {
		return time.UnixMilli(int64(n))
	}
	sec, frac := math.Modf(n)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// queryTime reads a sent_at given in the query string (?_= or ?sent_at=, in epoch
// milliseconds, as posthog-js sends it); values before 2021 are not milliseconds and
// are ignored, as PostHog does.
func queryTime(value []byte) time.Time {
	ms, err := strconv.ParseInt(jsontext.BytesToString(value), 10, 64)
	if err != nil {
		return time.Time{}
	}
	t := time.UnixMilli(ms)
	if t.Year() <= 2020 {
		return time.Time{}
	}
	return t
}

// identityOf is an event row with its properties as stored and what it asks of the
// identity model: personless events and $groupidentify never touch a person, so their
// $set, $set_once and $unset are stripped.
func identityOf(name string, e *rawEvent, props *rawProperties) warehouse.Event {
	sets := personSetsOf(e, props)
	ev := warehouse.Event{Personless: personless(props)}
	strip := ev.Personless || name == warehouse.EventGroupIdentify
	ev.Properties = jsontext.BytesToString(eventProperties(e, &sets, strip))
	if ev.Personless {
		return ev
	}
	if !strip {
		ev.Set, ev.SetOnce, ev.Unset = jsontext.BytesToString(sets.values[0]), jsontext.BytesToString(sets.values[1]), jsontext.BytesToString(sets.values[2])
	}
	ev.AnonDistinctID = cutID(jsontext.Text(props.AnonDistinctID))
	ev.Alias = cutID(jsontext.Text(props.Alias))
	if jsontext.IsObject(props.Groups) {
		ev.Groups = jsontext.BytesToString(props.Groups)
	}
	if name == warehouse.EventGroupIdentify {
		ev.GroupType, ev.GroupKey = jsontext.Text(props.GroupType), jsontext.Text(props.GroupKey)
		if jsontext.IsObject(props.GroupSet) {
			ev.GroupSet = jsontext.BytesToString(props.GroupSet)
		}
	}
	return ev
}

// personSets holds an event's $set, $set_once and $unset as the identity model must
// apply them: the properties' ones with the event's top-level ones merged in, the top
// level winning: objects key by key, $unset lists one after the other.
type personSets struct {
	values [3][]byte // $set, $set_once, $unset; nil when absent
	// merged marks the values that differ from the properties' own, because the event
	// had them at its top level too.
	merged [3]bool
}

var personSetKeys = [3]string{"$set", "$set_once", "$unset"}

func personSetsOf(e *rawEvent, props *rawProperties) personSets {
	var s personSets
	for i, pair := range [3]struct{ top, prop []byte }{{e.Set, props.Set}, {e.SetOnce, props.SetOnce}, {e.Unset, props.Unset}} {
		s.values[i] = pair.prop
		if pair.top == nil || string(pair.top) == "null" {
			continue
		}
		value := pair.top
		switch {
		case jsontext.IsObject(pair.top) && jsontext.IsObject(pair.prop):
			value = jsontext.MergeObjects(nil, pair.prop, pair.top)
		case jsontext.IsArray(pair.top) && jsontext.IsArray(pair.prop):
			value = jsontext.ConcatArrays(nil, pair.prop, pair.top)
		}
		s.values[i], s.merged[i] = value, true
	}
	return s
}

// eventProperties is the event's properties as stored: with the merged person sets in
// place of the properties' own, or without any of them when strip (events that must not
// touch a person keep none). An event that needs neither keeps its properties as sent,
// byte for byte.
func eventProperties(e *rawEvent, sets *personSets, strip bool) []byte {
	properties := e.Properties
	if len(properties) == 0 || string(properties) == "null" {
		properties = emptyObject
	}
	if !strip && !sets.merged[0] && !sets.merged[1] && !sets.merged[2] {
		return properties
	}
	w := jsontext.NewObjectWriter(make([]byte, 0, len(properties)+64))
	jsontext.Members(properties, func(key, value []byte) {
		for i, k := range personSetKeys {
			if (strip || sets.merged[i]) && jsontext.KeyIs(key, k) {
				return
			}
		}
		w.Member(key, value)
	})
	if !strip {
		for i, k := range personSetKeys {
			if sets.merged[i] {
				w.Member(strconv.AppendQuote(nil, k), sets.values[i])
			}
		}
	}
	return w.End()
}

var emptyObject = []byte("{}")
