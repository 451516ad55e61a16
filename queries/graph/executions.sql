-- name: graph_executions
-- version: 1
-- returns: one row: executions (CUDA graph executions traced whole, one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row each: nsys --cuda-graph-trace=graph, the default), graphs (distinct graphId), graph_ns (sum of their GPU spans, end - start). The kernels of these executions are not in the kernel table; census, lineup, timeline and gaps show the executions as 'graph <graphId>' rows instead.
-- tables: CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, graphId)
-- params: none
-- dialect: duckdb
SELECT
    count(*) AS executions,
    count(DISTINCT graphId) AS graphs,
    COALESCE(sum("end" - start), 0) AS graph_ns
FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
