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

// BenchmarkArrowInsert10k builds a record batch of 10,000 events and inserts it through
// duckdb-go's Arrow view in one transaction, the same work per row as the Writer.
func BenchmarkArrowInsert10k(b *testing.B) {
	events, size := benchEvents(b, 10000, true)
	w, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "hedge.duckdb")})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	conn, err := w.connector.Connect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	bridge, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		b.Fatal(err)
	}
	exec := func(q string) {
		if _, err := conn.(driver.ExecerContext).ExecContext(context.Background(), q, nil); err != nil {
			b.Fatal(err)
		}
	}
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "uuid", Type: extensions.NewUUIDType()},
		{Name: "team_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "event", Type: arrow.BinaryTypes.String},
		{Name: "distinct_id", Type: arrow.BinaryTypes.String},
		{Name: "timestamp", Type: ts},
		{Name: "inserted_at", Type: ts},
		{Name: "properties", Type: arrow.BinaryTypes.String},
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
			builder.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(e.Timestamp.UnixMicro()))
			builder.Field(5).(*array.TimestampBuilder).Append(now)
			builder.Field(6).(*array.StringBuilder).Append(e.Properties)
			builder.Field(7).(*array.StringBuilder).Append("realtime")
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
		exec(`INSERT INTO events (uuid, team_id, event, distinct_id, "timestamp", inserted_at, properties, lane)
			SELECT uuid, team_id, event, distinct_id, "timestamp", inserted_at, properties, lane FROM pending_events`)
		exec("COMMIT")
		release()
		reader.Release()
		record.Release()
	}
	b.ReportMetric(float64(b.N*len(events))/b.Elapsed().Seconds(), "rows/s")
}
