-- name: iters_step_name
-- version: 1
-- returns: no rows: defines the macro nsysq_step_name(name), the name a range's iterations are grouped by: 'ProfilerStep#N' for every PyTorch ProfilerStep#<number>, else the name itself. nsysq iters groups the candidate step ranges by it (queries/iters/range_codes.sql, range_names.sql).
-- tables: none
-- params: none
-- dialect: duckdb
CREATE OR REPLACE TEMP MACRO nsysq_step_name(name) AS
    CASE WHEN regexp_matches(name, '^ProfilerStep#[0-9]+$') THEN 'ProfilerStep#N' ELSE name END
