package warehouse

import (
	"fmt"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/google/uuid"
)

// The table person_overrides (migration 0017) says which person the events of an old
// person id count for now. The Writer alone writes it: the overrides of each commit in
// the commit's transaction (flushOverrides), and from time to time it folds them into
// the events they are about and empties the table (squash), as PostHog squashes its
// person overrides, so that the join the queries make on it stays empty for projects
// whose persons merge every day.

var (
	squashesTotal     = metrics.NewCounter(`hedge_writer_person_override_squashes_total`)
	squashedOverrides = metrics.NewCounter(`hedge_writer_person_overrides_squashed_total`)
	// How long each squash stopped the commits.
	squashDuration = metrics.NewHistogram(`hedge_writer_person_override_squash_duration_seconds`)
)

// insertOverridesSQL writes person overrides given as parallel lists of projects ($1),
// old person ids ($2, each once) and person ids ($3); an old id already written is
// pointed at the new person.
const insertOverridesSQL = `INSERT INTO person_overrides
	SELECT unnest($1::BIGINT[]), unnest($2::VARCHAR[])::UUID, unnest($3::VARCHAR[])::UUID
	ON CONFLICT (team_id, old_person_id) DO UPDATE SET person_id = excluded.person_id`

// repointOverridesSQL points the overrides of merged persons at the persons they were
// merged into, given as parallel lists of projects ($1), merged persons ($2, each once)
// and persons ($3).
const repointOverridesSQL = `UPDATE person_overrides SET person_id = m.person_id
	FROM (SELECT unnest($1::BIGINT[]) AS team_id, unnest($2::VARCHAR[])::UUID AS merged_id, unnest($3::VARCHAR[])::UUID AS person_id) m
	WHERE person_overrides.team_id = m.team_id AND person_overrides.person_id = m.merged_id`

// flushOverrides writes the person overrides of the commit: the events that carry a
// person id other than their distinct id's person now are counted for the latter
// through person_overrides (queries read nothing else of the mapping). Events carry
// the person their distinct id had when they were written, or, when it had none,
// personIDFor(the id), so after this commit two kinds of id differ:
//
//   - a person merged away: its events, and those of every old id that pointed at it,
//     belong to the person it ended up merged into;
//   - personIDFor(k) for a distinct id k that had no person before and has one now that
//     is not the person created for it (an identify or alias into a known person, the
//     second id of a merge of two unknown ones): k's events sent without a person.
//
// The first are delta.merged, the second delta.adopted (give). An old id is never a
// person's id again (a person's id is personIDFor of a distinct id that had no person,
// and that id has one now), and no event written after its row carries it, so a row
// stays right until the squash folds it into the events. Commits without merges or
// identifies of new ids write nothing here.
func (x *identity) flushOverrides(exec func(query string, args ...any) error) error {
	if len(x.delta.merged) == 0 && len(x.delta.adopted) == 0 {
		return nil
	}
	final := func(id uuid.UUID) uuid.UUID {
		for m, ok := x.delta.merged[id]; ok; m, ok = x.delta.merged[id] {
			id = m.into
		}
		return id
	}
	overrides := make(map[overrideKey]uuid.UUID, len(x.delta.merged)+len(x.delta.adopted))
	for from, m := range x.delta.merged {
		overrides[overrideKey{m.team, from}] = final(m.into)
	}
	if len(overrides) > 0 {
		// The rows that pointed at a person merged away point at its survivor: the
		// merged persons are the overrides so far.
		teams, merged, persons := overrideLists(overrides)
		if err := exec(repointOverridesSQL, teams, merged, persons); err != nil {
			return fmt.Errorf("cannot point the overrides of %d merged persons at their survivors: %w", len(overrides), err)
		}
	}
	for k, id := range x.delta.adopted {
		overrides[k] = final(id)
	}
	teams, olds, persons := overrideLists(overrides)
	if err := exec(insertOverridesSQL, teams, olds, persons); err != nil {
		return fmt.Errorf("cannot write %d person overrides: %w", len(overrides), err)
	}
	return nil
}

