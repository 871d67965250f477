-- 0020: the members of static cohorts, as the distinct ids a CSV upload listed. The
-- cohort itself is a row of meta.cohorts (the flags package's); its members are
-- person data, kept and read beside persons by the warehouse (warehouse/cohorts.go,
-- its owner), so that queries filter events by them in one SQL statement.
--
-- A member is a distinct id, not a person id: a cohort's persons are the persons those
-- ids belong to now (person_distinct_ids), which follows merges (a merged-away person
-- id leaves no trace once the writer squashes its overrides), and an id that no event
-- has named yet joins the cohort's persons when its first event comes.
CREATE TABLE cohort_people (
    team_id     BIGINT  NOT NULL,
    cohort_id   BIGINT  NOT NULL,
    distinct_id VARCHAR NOT NULL,
    PRIMARY KEY (team_id, cohort_id, distinct_id)
);
