-- name: graph_launches
-- version: 2
-- returns: one row: graph_launches, the CUDA API calls that launch a CUDA graph (cudaGraphLaunch*, cuGraphLaunch*; runtime and driver event classes 0 and 1 only), and node_kernels, the kernels that carry a graph id (graphNodeId or graphId: graphs traced per node, nsys --cuda-graph-trace=node). With graphs traced whole the kernels these launches ran are missing from the kernel table (CUPTI_ACTIVITY_KIND_GRAPH_TRACE holds the executions); with launches but neither, the graphs' GPU work is missing altogether.
-- tables: CUPTI_ACTIVITY_KIND_RUNTIME(eventClass, nameId), StringIds(id, value), CUPTI_ACTIVITY_KIND_KERNEL(graphNodeId, graphId)
-- params: none
-- dialect: portable
SELECT
    (SELECT count(*)
     FROM CUPTI_ACTIVITY_KIND_RUNTIME
     WHERE eventClass IN (0, 1)
       AND nameId IN (
           SELECT id FROM StringIds WHERE value LIKE 'cudaGraphLaunch%' OR value LIKE 'cuGraphLaunch%'
       )) AS graph_launches,
    (SELECT count(*)
     FROM CUPTI_ACTIVITY_KIND_KERNEL
     WHERE graphNodeId IS NOT NULL OR graphId IS NOT NULL) AS node_kernels
