-- 0003: an empty step. The organization-level tables came in 0005: databases made before
-- then had already recorded version 3 with this file, so its number could not be reused.
SELECT 1;
