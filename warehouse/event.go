package warehouse

import (
	"time"

	"github.com/google/uuid"
)

// The events that ask something of the identity model, by PostHog's names.
const (
	// EventIdentify merges its $anon_distinct_id into the person of its distinct_id.
	EventIdentify = "$identify"
	// EventCreateAlias merges its distinct_id into the person of its alias.
	EventCreateAlias = "$create_alias"
	// EventMergeDangerously merges like EventCreateAlias, even an identified person.
	EventMergeDangerously = "$merge_dangerously"
	// EventGroupIdentify creates or updates the group of its $group_type and $group_key.
	EventGroupIdentify = "$groupidentify"
)

// Event is one row of the events table as the edge hands it to the Writer.
//
// Its strings may alias the submitter's request buffers: DuckDB copies them while
// appending, and Submit returns only after the Writer is done with the events, so the
// buffers must stay untouched until Submit returns and are free to reuse afterwards.
type Event struct {
	UUID       uuid.UUID
	TeamID     int64
	Name       string
	DistinctID string
	Timestamp  time.Time
	// Properties is the JSON object text of the event's properties.
	Properties string

	// What the event asks of the identity model, taken out of its properties by the
	// edge (raw JSON text, "" when absent), so that the writer parses nothing else.
	//
	// Personless is $process_person_profile: false: no person is created or changed.
	Personless bool
	// Set and SetOnce are JSON objects, Unset a JSON array of keys (or an object whose
	// keys are meant), with the event's top-level ones already merged in.
	Set, SetOnce, Unset string
	// AnonDistinctID is the $identify's $anon_distinct_id; Alias the other id of a
	// $create_alias or $merge_dangerously.
	AnonDistinctID, Alias string
	// Groups is the $groups object: group type to group key.
	Groups string
	// GroupType, GroupKey and GroupSet (a JSON object) are those of a $groupidentify.
	GroupType, GroupKey, GroupSet string
}

// Warning is one row of ingestion_warnings: an event that was skipped, or kept with a
// problem, and why. Its strings follow the same aliasing contract as Event's.
type Warning struct {
	TeamID     int64
	Time       time.Time
	Type       string
	Event      string
	DistinctID string
	// Details is a JSON object with more context, or "" for none.
	Details string
}

// Lane is the queue an event goes through to the Writer; it is stored with the event.
// Each lane is committed in the order it was received.
type Lane uint8

const (
	// LaneRealtime carries the events that SDKs send as they happen.
	LaneRealtime Lane = iota
	// LaneHistorical carries historical_migration batches: replayed strictly in the
	// order received, never diverted to overflow.
	LaneHistorical
	// LaneOverflow carries realtime events of a distinct_id that sends faster than its
	// rate allows: committed after the realtime events of each group, never dropped.
	LaneOverflow
	laneCount
)

var laneNames = [laneCount]string{"realtime", "historical", "overflow"}

func (l Lane) String() string {
	if l < laneCount {
		return laneNames[l]
	}
	return "unknown"
}

// LogPosition is a message of the event log: its partition and its stream sequence,
// which grows within a partition. Sequence 0 is no position.
type LogPosition struct {
	Partition int
	Sequence  uint64
}

// Batch is what one request submits to one lane: its events and the warnings about the
// events it skipped, committed together.
type Batch struct {
	Lane     Lane
	Events   []Event
	Warnings []Warning
	// Position is the log message the batch came from, or none (a request of the edge).
	// The Writer records it with the batch's commit, in the same transaction: the
	// commit that stores the batch's last rows, and only if all of its rows are stored
	// (see Warehouse.LogPositions). A batch with a position and no rows (a message that
	// could not be applied) is committed too, for its position.
	Position LogPosition
	// Duplicates is set by the Writer: how many of Events it skipped because their
	// project had stored their uuid already (see recentEvents). Valid once Submit has
	// returned nil.
	Duplicates int
}

func (b *Batch) rows() int { return len(b.Events) + len(b.Warnings) }

// queuedRows is what b takes of the Writer's queue budget (MaxQueuedRows): its rows, or
// one for a batch with a position and no rows, which still takes a place in its lane;
// 0 for a batch that does not go to the Writer at all.
func (b *Batch) queuedRows() int {
	if n := b.rows(); n > 0 || b.Position.Sequence == 0 {
		return n
	}
	return 1
}

// team is the project of the batch's rows (a batch is one request's, so one project's).
func (b *Batch) team() int64 {
	if len(b.Events) > 0 {
		return b.Events[0].TeamID
	}
	if len(b.Warnings) > 0 {
		return b.Warnings[0].TeamID
	}
	return 0
}

// Reset empties b for reuse, dropping its references to request memory.
func (b *Batch) Reset() {
	clear(b.Events)
	clear(b.Warnings)
	b.Events, b.Warnings = b.Events[:0], b.Warnings[:0]
	b.Duplicates = 0
	b.Position = LogPosition{}
}
