-- name: iters_ranges
-- version: 1
-- returns: the kept NVTX ranges that are the iterations, in start order: rid, name, start, end. Chosen by tid, dom and lvl (NULL: any level) and by name: with profiler true every ProfilerStep#N range, else the ranges named range_name. nsysq iters numbers them (N of ProfilerStep#N, else 0-based).
-- tables: nsysq_nvtx_ranges (queries/nvtx/ranges.sql), nsysq_nvtx_stack (queries/nvtx/stack.sql)
-- params: tid (globalTid); dom (domain id); lvl (nesting level or NULL); profiler (boolean); range_name (the range name when profiler is false)
-- dialect: duckdb
SELECT r.rid, r.name, r.start, r."end"
FROM nsysq_nvtx_ranges AS r
JOIN nsysq_nvtx_stack AS s ON s.rid = r.rid
WHERE r.dropped IS NULL AND r.tid = $tid AND r.dom = $dom AND ($lvl IS NULL OR s.lvl = $lvl)
  AND CASE WHEN $profiler THEN regexp_matches(r.name, '^ProfilerStep#[0-9]+$') ELSE r.name = $range_name END
ORDER BY r.start, r.rid
