-- 0017: person overrides. An event keeps the person it was ingested for (person_id):
-- the person its distinct id had then, or, for an id that had none, the id that a
-- person created for it would get. A query counts events by their person now, which
-- differs only when a person was merged into another, or when an id that had none was
-- given an existing person (an identify of an anonymous id by a known user). This
-- table holds those differences: the events whose person_id is old_person_id belong
-- to person_id now. Queries read it instead of joining every event's distinct id to
-- person_distinct_ids (a join on a UUID to a table that is empty in a project without
-- merges, where person_distinct_ids has a row for each distinct id).
--
-- Written by the event writer in the same transaction as the distinct ids it changes
-- (warehouse/identity.go, its owner). Old ids never chain: a merge points the rows
-- that pointed at the merged person at its survivor.
CREATE TABLE person_overrides (
    team_id       BIGINT NOT NULL,
    old_person_id UUID   NOT NULL,
    person_id     UUID   NOT NULL,
    PRIMARY KEY (team_id, old_person_id)
);

-- The overrides of the events stored before this migration: each person_id that
-- some event carries and that its distinct id's person differs from. Each such id has
-- one person now (the writer gives an id the person of its distinct id, and a merge
-- moves all of a person's ids); any_value keeps one should a file hold otherwise.
INSERT INTO person_overrides
SELECT e.team_id, e.person_id, any_value(d.person_id)
FROM events e JOIN person_distinct_ids d ON d.team_id = e.team_id AND d.distinct_id = e.distinct_id
WHERE e.person_id IS NOT NULL AND e.person_id <> d.person_id
GROUP BY e.team_id, e.person_id;

-- Events that carry no person (none written since 0004) take their distinct id's.
UPDATE events SET person_id = d.person_id
FROM person_distinct_ids d
WHERE events.person_id IS NULL AND d.team_id = events.team_id AND d.distinct_id = events.distinct_id;
