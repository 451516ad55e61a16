-- name: name_label
-- version: 1
-- returns: no rows: defines the macro nsysq_name_label(name_id, resolved), the text shown for a name id: resolved (its StringIds value) when it resolves, "<unresolved id N>" when StringIds lacks id N, "<null name id>" when the id is NULL. census, kernel_category and timeline call it.
-- tables: none
-- params: none
-- dialect: duckdb
CREATE OR REPLACE TEMP MACRO nsysq_name_label(name_id, resolved) AS
    COALESCE(
        resolved,
        CASE WHEN name_id IS NULL THEN '<null name id>'
             ELSE '<unresolved id ' || CAST(name_id AS VARCHAR) || '>' END
    )
