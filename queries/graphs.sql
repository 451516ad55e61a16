-- name: graphs
-- version: 1
-- returns: one row per CUDA graph: traced ('node': its kernels are in the kernel table with graphNodeId/graphId, nsys --cuda-graph-trace=node; 'graph': traced whole, one CUPTI_ACTIVITY_KIND_GRAPH_TRACE row per execution, the default), graph ('graph <graphId>'; node-traced kernels without graphId, before nsys 2025.5, as 'graph of node <lowest graphNodeId of a launch>'), graph_id, launches (one launch = the ops of one cudaGraphLaunch: same process, same correlationId), total_ns, med_ns, min_ns, max_ns (GPU time per launch = first op start to last op end; whole graphs: the execution's start to end), kernels_per_launch (median; NULL when traced whole), min_kernels, max_kernels, nvtx_range (the innermost NVTX push/pop or start/end range on the launching thread that contains the cudaGraphLaunch call, the most common one over the graph's launches), nvtx_launches (launches inside some range). Sorted by total time.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, correlationId, globalPid, graphNodeId, graphId), CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start, end, correlationId, globalPid, graphId), CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid, correlationId), NVTX_EVENTS(start, end, eventType, text, textId, globalTid, endGlobalTid), StringIds(id, value)
-- params: none
-- dialect: duckdb
WITH node_launches AS (  -- node mode: the kernels of one replay share the cudaGraphLaunch correlationId
    SELECT
        'node' AS traced, globalPid, correlationId, max(graphId) AS graph_id, min(graphNodeId) AS first_node,
        min(start) AS s, max("end") AS e, count(*) AS kernels
    FROM CUPTI_ACTIVITY_KIND_KERNEL
    WHERE graphNodeId IS NOT NULL OR graphId IS NOT NULL
    GROUP BY globalPid, correlationId
),
launches AS (
    SELECT * FROM node_launches
    UNION ALL
    SELECT 'graph', globalPid, correlationId, graphId, NULL, start, "end", NULL
    FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE
),
calls AS (  -- the launching call: runtime or driver API (eventClass 0, 1), same process
    SELECT l.traced, l.globalPid, l.correlationId, r.globalTid, r.start AS cs, r."end" AS ce
    FROM launches AS l
    JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r
      ON r.correlationId = l.correlationId AND (r.globalTid >> 24) = (l.globalPid >> 24)
    WHERE r.eventClass IN (0, 1)
),
ranges AS (
    SELECT n.globalTid, n.start, COALESCE(n."end", 9223372036854775807) AS e,
           COALESCE(n.text, t.value, '<unnamed range>') AS name
    FROM NVTX_EVENTS AS n
    LEFT JOIN StringIds AS t ON t.id = n.textId
    WHERE n.eventType IN (59, 60, 70, 71) AND n.endGlobalTid IS NULL
      AND n.globalTid IN (SELECT globalTid FROM calls)
),
at_launch AS (  -- innermost = the containing range that started last
    SELECT c.traced, c.globalPid, c.correlationId, arg_max(r.name, r.start) AS nvtx_range
    FROM calls AS c
    JOIN ranges AS r ON r.globalTid = c.globalTid AND r.start <= c.cs AND r.e >= c.ce
    GROUP BY c.traced, c.globalPid, c.correlationId
),
labelled AS (
    SELECT
        l.*, a.nvtx_range,
        CASE WHEN l.graph_id IS NOT NULL THEN 'graph ' || CAST(l.graph_id AS VARCHAR)
             ELSE 'graph of node ' || CAST(l.first_node AS VARCHAR) END AS graph
    FROM launches AS l
    LEFT JOIN at_launch AS a
      ON a.traced = l.traced AND a.globalPid IS NOT DISTINCT FROM l.globalPid
     AND a.correlationId IS NOT DISTINCT FROM l.correlationId
)
SELECT
    traced,
    graph,
    max(graph_id) AS graph_id,
    count(*) AS launches,
    sum(e - s) AS total_ns,
    median(e - s) AS med_ns,
    min(e - s) AS min_ns,
    max(e - s) AS max_ns,
    median(kernels) AS kernels_per_launch,
    min(kernels) AS min_kernels,
    max(kernels) AS max_kernels,
    mode(nvtx_range) AS nvtx_range,
    count(nvtx_range) AS nvtx_launches
FROM labelled
GROUP BY traced, graph
ORDER BY total_ns DESC, launches DESC, graph
