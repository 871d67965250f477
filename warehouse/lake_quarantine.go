package warehouse

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
)

// A part that cannot be read (a file damaged on disk, cut short, or replaced by
// something else) would fail every query of its project. So when a query or a merge
// fails naming a part, the part is read whole on its own (verify), and if that fails
// too, it is quarantined: taken out of the catalog and listed in meta.lake_quarantine
// in one transaction, its file moved to <lake>/_quarantine/, an error logged and
// counted (hedge_lake_quarantined_parts_total). Its events are missing from the
// answers from then on, which the log and the metric say; the query is run again
// once. The file is kept for an operator, who may restore it by hand.

var lakeQuarantined = metrics.NewCounter(`hedge_lake_quarantined_parts_total`)

// quarantineDir is the lake directory's directory of quarantined parts.
const quarantineDir = "_quarantine"

// errPartQuarantined is a query's failure on a part that is now quarantined: run
// again, the query reads the parts left (Queries.run does, once).
var errPartQuarantined = &QueryError{Detail: "a file of the project's events could not be read and was set aside (the server's log says which): run the query again"}

// failedPart is the part of l that err names, "" for none.
func (l *lake) failedPart(err error) string {
	m := l.partPattern.FindString(err.Error())
	if m == "" {
		return ""
	}
	rel, relErr := filepath.Rel(l.root, m)
	if relErr != nil {
		return ""
	}
	return filepath.ToSlash(rel)
}

// partPattern matches the path of a part of the lake at root in an error's text.
func partPattern(root string) *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta(root+string(filepath.Separator)) + `[^'"\s]+?\.parquet`)
}

// quarantineIfDamaged quarantines the part that err (a query's, or a merge's) names,
// if reading it alone fails; it reports whether the query may run again: it did, or
// (with a bucket) the part's copy was damaged and is downloaded again.
func (l *lake) quarantineIfDamaged(ctx context.Context, err error) bool {
	rel := l.failedPart(err)
	if rel == "" {
		return false
	}
	var part *lakePart
	for _, p := range l.allParts() {
		if p.Path == rel {
			part = &p
			break
		}
	}
	if part == nil {
		return false // replaced since, or not the lake's
	}
	// With a bucket, the copy in the directory is downloaded again first: it, and not
	// the part, may be what is damaged.
	if l.remote != nil {
		if err := l.fetch(ctx, *part, time.Now(), true); err != nil {
			l.log.Error("cannot download a part of the lake that failed to read", "path", rel, "err", err)
			return false
		}
	}
	// Every column read, not only the footer that count(*) needs.
	verifyErr := l.db.QueryRowContext(ctx, `SELECT count(COLUMNS(*)) FROM `+l.readParts([]lakePart{*part})).Scan(new(any))
	if verifyErr == nil && l.remote != nil {
		return true // the copy was damaged: the query runs again on the new one
	}
	if verifyErr == nil || ctx.Err() != nil {
		return false
	}
	if err := l.quarantine(ctx, *part, verifyErr); err != nil {
		l.log.Error("cannot quarantine a damaged part of the lake", "path", rel, "err", err)
		return false
	}
	return true
}

// quarantine takes part out of the catalog and moves its file aside.
func (l *lake) quarantine(ctx context.Context, part lakePart, cause error) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	deleted, err := tx.ExecContext(ctx, `DELETE FROM meta.lake_parts WHERE path = ?`, part.Path)
	if err != nil {
		return err
	}
	if n, err := deleted.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("the catalog no longer holds it (%v)", err)
	}
	reason := strings.ReplaceAll(cause.Error(), l.root+string(filepath.Separator), "")
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta.lake_quarantine VALUES (?, ?, ?, ?, ?)`,
		part.Path, part.Team, part.Rows, reason, time.Now()); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	l.change(map[string]bool{part.Path: true}, nil)
	lakeQuarantined.Inc()
	if l.remote != nil { // the object stays in the bucket, for the operator
		l.remote.uncache([]string{part.Path})
	}
	aside := filepath.Join(l.root, quarantineDir, strings.ReplaceAll(part.Path, "/", "_"))
	moveErr := os.MkdirAll(filepath.Dir(aside), 0o700)
	if moveErr == nil {
		moveErr = os.Rename(l.abs(part.Path), aside)
	}
	l.log.Error("a part of the lake cannot be read: quarantined, its events are missing from the answers",
		"project", part.Team, "path", part.Path, "rows", part.Rows, "moved_to", aside, "move_err", moveErr, "err", reason)
	return nil
}

// LakeStatus is what the lake holds: its current parts, their bytes and events, and
// the parts quarantined and their events.
type LakeStatus struct {
	Parts, Bytes, Events                int64
	QuarantinedParts, QuarantinedEvents int64
}

// Lake is the lake's status, nil when the events go to the events table.
func (w *Warehouse) Lake(ctx context.Context) (*LakeStatus, error) {
	if w.lake == nil {
		return nil, nil
	}
	s := &LakeStatus{}
	for _, p := range w.lake.allParts() {
		s.Parts, s.Bytes, s.Events = s.Parts+1, s.Bytes+p.Bytes, s.Events+p.Rows
	}
	err := w.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(rows), 0) FROM meta.lake_quarantine`).Scan(&s.QuarantinedParts, &s.QuarantinedEvents)
	if err != nil {
		return nil, fmt.Errorf("cannot read the lake's quarantine: %w", err)
	}
	return s, nil
}