// overrideLists are overrides as parallel lists of projects, old person ids and person
// ids, as the statements above take them.
func overrideLists(overrides map[overrideKey]uuid.UUID) (teams []int64, olds, persons []string) {
	teams, olds, persons = make([]int64, 0, len(overrides)), make([]string, 0, len(overrides)), make([]string, 0, len(overrides))
	for k, id := range overrides {
		teams, olds, persons = append(teams, k.team), append(olds, k.old.String()), append(persons, id.String())
	}
	return teams, olds, persons
}

// squashDue reports whether the Writer should squash the person overrides now: at most
// once each SquashInterval, whether it found any or not, and never with the lake.
func (w *Writer) squashDue() bool {
	// The parts of the lake are never changed: their events keep the person they were
	// stored with, and the overrides stay, which queries read (Queries.views).
	return w.lake == nil && time.Since(w.lastSquash) >= w.cfg.SquashInterval
}

// squash folds the person overrides into the events: each event of an old person id
// gets its person now, and the table is emptied, in one transaction between two
// commits, which wait for it. Its cost is a scan of the events' team_id and person_id
// and the rows it changes (ten million events: 0.1 s to change 3,000 of them with the
// columns in memory, 0.6 s read from disk; 3.6 s to change 2 million). Queries see the
// events before or after it, each whole. A failure is logged and tried again after
// the next SquashInterval; the overrides stay right meanwhile. It changes person_id
// only, which the backfills' chunks (of other columns of the same rows) do not
// conflict with.
func (w *Writer) squash() {
	start := time.Now()
	w.lastSquash = start
	n, err := w.squashOverrides()
	if err != nil {
		w.log.Warn("person overrides not squashed; tried again later", "err", err)
		return
	}
	if n == 0 {
		return
	}
	squashesTotal.Inc()
	squashedOverrides.Add(n)
	squashDuration.UpdateDuration(start)
	w.log.Info("person overrides squashed into the events", "overrides", n, "took", time.Since(start))
}

// squashOverrides runs the squash's transaction and returns the overrides it folded.
// Only the Writer writes the table, so what it reads first on another connection is
// what the transaction finds. The projects whose events it changed get a new data
// version: their events' own person_id (which HogQL reads) changed, and a result
// cached before must not be served as current.
func (w *Writer) squashOverrides() (n int, err error) {
	teams, err := w.overriddenTeams()
	if err != nil || len(teams) == 0 {
		return 0, err
	}
	if err := w.exec("BEGIN TRANSACTION"); err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			if rbErr := w.exec("ROLLBACK"); rbErr != nil {
				w.log.Error("cannot roll back a failed squash", "err", rbErr)
			}
		}
	}()
	if err := w.exec(`UPDATE events SET person_id = o.person_id FROM person_overrides o
		WHERE events.team_id = o.team_id AND events.person_id = o.old_person_id`); err != nil {
		return 0, err
	}
	if err := w.exec(`DELETE FROM person_overrides`); err != nil {
		return 0, err
	}
	if err := w.exec("COMMIT"); err != nil {
		return 0, err
	}
	for team, overrides := range teams {
		w.versions.bump(team)
		n += overrides
	}
	return n, nil
}

// overriddenTeams are the projects that have person overrides, and how many each.
func (w *Writer) overriddenTeams() (map[int64]int, error) {
	rows, err := w.identity.db.Query(`SELECT team_id, count(*) FROM person_overrides GROUP BY team_id`)
	if err != nil {
		return nil, fmt.Errorf("cannot count the person overrides: %w", err)
	}
	defer rows.Close()
	teams := map[int64]int{}
	for rows.Next() {
		var team int64
		var n int
		if err := rows.Scan(&team, &n); err != nil {
			return nil, fmt.Errorf("cannot count the person overrides: %w", err)
		}
		teams[team] = n
	}
	return teams, rows.Err()
}
