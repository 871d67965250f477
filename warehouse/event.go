package warehouse

import (
	"time"

	"github.com/google/uuid"
)

// Event is one row of the events table as the edge hands it to the Writer.
//
// Its strings may alias the submitter's request buffer: DuckDB copies them while
// appending, and Submit returns only after the Writer is done with the events, so the
// buffer must stay untouched until Submit returns and is free to reuse afterwards.
type Event struct {
	UUID       uuid.UUID
	TeamID     int64
	Name       string
	DistinctID string
	Timestamp  time.Time
	// Properties is the JSON object text of the event's properties.
	Properties string
}

// Lane is the ingestion lane an event was committed through; it is stored with the
// event so that lane ordering can be checked after the fact.
type Lane uint8

// LaneRealtime carries the events that SDKs send as they happen.
const LaneRealtime Lane = iota

func (l Lane) String() string {
	switch l {
	case LaneRealtime:
		return "realtime"
	}
	return "unknown"
}
