package warehouse

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/uuid"
)

// A part is one Parquet file of the lake: the events of one project and one day (of
// their timestamp, UTC) that one commit of the Writer stored, or that a compaction
// merged. Its columns are those of the events table, with the properties text in a
// plain column (properties), compressed by Parquet's zstd as the table's is by
// DuckDB's: a reader needs nothing of hedge to read it (README, "The lake").

// partFields are a part's columns, in order; the Writer fills them in this order.
var partFields = func() []arrow.Field {
	fields := []arrow.Field{
		{Name: "uuid", Type: extensions.NewUUIDType()},
		{Name: "team_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "event", Type: arrow.BinaryTypes.String},
		{Name: "distinct_id", Type: arrow.BinaryTypes.String},
		{Name: "person_id", Type: extensions.NewUUIDType()},
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "inserted_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "properties", Type: arrow.BinaryTypes.String},
	}
	for i := range 5 {
		fields = append(fields, arrow.Field{Name: "$group_" + strconv.Itoa(i), Type: arrow.BinaryTypes.String, Nullable: true})
	}
	fields = append(fields, arrow.Field{Name: "lane", Type: arrow.BinaryTypes.String})
	for _, k := range materializedKeys {
		fields = append(fields, arrow.Field{Name: materializedColumn(k), Type: arrow.BinaryTypes.String, Nullable: true})
	}
	for s := range slotCount {
		fields = append(fields, arrow.Field{Name: slotColumn(s), Type: arrow.BinaryTypes.String, Nullable: true})
	}
	return fields
}()

// The positions in partFields of the columns after the fixed ones.
const (
	partGroupColumn    = 8
	partLaneColumn     = partGroupColumn + 5
	partMaterialColumn = partLaneColumn + 1
)

var partSchema = arrow.NewSchema(partFields, nil)

// partProperties are the Parquet settings of a part: zstd, statistics (DuckDB skips a
// row group by its min and max of timestamp), dictionaries only for the columns of few
// distinct values (a dictionary of properties texts or uuids costs time and saves
// nothing).
var partProperties = parquet.NewWriterProperties(
	parquet.WithCompression(compress.Codecs.Zstd),
	parquet.WithCompressionLevel(1),
	parquet.WithStats(true),
	parquet.WithDictionaryDefault(true),
	parquet.WithDictionaryFor("uuid", false),
	parquet.WithDictionaryFor("person_id", false),
	parquet.WithDictionaryFor("properties", false),
	parquet.WithDictionaryFor("timestamp", false),
	parquet.WithDictionaryFor("inserted_at", false),
	parquet.WithMaxRowGroupLength(RowGroupRows*8),
	parquet.WithCreatedBy("hedge"),
	parquet.WithAllocator(&lakeMemory),
)

// lakeMemory is the memory of every part's building and writing.
var lakeMemory partMemory

// partBuilder gathers the rows of one part of a commit: one project, one day.
type partBuilder struct {
	team int64
	day  int64 // days since the Unix epoch, of the events' timestamps in UTC
	rows *array.RecordBuilder
	// The typed builders of rows' fixed columns, so that appending asserts no type.
	uuids, persons          *extensions.UUIDBuilder
	teams                   *array.Int64Builder
	names, distinctIDs      *array.StringBuilder
	timestamps, insertedAts *array.TimestampBuilder
	properties, lanes       *array.StringBuilder
	optional                [5 + materializedCount + slotCount]*array.StringBuilder // groups, then materialized
	n                       int
}

func newPartBuilder(mem memory.Allocator) *partBuilder {
	rows := array.NewRecordBuilder(mem, partSchema)
	b := &partBuilder{rows: rows,
		uuids: rows.Field(0).(*extensions.UUIDBuilder), teams: rows.Field(1).(*array.Int64Builder),
		names: rows.Field(2).(*array.StringBuilder), distinctIDs: rows.Field(3).(*array.StringBuilder),
		persons: rows.Field(4).(*extensions.UUIDBuilder), timestamps: rows.Field(5).(*array.TimestampBuilder),
		insertedAts: rows.Field(6).(*array.TimestampBuilder), properties: rows.Field(7).(*array.StringBuilder),
		lanes: rows.Field(partLaneColumn).(*array.StringBuilder)}
	for i := range 5 {
		b.optional[i] = rows.Field(partGroupColumn + i).(*array.StringBuilder)
	}
	for i := range materializedCount + slotCount {
		b.optional[5+i] = rows.Field(partMaterialColumn + i).(*array.StringBuilder)
	}
	return b
}

// partRow is what of one event the Writer knows besides the Event itself.
type partRow struct {
	person     uuid.UUID
	insertedAt time.Time
	groups     *[5]string
	lane       string
	// materialized are the event's materialized values (materializer.values): a
	// string, or nil for NULL.
	materialized []driver.Value
}

func (b *partBuilder) append(e *Event, r *partRow) {
	b.uuids.Append(e.UUID)
	b.teams.Append(e.TeamID)
	b.names.Append(e.Name)
	b.distinctIDs.Append(e.DistinctID)
	b.persons.Append(r.person)
	b.timestamps.Append(arrow.Timestamp(e.Timestamp.UnixMicro()))
	b.insertedAts.Append(arrow.Timestamp(r.insertedAt.UnixMicro()))
	b.properties.Append(e.Properties)
	b.lanes.Append(r.lane)
	for i, g := range r.groups {
		appendOptional(b.optional[i], g)
	}
	for i, v := range r.materialized {
		s, _ := v.(string)
		if v == nil {
			b.optional[5+i].AppendNull()
		} else {
			b.optional[5+i].Append(s)
		}
	}
	b.n++
}

// appendOptional appends s, or NULL for "".
func appendOptional(b *array.StringBuilder, s string) {
	if s == "" {
		b.AppendNull()
		return
	}
	b.Append(s)
}

// partWriter builds the parts of the Writer's commits: one per project and day of
// their events. Its builders are kept from one commit to the next.
type partWriter struct {
	mem   memory.Allocator
	parts []*partBuilder // the commit's, in the order of their first event
	spare []*partBuilder
	// last is the part the last event went to: a commit's events come in runs of one
	// project and day, so most find theirs without a search.
	last *partBuilder
}

// add appends e to its part.
func (p *partWriter) add(e *Event, r *partRow) {
	day := e.Timestamp.Unix() / 86400
	if e.Timestamp.Unix() < 0 && e.Timestamp.Unix()%86400 != 0 {
		day-- // floor, for the (refused elsewhere, but possible) days before 1970
	}
	b := p.last
	if b == nil || b.team != e.TeamID || b.day != day {
		b = nil
		for _, c := range p.parts {
			if c.team == e.TeamID && c.day == day {
				b = c
				break
			}
		}
		if b == nil {
			if n := len(p.spare); n > 0 {
				b, p.spare = p.spare[n-1], p.spare[:n-1]
			} else {
				b = newPartBuilder(p.mem)
			}
			b.team, b.day, b.n = e.TeamID, day, 0
			p.parts = append(p.parts, b)
		}
		p.last = b
	}
	b.append(e, r)
}

// reset drops what the commit's builders hold, for the next commit.
func (p *partWriter) reset() {
	for _, b := range p.parts {
		if b.n > 0 { // a failed commit's rows: NewRecord empties the builders
			b.rows.NewRecordBatch().Release()
		}
		b.n = 0
		p.spare = append(p.spare, b)
	}
	p.parts, p.last = p.parts[:0], nil
}

// write writes the commit's parts into the lake, named after the commit (its
// inserted_at, and seq), each fsynced under a temporary name and then renamed, so
// that a file of a part's name is whole, and uploaded to the lake's bucket if it has
// one. Parts are encoded on as many threads as Go
// runs on: a part of many rows is cut into pieces (parts of their own) for that, as
// Parquet's encoding and compression take most of a commit's time with the lake. It
// returns the parts written; on an error it has removed what it wrote. The caller
// registers them in the commit's transaction, and removes them should the commit fail
// (lake.remove).
func (p *partWriter) write(l *lake, insertedAt time.Time, seq uint64, slotKeys func(team int64) [slotCount]string) ([]lakePart, error) {
	type piece struct {
		part lakePart
		rec  arrow.RecordBatch
		err  error
	}
	var pieces []*piece
	threads := runtime.GOMAXPROCS(0)
	for _, b := range p.parts {
		if b.n == 0 {
			continue
		}
		day := time.Unix(b.day*86400, 0).UTC()
		rec := b.rows.NewRecordBatch()
		b.n = 0
		n := int(rec.NumRows())
		cuts := max(1, min(threads, n/minPieceRows))
		for i := range cuts {
			from, to := int64(n*i/cuts), int64(n*(i+1)/cuts)
			slice := rec.NewSlice(from, to)
			name := strconv.FormatInt(insertedAt.UnixMicro(), 10) + "-" + strconv.FormatUint(seq, 10) + "-" + strconv.Itoa(len(pieces)) + ".parquet"
			part := lakePart{Team: b.team, Day: day, Path: l.partPath(b.team, day, name), Rows: to - from, SlotKeys: slotKeys(b.team)}
			part.MinTimestamp, part.MaxTimestamp = timeRange(slice.Column(5).(*array.Timestamp))
			pieces = append(pieces, &piece{part: part, rec: slice})
		}
		rec.Release()
	}
	work := make(chan *piece)
	var wg sync.WaitGroup
	for range min(threads, len(pieces)) {
		wg.Go(func() {
			for pc := range work {
				if pc.part.Bytes, pc.err = writeParquet(l.abs(pc.part.Path), pc.rec); pc.err == nil {
					if pc.err = l.upload(pc.part); pc.err != nil {
						os.Remove(l.abs(pc.part.Path))
					}
				}
			}
		})
	}
	for _, pc := range pieces {
		work <- pc
	}
	close(work)
	wg.Wait()
	written := make([]lakePart, 0, len(pieces))
	var errs []error
	for _, pc := range pieces {
		pc.rec.Release()
		if pc.err != nil {
			errs = append(errs, pc.err)
		} else {
			written = append(written, pc.part)
		}
	}
	if err := errors.Join(errs...); err != nil {
		l.remove(written)
		return nil, err
	}
	return written, nil
}

// minPieceRows is the fewest rows of a piece of a part (write): a smaller part is
// written whole, on one thread.
const minPieceRows = 4096

// timeRange is the least and the greatest of timestamps, which holds one at least.
func timeRange(timestamps *array.Timestamp) (least, greatest time.Time) {
	values := timestamps.TimestampValues()
	lo, hi := values[0], values[0]
	for _, v := range values[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return time.UnixMicro(int64(lo)).UTC(), time.UnixMicro(int64(hi)).UTC()
}

// writeParquet writes rec to path as a Parquet file, through a temporary file that it
// fsyncs and renames, and the directory's fsync: once it returns, path is whole and
// stays. It returns the file's size.
func writeParquet(path string, rec arrow.RecordBatch) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return 0, fmt.Errorf("cannot create the directory of part %s: %w", path, err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, fmt.Errorf("cannot create part %s: %w", path, err)
	}
	fail := func(err error) (int64, error) {
		f.Close()
		os.Remove(tmp)
		return 0, fmt.Errorf("cannot write part %s: %w", path, err)
	}
	w, err := pqarrow.NewFileWriter(partSchema, f, partProperties, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(&lakeMemory)))
	if err != nil {
		return fail(err)
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return fail(err)
	}
	if err := w.Close(); err != nil { // closes f too
		os.Remove(tmp)
		return 0, fmt.Errorf("cannot write part %s: %w", path, err)
	}
	size, err := keepFile(tmp, path)
	if err != nil {
		return 0, fmt.Errorf("cannot write part %s: %w", path, err)
	}
	return size, nil
}

