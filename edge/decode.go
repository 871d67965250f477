package edge

import (
	"bytes"
	"cmp"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/bytedance/sonic"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/internal/jsontext"
	"github.com/hedge-analytics/hedge/warehouse"
)

// payloadJSON decodes capture payloads into typed structs (sonic compiles a decoder per
// type once; nothing is reflected per event). Field names match exactly, as in
// PostHog's serde structs, and invalid UTF-8 is replaced, because DuckDB refuses it.
// Decoded strings and raw messages alias the payload unless they had to be unescaped
// or repaired.
var payloadJSON = sonic.Config{CaseSensitive: true, ValidateString: true}.Froze()

// envelope is a JSON object payload: a batch ({api_key, batch: [...], ...}) or, when
// it has no "batch", a single event, so it carries the event's fields too.
type envelope struct {
	rawEvent
	Batch               sonic.NoCopyRawMessage `json:"batch"` // the array, walked by decodeEvents
	HistoricalMigration bool                   `json:"historical_migration"`
	SentAt              sonic.NoCopyRawMessage `json:"sent_at"`
}

// rawEvent is one event as SDKs send it (reference/sdk-wire.md). Its fields alias the
// payload.
type rawEvent struct {
	Event            string                 `json:"event"`
	DistinctID       sonic.NoCopyRawMessage `json:"distinct_id"`
	DollarDistinctID sonic.NoCopyRawMessage `json:"$distinct_id"`
	Properties       sonic.NoCopyRawMessage `json:"properties"`
	Timestamp        sonic.NoCopyRawMessage `json:"timestamp"`
	Offset           sonic.NoCopyRawMessage `json:"offset"`
	UUID             string                 `json:"uuid"`
	APIKey           string                 `json:"api_key"`
	Token            string                 `json:"token"`
	DollarToken      string                 `json:"$token"`
	Set              sonic.NoCopyRawMessage `json:"$set"`
	SetOnce          sonic.NoCopyRawMessage `json:"$set_once"`
	Unset            sonic.NoCopyRawMessage `json:"$unset"`
}

// rawProperties holds the keys of an event's properties that capture acts on. Every
// field is raw so that no value a client puts in its properties can fail the decode.
type rawProperties struct {
	DistinctID           sonic.NoCopyRawMessage `json:"distinct_id"`
	Token                sonic.NoCopyRawMessage `json:"token"`
	SurveyID             sonic.NoCopyRawMessage `json:"$survey_id"`
	IgnoreSentAt         sonic.NoCopyRawMessage `json:"$ignore_sent_at"`
	ProcessPersonProfile sonic.NoCopyRawMessage `json:"$process_person_profile"`
	Set                  sonic.NoCopyRawMessage `json:"$set"`
	SetOnce              sonic.NoCopyRawMessage `json:"$set_once"`
	Unset                sonic.NoCopyRawMessage `json:"$unset"`
	AnonDistinctID       sonic.NoCopyRawMessage `json:"$anon_distinct_id"`
	Alias                sonic.NoCopyRawMessage `json:"alias"`
	Groups               sonic.NoCopyRawMessage `json:"$groups"`
	GroupType            sonic.NoCopyRawMessage `json:"$group_type"`
	GroupKey             sonic.NoCopyRawMessage `json:"$group_key"`
	GroupSet             sonic.NoCopyRawMessage `json:"$group_set"`
}

// parsed is a decoded payload. It aliases the payload and is reused across requests.
type parsed struct {
	token      string // the envelope's api_key or token
	historical bool
	sentAt     time.Time // zero when the payload has none
	events     []rawEvent
	props      []rawProperties
}

// maxPooledEvents bounds the events a pooled request keeps room for: one huge batch
// must not pin its memory in the pool.
const maxPooledEvents = 16 << 10

func (p *parsed) reset() {
	events, props := p.events, p.props
	if cap(events) > maxPooledEvents {
		events, props = nil, nil
	}
	clear(events)
	clear(props)
	*p = parsed{events: events[:0], props: props[:0]}
}

// eventFootprint is the memory an event takes while its request is handled, besides
// its bytes: its decoded fields, its properties' and its row, twice for the slices'
// growth. Requests are charged for it in the in-flight budget as their events are
// decoded: a payload of empty objects ({},{},...) holds a hundred times its size.
const eventFootprint = 2 * int(unsafe.Sizeof(rawEvent{})+unsafe.Sizeof(rawProperties{})+unsafe.Sizeof(warehouse.Event{}))

