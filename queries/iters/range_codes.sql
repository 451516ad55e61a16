-- name: iters_range_codes
-- version: 1
-- returns: every range row of nsysq_nvtx_ranges in rid order: h (DuckDB's hash of its domain and step name, 'ProfilerStep#N' for every PyTorch ProfilerStep#<number> and the name otherwise: queries/iters/range_names.sql's h), kept (dropped IS NULL) and profiler (its name is a ProfilerStep#<number>). nsysq iters groups the candidate step ranges by it (nsysq.iterations.candidates: queries/iters/candidates.sql's groups), the names by range_names.sql (a hash two names share sends it back to candidates.sql).
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: none
-- dialect: duckdb
WITH folded AS (
    SELECT rid, dropped IS NULL AS kept, domain, name, regexp_matches(name, '^ProfilerStep#[0-9]+$') AS profiler
    FROM nsysq_nvtx_ranges
)
SELECT hash(domain, CASE WHEN profiler THEN 'ProfilerStep#N' ELSE name END) AS h, kept, profiler
FROM folded
ORDER BY rid