// keepFile makes the file written at tmp path's, whole and lasting: fsynced, renamed,
// and its directory fsynced. It returns its size; on an error neither file is left.
func keepFile(tmp, path string) (int64, error) {
	err := syncFile(tmp)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	var info os.FileInfo
	if err == nil {
		info, err = os.Stat(path)
	}
	if err != nil {
		os.Remove(tmp)
		os.Remove(path)
		return 0, err
	}
	return info.Size(), nil
}

// partMemory is the memory of the parts' Arrow builders and Parquet writers: buffers
// of power-of-two sizes, kept in pools when freed, since every commit builds its
// columns anew and Go's allocator would clear each buffer it grows (measured: a fifth
// of the Writer's time with the lake went to growing and clearing them). The buffers
// are not cleared on reuse: Arrow's builders and Parquet's writers write what they
// read, as they do over C's malloc.
type partMemory struct {
	classes [48]sync.Pool // by log2 of the capacity, from minPartBuffer up
}

// minPartBuffer is the smallest buffer partMemory hands out: Arrow's 64-byte
// alignment of a buffer's length, which its builders may read up to.
const minPartBuffer = 64

func (m *partMemory) Allocate(size int) []byte {
	c := bits.Len(uint(max(size, minPartBuffer) - 1))
	if b, ok := m.classes[c].Get().(*[]byte); ok {
		return (*b)[:size]
	}
	return make([]byte, size, 1<<c)
}

func (m *partMemory) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	grown := m.Allocate(size)
	copy(grown, b)
	m.Free(b)
	return grown
}

func (m *partMemory) Free(b []byte) {
	c := bits.Len(uint(cap(b) - 1))
	if cap(b) < minPartBuffer || cap(b) != 1<<c || c >= len(m.classes) {
		return // not one of its buffers
	}
	b = b[:cap(b)]
	m.classes[c].Put(&b)
}

// syncDir fsyncs a directory, so that the names created in it last.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