// decode reads the three payload shapes PostHog accepts: a batch envelope, a bare
// array of events (older posthog-js), and a single event object. The memory its events
// take is charged to res.
func (p *parsed) decode(payload []byte, res *reservation) *captureError {
	text := jsontext.BytesToString(payload)
	switch payload[0] {
	case '[':
		// Validated whole, then walked.
		var array sonic.NoCopyRawMessage
		if err := payloadJSON.UnmarshalFromString(text, &array); err != nil {
			return errInvalidPayload("the body is not a JSON array of events")
		}
		if err := p.decodeEvents(array, res); err != nil {
			return err
		}
	case '{':
		var env envelope
		if err := payloadJSON.UnmarshalFromString(text, &env); err != nil {
			return errInvalidPayload("the body is not a JSON event or batch object")
		}
		p.token = cmp.Or(env.APIKey, env.Token)
		p.historical = env.HistoricalMigration
		p.sentAt, _ = parseTime(env.SentAt)
		switch {
		case len(env.Batch) == 0 || string(env.Batch) == "null":
			if len(payload) > maxEventSize {
				return errEventTooLarge
			}
			p.events = append(p.events, env.rawEvent)
		case env.Batch[0] != '[':
			return errInvalidPayload("batch must be a JSON array of events")
		default:
			if err := p.decodeEvents(env.Batch, res); err != nil {
				return err
			}
		}
	default:
		return errInvalidPayload("the body is not JSON")
	}
	p.props = append(p.props, make([]rawProperties, len(p.events))...)
	for i := range p.events {
		props := p.events[i].Properties
		switch {
		case len(props) == 0 || string(props) == "null":
		case props[0] != '{':
			return errInvalidPayload("properties of event " + strconv.Itoa(i) + " must be a JSON object")
		default:
			if err := payloadJSON.UnmarshalFromString(jsontext.BytesToString(props), &p.props[i]); err != nil {
				return errInvalidPayload("properties of event " + strconv.Itoa(i) + " are not valid")
			}
		}
	}
	return nil
}

// decodeEvents decodes the events of a JSON array that sonic has validated, charging
// res for their footprint as it goes, so that a payload of many tiny events is refused
// before it takes more memory than the budget holds.
func (p *parsed) decodeEvents(array []byte, res *reservation) *captureError {
	i := jsontext.SkipSpace(array, 1)
	for n := 0; i < len(array) && array[i] != ']'; n++ {
		if err := res.chargeWithin(eventFootprint); err != nil {
			return readError(err)
		}
		start := i
		i = jsontext.SkipValue(array, i)
		if i-start > maxEventSize {
			return errEventTooLarge
		}
		p.events = append(p.events, rawEvent{})
		if err := payloadJSON.UnmarshalFromString(jsontext.BytesToString(array[start:i]), &p.events[len(p.events)-1]); err != nil {
			return errInvalidPayload("event " + strconv.Itoa(n) + " is not a valid event object")
		}
		if i = jsontext.SkipSpace(array, i); i < len(array) && array[i] == ',' {
			i = jsontext.SkipSpace(array, i+1)
		}
	}
	return nil
}

// resolveToken finds the project token: the envelope's, else the first an event
// carries (api_key, token, $token, then properties.token). Every token an event
// carries must be that one, so that no event lands in a project it does not name.
func (p *parsed) resolveToken() (string, *captureError) {
	token := p.token
	for i := range p.events {
		e := &p.events[i]
		own := cmp.Or(e.APIKey, e.Token, e.DollarToken, jsontext.String(p.props[i].Token))
		switch {
		case own == "":
		case token == "":
			token = own
		case own != token:
			return "", errInconsistentTokens
		}
	}
	switch {
	case token == "":
		return "", errMissingAPIKey
	case strings.HasPrefix(token, "phx_"):
		return "", errPersonalAPIKey
	}
	return token, nil
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

// maxGroupKeyLength is PostHog's limit on a $groupidentify's $group_key, in characters.
const maxGroupKeyLength = 400

// skipReason says why an event must be skipped while the rest of its request is
// ingested (spec, Errors 3 and rule 9; reference §9.2), or "" to keep it.
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

// maxDistinctIDLength is PostHog's cap; longer ids are cut, not refused.
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
			return truncateChars(replaceNUL(id), maxDistinctIDLength)
		}
	}
	return ""
}

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
// wrong and replaced with now (reference §8.7).
const maxFutureSkew = 23 * time.Hour

// eventTime applies PostHog's timestamp rules (reference §8.7): offset (milliseconds
// before now) wins; else the timestamp, shifted by the client's clock skew when the
// payload says when it was sent (sent_at) and the event does not opt out
// ($ignore_sent_at); else now. A time more than 23 h ahead becomes now.
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

// personSets holds an event's $set, $set_once and $unset as the identity model must
// apply them: the properties' ones with the event's top-level ones merged in, the top
// level winning (reference §9.1): objects key by key, $unset lists one after the other.
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

// replaceNUL replaces NUL characters, as PostHog does for ids and names.
func replaceNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
