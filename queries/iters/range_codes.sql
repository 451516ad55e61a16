-- name: iters_range_codes
-- version: 1
-- returns: every range row of nsysq_nvtx_ranges in rid order: code (its (domain, step name) among queries/iters/range_names.sql's, -1 for a range not kept) and profiler (its name is a PyTorch ProfilerStep#<number>). nsysq iters groups the candidate step ranges by it (nsysq.iterations.candidates: queries/iters/candidates.sql's groups).
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql)
-- params: none
-- dialect: duckdb
WITH codes AS (
    SELECT row_number() OVER (ORDER BY domain, name) - 1 AS code, domain, name
    FROM (SELECT DISTINCT domain, nsysq_step_name(name) AS name FROM nsysq_nvtx_ranges WHERE dropped IS NULL)
)
SELECT COALESCE(c.code, -1) AS code, regexp_matches(r.name, '^ProfilerStep#[0-9]+$') AS profiler
FROM nsysq_nvtx_ranges AS r
LEFT JOIN codes AS c ON r.dropped IS NULL AND c.domain = r.domain AND c.name = nsysq_step_name(r.name)
ORDER BY r.rid
