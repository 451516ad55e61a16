-- name: nvtx_pairs
-- version: 1
-- returns: one row (oid, rid) per GPU operation and kept range it is attributed to by its launching call: with innermost false, every enclosing range (nsys's projection: the innermost range of each domain and all its ancestors, plus start/end ranges holding the call); with innermost true, only the innermost push/pop range of each domain (plus start/end ranges holding the call, which sit on no stack). nsysq keeps it as the temp table nsysq_nvtx_pairs.
-- tables: nsysq_nvtx_inner (queries/nvtx/inner.sql), nsysq_nvtx_ancestors (queries/nvtx/ancestors.sql)
-- params: innermost (boolean)
-- dialect: duckdb
SELECT i.oid, a.anc AS rid
FROM nsysq_nvtx_inner AS i
JOIN nsysq_nvtx_ancestors AS a ON a.rid = i.rid
WHERE NOT $innermost OR a.anc = i.rid
