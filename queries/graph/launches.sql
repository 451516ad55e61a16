-- name: graph_launches
-- version: 1
-- returns: one row: graph_launches, the CUDA API calls that launch a CUDA graph (cudaGraphLaunch*, cuGraphLaunch*; runtime and driver event classes 0 and 1 only). With graphs traced whole, the kernels these launches ran are missing from the kernel table.
-- tables: CUPTI_ACTIVITY_KIND_RUNTIME(eventClass, nameId), StringIds(id, value)
-- params: none
-- dialect: portable
SELECT count(*) AS graph_launches
FROM CUPTI_ACTIVITY_KIND_RUNTIME
WHERE eventClass IN (0, 1)
  AND nameId IN (
      SELECT id FROM StringIds WHERE value LIKE 'cudaGraphLaunch%' OR value LIKE 'cuGraphLaunch%'
  )
