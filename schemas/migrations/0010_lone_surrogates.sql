-- 0010: properties stored before capture repaired lone UTF-16 surrogates. An escape like
-- \ud800 with no pair is valid JSON syntax but no character, and DuckDB's JSON
-- functions refuse a document that holds one, so one such event made every property
-- read of its project fail. Capture now stores U+FFFD in its place; this does the same
-- for what is already stored. Only documents that DuckDB cannot read are rewritten, and
-- in them every surrogate escape becomes \ufffd (a pair in such a document loses its
-- character too: the document was unreadable as a whole).
UPDATE events SET properties = regexp_replace(properties, '\\u[dD][89a-fA-F][0-9a-fA-F]{2}', '\\ufffd', 'g')
WHERE properties LIKE '%\u%' AND NOT json_valid(properties);

UPDATE persons SET properties = regexp_replace(properties, '\\u[dD][89a-fA-F][0-9a-fA-F]{2}', '\\ufffd', 'g')
WHERE properties LIKE '%\u%' AND NOT json_valid(properties);

UPDATE groups SET group_properties = regexp_replace(group_properties, '\\u[dD][89a-fA-F][0-9a-fA-F]{2}', '\\ufffd', 'g')
WHERE group_properties LIKE '%\u%' AND NOT json_valid(group_properties);
