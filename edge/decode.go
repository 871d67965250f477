package edge

import (
	"bytes"
	"time"
	"unsafe"

	"github.com/bytedance/sonic"
	"github.com/google/uuid"

	"github.com/hedge-analytics/hedge/warehouse"
)

// jsonAPI decodes capture bodies into typed structs (sonic compiles a decoder per type
// once; nothing is reflected per event). Field names match exactly, as in PostHog's
// serde structs, and invalid UTF-8 is replaced, because DuckDB refuses it. Decoded
// strings and raw messages alias the body unless they had to be unescaped or repaired.
var jsonAPI = sonic.Config{CaseSensitive: true, ValidateString: true}.Froze()

// rawEvent is one event as an SDK sends it. Its fields alias the request body and die
// with it.
type rawEvent struct {
	Event      string                 `json:"event"`
	DistinctID sonic.NoCopyRawMessage `json:"distinct_id"`
	Properties sonic.NoCopyRawMessage `json:"properties"`
	Timestamp  sonic.NoCopyRawMessage `json:"timestamp"`
	UUID       string                 `json:"uuid"`
	APIKey     string                 `json:"api_key"`
	Token      string                 `json:"token"`
}

// maxDistinctIDLength is PostHog's cap; longer ids are cut, not refused.
const maxDistinctIDLength = 200

// maxFutureSkew: a timestamp further ahead of the server clock than this is taken to be
// wrong and replaced with now (reference §8.7).
const maxFutureSkew = 23 * time.Hour

// decodeEvent decodes a single-event body into e.
func decodeEvent(body []byte, e *rawEvent) *captureError {
	if err := jsonAPI.UnmarshalFromString(bytesToString(body), e); err != nil {
		return errInvalidPayload("the body is not a JSON event object")
	}
	return nil
}

// normalize turns a decoded event into a warehouse row for team. keep is false for an
// event that must be skipped while the rest of the request succeeds: no name, or no
// distinct_id (spec, Errors 3).
func normalize(raw *rawEvent, team int64, now time.Time, out *warehouse.Event) (keep bool, err *captureError) {
	if raw.Event == "" {
		return false, nil
	}
	distinctID := distinctIDText(raw.DistinctID)
	if distinctID == "" {
		return false, nil
	}
	properties := raw.Properties
	switch {
	case len(properties) == 0 || string(properties) == "null":
		properties = emptyObject
	case properties[0] != '{':
		return false, errInvalidPayload("properties must be a JSON object")
	}
	id := uuid.Nil
	if raw.UUID != "" {
		parsed, parseErr := uuid.Parse(raw.UUID)
		if parseErr != nil {
			return false, errInvalidPayload("uuid is not a valid UUID")
		}
		id = parsed
	}
	if id == uuid.Nil {
		id = uuid.Must(uuid.NewV7())
	}
	*out = warehouse.Event{
		UUID:       id,
		TeamID:     team,
		Name:       raw.Event,
		DistinctID: distinctID,
		Timestamp:  eventTime(raw.Timestamp, now),
		Properties: bytesToString(properties),
	}
	return true, nil
}

var emptyObject = []byte("{}")

// distinctIDText is the distinct_id as text: a JSON string unquoted, a number as
// written; null, empty, and other JSON values give "". It is cut to
// maxDistinctIDLength characters.
func distinctIDText(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	switch c := raw[0]; {
	case c == '"':
		if bytes.IndexByte(raw, '\\') < 0 {
			s = bytesToString(raw[1 : len(raw)-1])
		} else if err := jsonAPI.UnmarshalFromString(bytesToString(raw), &s); err != nil {
			return ""
		}
	case c == '-' || (c >= '0' && c <= '9'):
		s = bytesToString(raw)
	default:
		return ""
	}
	if len(s) > maxDistinctIDLength { // only then can it have more characters
		n := 0
		for i := range s {
			if n == maxDistinctIDLength {
				return s[:i]
			}
			n++
		}
	}
	return s
}

// eventTime is the event's timestamp, or now when it has none or one that does not
// parse; a time more than maxFutureSkew ahead of now is replaced with now.
func eventTime(raw []byte, now time.Time) time.Time {
	if len(raw) < 2 || raw[0] != '"' {
		return now
	}
	t, err := time.Parse(time.RFC3339Nano, bytesToString(raw[1:len(raw)-1]))
	if err != nil || t.Sub(now) > maxFutureSkew {
		return now
	}
	return t.UTC()
}

// bytesToString views b as a string without copying; b must not change while the
// string is in use.
func bytesToString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
