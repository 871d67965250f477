-- 0003: reserved for the organization-level management API (issue 6); this placeholder is replaced by that migration.
SELECT 1;
