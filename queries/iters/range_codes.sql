-- name: iters_range_codes
-- version: 1
-- returns: every range row of nsysq_nvtx_ranges in rid order: h (DuckDB's hash of its domain and step name, nsysq_step_name of queries/iters/step_name.sql: queries/iters/range_names.sql's h), kept (dropped IS NULL) and profiler (its name is a PyTorch ProfilerStep#<number>, which the step name folds). nsysq iters groups the candidate step ranges by it (nsysq.iterations.candidates: queries/iters/candidates.sql's groups), the names by range_names.sql (a hash two names share sends it back to candidates.sql).
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: none
-- dialect: duckdb
WITH folded AS (
    SELECT rid, dropped IS NULL AS kept, domain, name, nsysq_step_name(name) AS step FROM nsysq_nvtx_ranges
)
SELECT hash(domain, step) AS h, kept, step <> name AS profiler
FROM folded
ORDER BY rid
