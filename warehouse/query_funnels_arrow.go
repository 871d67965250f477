//go:build duckdb_arrow

package warehouse

import (
	"context"
	"database/sql/driver"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
)

// readFunnel runs text, a funnel's query, on driverConn and hands its rows to sink.
// Built with the duckdb_arrow tag (make does), it reads them through DuckDB's Arrow
// reader: a chunk of rows at a time as columns, where the driver's rows hand over each
// value as an interface, which allocates (2.6M rows: 0.01 s against 0.09-0.14 s).
func (q *Queries) readFunnel(ctx context.Context, driverConn any, text string, query funnelQuery, sink funnelSink) error {
	named, err := funnelArgs(driverConn, query)
	if err != nil {
		return err
	}
	conn, ok := driverConn.(driver.Conn)
	if !ok {
		return fmt.Errorf("the database driver %T is not a connection", driverConn)
	}
	reader, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		return fmt.Errorf("cannot read the funnel's rows as Arrow: %w", err)
	}
	args := make([]any, len(named))
	for i, arg := range named {
		args[i] = arg.Value
	}
	records, err := reader.QueryContext(ctx, text, args...)
	if err != nil {
		return q.failure(ctx, err)
	}
	defer records.Release()
	for records.Next() {
		if err := ctx.Err(); err != nil {
			return q.failure(ctx, err)
		}
		if err := addFunnelRecord(records.RecordBatch(), query, sink); err != nil {
			return err
		}
	}
	if err := records.Err(); err != nil {
		return q.failure(ctx, err)
	}
	return sink.end()
}

// addFunnelRecord hands the rows of a record of the funnel's query to sink. None of its columns
// holds a NULL: the person is a hash, the time and steps are of events that have one,
// and the value is coalesced. A value is borrowed from the record, which the reader
// releases at its next: the fold copies what it keeps.
func addFunnelRecord(record arrow.RecordBatch, query funnelQuery, sink funnelSink) error {
	stepsColumn, valueColumn := query.columns()
	persons, ok1 := record.Column(0).(*array.Uint64)
	times, ok2 := record.Column(1).(*array.Int64)
	steps, ok3 := record.Column(stepsColumn).(*array.Int64)
	var values interface{ Value(int) string }
	ok4 := true
	if int(record.NumCols()) > valueColumn {
		values, ok4 = record.Column(valueColumn).(interface{ Value(int) string })
	}
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return fmt.Errorf("a funnel's record is not of persons, times, steps and values: %s", record.Schema())
	}
	p, t, s := persons.Uint64Values(), times.Int64Values(), steps.Int64Values()
	for i := range p {
		value := ""
		if values != nil {
			value = values.Value(i)
		}
		if err := sink.add(p[i], t[i], s[i], value); err != nil {
			return err
		}
	}
	return nil
}
