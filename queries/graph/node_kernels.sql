-- name: graph_node_kernels
-- version: 1
-- returns: one row: node_kernels, the kernels that carry a graph id (graphNodeId or graphId): CUDA graphs traced per node (nsys --cuda-graph-trace=node), whose replays are ordinary kernel rows. nsysq info reads it when cudaGraphLaunch calls exist but no graph execution was traced, to tell "traced per node" from "not traced at all".
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(graphNodeId, graphId)
-- params: none
-- dialect: duckdb
SELECT count(*) AS node_kernels
FROM CUPTI_ACTIVITY_KIND_KERNEL
WHERE graphNodeId IS NOT NULL OR graphId IS NOT NULL
