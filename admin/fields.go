package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// optional is a field of a request body that tells apart "not sent", "sent as null"
// and a value: PATCH changes only what was sent, and null clears a nullable field.
// A value of the wrong type is reported by bindBody with the field's name.
type optional[T any] struct {
	Set   bool // the field was in the body
	Null  bool // and it was null
	Value T
}

func (o *optional[T]) UnmarshalJSON(b []byte) error {
	o.Set = true
	if bytes.Equal(b, []byte("null")) {
		o.Null = true
		return nil
	}
	err := json.Unmarshal(b, &o.Value)
	// The error's Offset counts in b: read its number here, while b is at hand.
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		withNumber(typeErr, b)
	}
	return err
}

// rawJSON is a VARCHAR column holding JSON text, or NULL: it scans the text and
// marshals as that JSON, or as null.
type rawJSON []byte

func (j *rawJSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case string:
		*j = rawJSON(v)
	case []byte:
		*j = append(rawJSON(nil), v...)
	default:
		return fmt.Errorf("cannot scan %T into a JSON text column", src)
	}
	return nil
}

// UnmarshalJSON keeps any JSON value of a request field (null clears it); the
// field's validation checks its kind.
func (j *rawJSON) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		*j = nil
		return nil
	}
	*j = append(rawJSON(nil), b...)
	return nil
}

func (j rawJSON) MarshalJSON() ([]byte, error) {
	if len(j) == 0 {
		return []byte("null"), nil
	}
	return j, nil
}

// utcTime is a nullable timestamp column, rendered in UTC with the Z suffix, as every
// timestamp of the API is, or as null.
func utcTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// mustJSON encodes a value built by this package (never user input of unknown shape),
// for a JSON text column.
func mustJSON(v any) string {
	text, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("BUG: cannot encode %T: %v", v, err))
	}
	return string(text)
}
