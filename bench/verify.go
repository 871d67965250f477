package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// rowCheck compares the rows a run left in the database with its sends. Every event
// of every send has a uuid of its own that names the run and the send (gen.Body), so
// the check counts per send, through the query API, without listing the rows.
type rowCheck struct {
	Skipped string `json:"skipped,omitempty"`
	// Sends is every send of the run, warmup included; AckedSends those answered 200,
	// holding AckedEvents events.
	Sends       int64 `json:"sends"`
	AckedSends  int64 `json:"acknowledged_sends"`
	AckedEvents int64 `json:"acknowledged_events"`
	// Rows is the rows with the run's uuids, UUIDs how many different ones they hold,
	// StoredSends how many sends they come from.
	Rows        int64 `json:"rows"`
	UUIDs       int64 `json:"uuids"`
	StoredSends int64 `json:"stored_sends"`
	// MissingEvents were acknowledged and are not stored; DuplicatedEvents are stored
	// more than once; TornSends (a sample) are sends stored with another number of
	// rows than they had events.
	MissingEvents    int64   `json:"missing_events"`
	DuplicatedEvents int64   `json:"duplicated_events"`
	TornSends        []int64 `json:"torn_sends,omitempty"`
	// StoredUnanswered sends got no answer (a timeout, a reset) and were stored: that
	// is allowed. StoredRefused sends were refused (an answer other than 200) and
	// stored anyway: an SDK would send them again.
	StoredUnanswered int64 `json:"stored_unanswered_sends"`
	StoredRefused    int64 `json:"stored_refused_sends"`
	OK               bool  `json:"ok"`
	// CaughtUp is how long after the run the check waited for the acknowledged
	// events to be readable: through the log, the warehouse's lag at the run's end.
	CaughtUp time.Duration `json:"caught_up_ns,omitempty"`
}

// sendSQL is the send number in a stamped uuid's text (gen.Body).
const sendSQL = `CAST(substr(uuid::VARCHAR, 10, 4) || substr(uuid::VARCHAR, 15, 4) || substr(uuid::VARCHAR, 20, 4) AS BIGINT)`

// runSQL selects the events of a run: the uuids that start with its id.
func runSQL(runID uint32) string {
	return fmt.Sprintf(`uuid BETWEEN '%08x-0000-0000-0000-000000000000' AND '%08x-9999-9999-9999-999999999999'`, runID, runID)
}

// checkRows counts the run's rows and fails it when an acknowledged event is missing
// or stored twice, a send is stored in part, or a refused send is stored.
func (r *runner) checkRows(runID uint32, all *sendStats, bodyEvents int) (rowCheck, error) {
	api := r.target.api
	c := rowCheck{
		AckedSends:  all.acked,
		AckedEvents: all.events,
		Sends:       all.acked + int64(len(all.refused)+len(all.unanswered)),
	}
	where := runSQL(runID)
	begin := time.Now()
	deadline := begin.Add(r.settle)
	for {
		row, err := api.count(`SELECT count(), count(DISTINCT uuid), count(DISTINCT ` + sendSQL + `) FROM events WHERE ` + where)
		if err != nil {
			return c, err
		}
		c.Rows, c.UUIDs, c.StoredSends = row[0], row[1], row[2]
		// Through the log a send is applied a partition at a time: wait for its rows.
		if c.StoredSends >= c.AckedSends && c.UUIDs >= c.AckedEvents || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.CaughtUp = time.Since(begin)
	c.DuplicatedEvents = c.Rows - c.UUIDs
	torn, err := api.hogql(fmt.Sprintf(`SELECT %s, count() FROM events WHERE %s GROUP BY 1 HAVING count() <> %d ORDER BY 1 LIMIT 10`,
		sendSQL, where, bodyEvents))
	if err != nil {
		return c, err
	}
	for _, row := range torn {
		c.TornSends = append(c.TornSends, row[0])
	}
	if c.StoredRefused, err = storedAmong(api, where, all.refused); err != nil {
		return c, err
	}
	if c.StoredUnanswered, err = storedAmong(api, where, all.unanswered); err != nil {
		return c, err
	}
	// Every stored send is one of the run's: acknowledged, refused or unanswered.
	storedAcked := c.StoredSends - c.StoredRefused - c.StoredUnanswered
	c.MissingEvents = (c.AckedSends - storedAcked) * int64(bodyEvents)
	c.OK = c.MissingEvents == 0 && c.DuplicatedEvents == 0 && len(c.TornSends) == 0 && c.StoredRefused == 0
	return c, nil
}

// storedAmong counts how many of sends have rows, a thousand sends per query.
func storedAmong(api *apiClient, where string, sends []uint64) (int64, error) {
	var stored int64
	for len(sends) > 0 {
		chunk := sends[:min(len(sends), 1000)]
		sends = sends[len(chunk):]
		list := make([]string, len(chunk))
		for i, s := range chunk {
			list[i] = strconv.FormatUint(s, 10)
		}
		row, err := api.count(fmt.Sprintf(`SELECT count(DISTINCT %s) FROM events WHERE %s AND %s IN (%s)`,
			sendSQL, where, sendSQL, strings.Join(list, ",")))
		if err != nil {
			return 0, err
		}
		stored += row[0]
	}
	return stored, nil
}

// problems says what is wrong with the rows, in words; nil when they are right.
func (c *rowCheck) problems() []string {
	if c.Skipped != "" || c.OK {
		return nil
	}
	var p []string
	if c.MissingEvents > 0 {
		p = append(p, fmt.Sprintf("%d acknowledged events missing", c.MissingEvents))
	}
	if c.MissingEvents < 0 {
		p = append(p, fmt.Sprintf("%d more events stored than sent", -c.MissingEvents))
	}
	if c.DuplicatedEvents > 0 {
		p = append(p, fmt.Sprintf("%d events stored more than once", c.DuplicatedEvents))
	}
	if len(c.TornSends) > 0 {
		p = append(p, fmt.Sprintf("sends stored in part, e.g. send %d", c.TornSends[0]))
	}
	if c.StoredRefused > 0 {
		p = append(p, fmt.Sprintf("%d refused sends stored anyway", c.StoredRefused))
	}
	return p
}
