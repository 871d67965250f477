//go:build duckdb_arrow

package warehouse

// The Arrow path, measured against BenchmarkWriterAppender10k to choose the write path
// (the Appender won; see the README). duckdb-go builds its Arrow bridge only with the
// duckdb_arrow tag:
//
//	go test -tags duckdb_arrow -run XXX -bench 10k ./warehouse

import (
	"context"
	"database/sql/driver"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"
)

// insertConn opens a warehouse in a temporary directory for the benchmark and returns a
// connection of its own and a function that runs a statement on it; both close when
// the benchmark ends.
func insertConn(b *testing.B) (driver.Conn, func(string)) {
	w, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "hedge.duckdb")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	conn, err := w.connector.Connect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn, func(q string) {
		if _, err := conn.(driver.ExecerContext).ExecContext(context.Background(), q, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkArrowInsert10k builds a record batch of 10,000 events and inserts it through
// duckdb-go's Arrow view in one transaction: every column of the events table, as the
// Writer fills them, without the identity model. BenchmarkAppenderInsert10k does the
// same through the Appender, for a like-for-like comparison.
func BenchmarkArrowInsert10k(b *testing.B) {
	events, size := benchEvents(b, 10000, true)
	conn, exec := insertConn(b)
	bridge, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		b.Fatal(err)
	}
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "uuid", Type: extensions.NewUUIDType()},
		{Name: "team_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "event", Type: arrow.BinaryTypes.String},
		{Name: "distinct_id", Type: arrow.BinaryTypes.String},
		{Name: "person_id", Type: extensions.NewUUIDType()},
		{Name: "timestamp", Type: ts},
		{Name: "inserted_at", Type: ts},
		{Name: "properties", Type: arrow.BinaryTypes.String},
		{Name: "group_0", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "group_1", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "group_2", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "group_3", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "group_4", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "lane", Type: arrow.BinaryTypes.String},
	}, nil)
	builder := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer builder.Release()

	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now := arrow.Timestamp(time.Now().UnixMicro())
		for i := range events {
			e := &events[i]
			builder.Field(0).(*extensions.UUIDBuilder).Append(uuid.Must(uuid.NewV7()))
			builder.Field(1).(*array.Int64Builder).Append(e.TeamID)
			builder.Field(2).(*array.StringBuilder).Append(e.Name)
			builder.Field(3).(*array.StringBuilder).Append(e.DistinctID)
			builder.Field(4).(*extensions.UUIDBuilder).Append(e.UUID)
			builder.Field(5).(*array.TimestampBuilder).Append(arrow.Timestamp(e.Timestamp.UnixMicro()))
			builder.Field(6).(*array.TimestampBuilder).Append(now)
			builder.Field(7).(*array.StringBuilder).Append(e.Properties)
			for g := 8; g < 13; g++ {
				builder.Field(g).(*array.StringBuilder).AppendNull()
			}
			builder.Field(13).(*array.StringBuilder).Append("realtime")
		}
		record := builder.NewRecordBatch()
		reader, err := array.NewRecordReader(schema, []arrow.RecordBatch{record})
		if err != nil {
			b.Fatal(err)
		}
		release, err := bridge.RegisterView(reader, "pending_events")
		if err != nil {
			b.Fatal(err)
		}
		exec("BEGIN TRANSACTION")
		exec(`INSERT INTO events (uuid, team_id, event, distinct_id, person_id, "timestamp", inserted_at, properties,
				"$group_0", "$group_1", "$group_2", "$group_3", "$group_4", lane)
			SELECT uuid, team_id, event, distinct_id, person_id, "timestamp", inserted_at, properties,
				group_0, group_1, group_2, group_3, group_4, lane FROM pending_events`)
		exec("COMMIT")
		release()
		reader.Release()
		record.Release()
	}
	b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkAppenderInsert10k is BenchmarkArrowInsert10k through duckdb-go's Appender:
// the same rows, columns and transactions.
func BenchmarkAppenderInsert10k(b *testing.B) {
	events, size := benchEvents(b, 10000, true)
	conn, exec := insertConn(b)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now := time.Now()
		exec("BEGIN TRANSACTION")
		appender, err := duckdb.NewAppender(conn, "", "", "events")
		if err != nil {
			b.Fatal(err)
		}
		// The materialized columns follow the lane, empty: the Arrow insert leaves them NULL.
		row := make([]driver.Value, 14+materializedCount+slotCount)
		for i := range events {
			e := &events[i]
			copy(row, []driver.Value{duckdb.UUID(uuid.Must(uuid.NewV7())), e.TeamID, e.Name, e.DistinctID, duckdb.UUID(e.UUID),
				e.Timestamp, now, e.Properties, nil, nil, nil, nil, nil, "realtime"})
			if err := appender.AppendRow(row...); err != nil {
				b.Fatal(err)
			}
		}
		if err := appender.Close(); err != nil {
			b.Fatal(err)
		}
		exec("COMMIT")
	}
	b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "rows/s")
}
