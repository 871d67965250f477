-- 0018: how far the events of each partition of the event log are applied. The log's
-- consumer hands each message's events to the event writer with the message's stream
-- sequence; the writer records the greatest sequence of each partition in the same
-- transaction as the events (warehouse/writer.go, its owner), so that after a crash
-- the consumer resumes right after the recorded sequence: each message applied once.
-- A sequence only grows: a commit never moves a partition's back.
CREATE TABLE meta.log_positions (
    partition_id BIGINT  PRIMARY KEY,
    sequence     UBIGINT NOT NULL
);
