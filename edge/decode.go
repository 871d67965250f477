package edge

import (
	"cmp"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/bytedance/sonic"

	"github.com/hedge-analytics/hedge/internal/jsontext"
	"github.com/hedge-analytics/hedge/warehouse"
)

// Decoding a payload: its JSON into typed events, and the project token they name.

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

// rawEvent is one event as SDKs send it. Its fields alias the payload.
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
