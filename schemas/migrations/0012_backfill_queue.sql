-- 0012: a backfill queues its windows a batch at a time, as earlier runs finish, rather
-- than all at once: it records the length of its windows, how far it has queued them
-- (the end of the last window queued, or the start of its first before any) and the
-- end of its last window. The backfills made before queued every window at once.
ALTER TABLE meta.batch_export_backfills ADD COLUMN window_seconds BIGINT;
ALTER TABLE meta.batch_export_backfills ADD COLUMN queued_through TIMESTAMPTZ;
ALTER TABLE meta.batch_export_backfills ADD COLUMN windows_end TIMESTAMPTZ;
UPDATE meta.batch_export_backfills
SET queued_through = end_at, windows_end = end_at,
    window_seconds = coalesce((SELECT CASE b."interval" WHEN 'every 5 minutes' THEN 300 WHEN 'every 15 minutes' THEN 900
        WHEN 'hour' THEN 3600 WHEN 'day' THEN 86400 WHEN 'week' THEN 604800 END
        FROM meta.batch_exports b WHERE b.id = batch_export_id), 3600);
