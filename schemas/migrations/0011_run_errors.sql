-- 0011: run errors recorded before hedge worded them in the export's terms could hold
-- the server's absolute paths and what a name resolved to. They are replaced with the
-- sentence a run error of hedge itself now has; the log of the time kept the detail.
UPDATE meta.batch_export_runs
SET latest_error = 'hedge could not export this window: an error of hedge itself, which its log records'
WHERE latest_error IS NOT NULL;
