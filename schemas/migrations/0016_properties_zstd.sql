-- 0016: the properties text in a column compressed with zstd. DuckDB compresses the
-- properties column by its own choice (FSST and dictionaries), which keeps JSON text
-- at about 330-420 bytes an event; zstd keeps the same text at about 130 (measured on
-- bench events, 860 bytes of JSON each), which also makes the Writer faster. DuckDB
-- has no ALTER ... SET COMPRESSION, so the text moves to a new column: the Writer
-- writes properties_zstd and leaves properties NULL, and the rows stored before this
-- migration move over in the background (warehouse/properties_text.go, their owner),
-- a chunk of rowids at a time: rows from next_row up to end_row are still to move.
-- Every read takes coalesce(properties_zstd, properties), which is right for each row
-- whether it moved or not.
--
-- zstd needs DuckDB 1.2's storage format or newer; hedge attaches every file in 1.5's.
ALTER TABLE events ALTER COLUMN properties DROP NOT NULL;
ALTER TABLE events ADD COLUMN properties_zstd VARCHAR USING COMPRESSION zstd;

CREATE TABLE meta.properties_move (
    next_row BIGINT NOT NULL,
    end_row  BIGINT NOT NULL
);
INSERT INTO meta.properties_move SELECT 0, coalesce(max(rowid) + 1, 0) FROM events;
