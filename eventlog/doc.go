// Package eventlog is the log between the edge and the warehouse: an embedded NATS
// JetStream node whose streams hold every accepted event before the edge answers 200
// (Publisher), and the consumer that applies them to the warehouse in order, exactly
// once (Consumer).
//
// Layout. The events are partitioned by a hash of (project, distinct_id), as PostHog
// keys its Kafka topic, so one person's events stay in order. Each partition p is a
// stream EV_<p> with a subject per lane (ev.<p>.rt, ev.<p>.hist, ev.<p>.ovf), so that
// the lanes stay apart: an overflowing distinct id never delays the realtime lane. A
// message holds the events of one request for one partition and lane (codec.go), at
// most about MessageBytes, with a Nats-Msg-Id made of the request's id, partition,
// lane and chunk, so that the Publisher's own re-send of a message is stored once.
//
// Durability. The node fsyncs every message before it acknowledges it (JetStream's
// sync_interval: always; the default, lazy fsync loses acknowledged writes on power
// loss), and the Publisher returns only when every message of a request is
// acknowledged, so a 200 means the events are on disk in the log.
//
// Exactly once into the warehouse. The Consumer reads each (partition, lane) from the
// stream sequence after the one the warehouse recorded for it, and the Writer records
// each message's sequence in the same transaction as its events
// (warehouse.LogPosition): a crash anywhere replays from the recorded sequence, so no
// message is applied twice or skipped. Applied messages are purged from the log, whose
// size is bounded (Config.MaxBytes, MaxAge): a full log refuses publishes, which the
// edge answers 503 with Retry-After. A message the warehouse cannot apply goes to the
// dead-letter stream, counted and logged, and its position is recorded past it.
package eventlog
