package warehouse

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// MoveToLake moves the rows of the events table into parts of the lake, one part per
// project and day (of their timestamps, UTC), each in one transaction that registers
// the part and deletes its rows: a query reads every event once whether it ran before
// or after, and a crash leaves each day in the table or in the lake. It is for a
// warehouse that no query reads meanwhile (hedge lake move, with hedge stopped): a
// query of the running hedge reads the catalog and the table at two moments, and a
// move between them would hide a day from it. It waits for the backfills of the
// table's columns, which the parts copy; progress, when set, is told of each part.
func (w *Warehouse) MoveToLake(ctx context.Context, progress func(team int64, day time.Time, rows int64)) error {
	if w.lake == nil {
		return errors.New("cannot move events to the lake: the warehouse has none (Config.LakeDir)")
	}
	if err := w.WaitBackfill(ctx); err != nil {
		return err
	}
	type day struct {
		team int64
		day  time.Time
	}
	rows, err := w.db.QueryContext(ctx, `SELECT DISTINCT team_id, ("timestamp" AT TIME ZONE 'UTC')::DATE FROM events ORDER BY ALL`)
	if err != nil {
		return fmt.Errorf("cannot list the days of the events table: %w", err)
	}
	var days []day
	for rows.Next() {
		var d day
		if err := rows.Scan(&d.team, &d.day); err != nil {
			rows.Close()
			return fmt.Errorf("cannot list the days of the events table: %w", err)
		}
		days = append(days, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("cannot list the days of the events table: %w", err)
	}
	for _, d := range days {
		n, err := w.moveDay(ctx, d.team, d.day)
		if err != nil {
			return err
		}
		// The deleted rows stay in DuckDB's memory until a checkpoint: without one a
		// day, it ran out of its 256 MB after six days of 166,000 events.
		if _, err := w.db.ExecContext(ctx, "CHECKPOINT"); err != nil {
			return fmt.Errorf("cannot checkpoint after moving a day of events: %w", err)
		}
		if progress != nil {
			progress(d.team, d.day, n)
		}
	}
	return nil
}

// moveDay moves the events of team and day (midnight UTC) into one part, and returns
// how many.
func (w *Warehouse) moveDay(ctx context.Context, team int64, day time.Time) (int64, error) {
	l := w.lake
	var keys [slotCount]string
	if t := w.slots.of(team); t != nil {
		keys = t.keys
	}
	// The part's columns in partFields' order; a slot holds its key's values, read
	// from the properties, as the table's rows of a backfill still running may not.
	columns := make([]string, len(partFields))
	for i, f := range partFields {
		name := `"` + f.Name + `"`
		switch {
		case f.Name == "properties":
			columns[i] = PropertiesText + " AS properties"
		case strings.HasPrefix(f.Name, "mat_slot_"):
			s, _ := strconv.Atoi(strings.TrimPrefix(f.Name, "mat_slot_"))
			if keys[s] == "" {
				columns[i] = "NULL::VARCHAR AS " + name
			} else {
				columns[i] = `json_extract_string(` + PropertiesText + `, '$."` + keys[s] + `"') AS ` + name
			}
		default:
			columns[i] = name
		}
	}
	next := day.AddDate(0, 0, 1)
	// The bounds are hedge's own values, not a user's: DuckDB's COPY takes no
	// parameters.
	where := `team_id = ` + strconv.FormatInt(team, 10) + ` AND "timestamp" >= '` + day.Format(time.RFC3339) +
		`'::TIMESTAMPTZ AND "timestamp" < '` + next.Format(time.RFC3339) + `'::TIMESTAMPTZ`
	name := "m" + strconv.FormatInt(time.Now().UnixMicro(), 10) + "-" + strconv.FormatUint(l.seq.Add(1), 10) + ".parquet"
	part := lakePart{Team: team, Day: day, Path: l.partPath(team, day, name), SlotKeys: keys, Level: 1}
	fail := func(err error) (int64, error) {
		os.Remove(l.abs(part.Path))
		return 0, fmt.Errorf("cannot move the events of project %d on %s: %w", team, day.Format(time.DateOnly), err)
	}
	conn, err := w.db.Conn(ctx)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	// In the table's order (the order of their commits: about their time order), as a
	// merge keeps it: a sort of a day's events ran DuckDB out of its memory limit.
	if err := l.copyPart(ctx, conn, `SELECT `+strings.Join(columns, ", ")+` FROM events WHERE `+where, &part); err != nil {
		return fail(err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, registerPartSQL, part.registerArgs(time.Now())...); err != nil {
		return fail(err)
	}
	deleted, err := tx.ExecContext(ctx, `DELETE FROM events WHERE `+where)
	if err != nil {
		return fail(err)
	}
	if n, err := deleted.RowsAffected(); err != nil || n != part.Rows {
		return fail(fmt.Errorf("the part holds %d events, and %d left the table (%v)", part.Rows, n, err))
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	l.change(nil, []lakePart{part})
	return part.Rows, nil
}
