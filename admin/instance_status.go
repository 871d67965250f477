package admin

import (
	"time"

	"github.com/gofiber/fiber/v2"
)

// EventLogStatus is what GET /api/instance_status/ says of the event log: how events
// reach the warehouse, and how far behind it is.
type EventLogStatus struct {
	// Mode is "jetstream" (the log on one node) or "cluster" (replicated on Nodes).
	Mode     string
	Replicas int
	// Partitions' backlogs, in partition order.
	Partitions  []PartitionBacklog
	DeadLetters uint64
}

// PartitionBacklog is one partition's messages in the log that the warehouse has not
// applied, and how long ago the last one it applied entered the log (0 when none
// waits).
type PartitionBacklog struct {
	Partition int
	Messages  int64
	Behind    time.Duration
}

func (a *API) bindInstanceStatus() {
	a.handle(fiber.MethodGet, "/instance_status/", "user:read", a.instanceStatus)
}

// instanceStatusItem is one line of the overview, PostHog's shape.
type instanceStatusItem struct {
	Key    string `json:"key"`
	Metric string `json:"metric"`
	Value  any    `json:"value"`
}

type partitionRecord struct {
	Partition       int     `json:"partition"`
	BacklogMessages int64   `json:"backlog_messages"`
	BehindSeconds   float64 `json:"behind_seconds"`
}

// storageRecord is where the events live: "table", or "lake" with what it holds.
type storageRecord struct {
	Kind              string `json:"kind"`
	Parts             int64  `json:"parts,omitempty"`
	Bytes             int64  `json:"bytes,omitempty"`
	Events            int64  `json:"events,omitempty"`
	QuarantinedParts  int64  `json:"quarantined_parts"`
	QuarantinedEvents int64  `json:"quarantined_events"`
}

type eventLogRecord struct {
	Mode        string            `json:"mode"`
	Replicas    int               `json:"replicas"`
	Partitions  []partitionRecord `json:"partitions"`
	DeadLetters uint64            `json:"dead_letters"`
}

// GET /api/instance_status/ (user:read): the instance's ingestion, as PostHog's
// instance status answers {"results": {"overview": [{key, metric, value}]}}, with
// hedge's event_log beside it (null on the direct path) and storage (the lake's parts
// and the ones it set aside as unreadable, with --storage lake). PostHog shows it to staff
// users; hedge has none, and what it says (a version, backlogs of all projects
// together) names no project's data, so every signed-in user and key may read it.
func (a *API) instanceStatus(c *fiber.Ctx) error {
	var log *EventLogStatus
	if a.eventLog != nil {
		log = a.eventLog()
	}
	path := "direct"
	if log != nil {
		path = log.Mode
	}
	overview := []instanceStatusItem{
		{Key: "hedge_version", Metric: "hedge version", Value: a.version},
		{Key: "event_path", Metric: "How events reach the warehouse", Value: path},
	}
	var record *eventLogRecord
	if log != nil {
		record = &eventLogRecord{Mode: log.Mode, Replicas: log.Replicas, DeadLetters: log.DeadLetters, Partitions: []partitionRecord{}}
		var messages int64
		var behind time.Duration
		for _, p := range log.Partitions {
			record.Partitions = append(record.Partitions, partitionRecord{Partition: p.Partition, BacklogMessages: p.Messages, BehindSeconds: p.Behind.Seconds()})
			messages += p.Messages
			behind = max(behind, p.Behind)
		}
		overview = append(overview,
			instanceStatusItem{Key: "log_backlog_messages", Metric: "Messages in the event log not yet applied", Value: messages},
			instanceStatusItem{Key: "log_behind_seconds", Metric: "Seconds the warehouse is behind the event log", Value: behind.Seconds()},
			instanceStatusItem{Key: "log_dead_letters", Metric: "Messages the warehouse could not apply (dead letters)", Value: log.DeadLetters})
	}
	storage := &storageRecord{Kind: "table"}
	lake, err := a.warehouse.Lake(c.Context())
	if err != nil {
		return err
	}
	if lake != nil {
		storage = &storageRecord{Kind: "lake", Parts: lake.Parts, Bytes: lake.Bytes, Events: lake.Events,
			QuarantinedParts: lake.QuarantinedParts, QuarantinedEvents: lake.QuarantinedEvents}
		overview = append(overview,
			instanceStatusItem{Key: "lake_parts", Metric: "Parquet parts of the events in the lake", Value: lake.Parts},
			instanceStatusItem{Key: "lake_quarantined_parts", Metric: "Parts of the lake set aside as unreadable", Value: lake.QuarantinedParts})
	}
	return c.JSON(fiber.Map{"results": fiber.Map{"overview": overview, "event_log": record, "storage": storage}})
}
