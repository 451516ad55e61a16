-- name: iters_streams
-- version: 1
-- returns: one row per (process, device, stream) with kernels: pid (globalPid), dev (deviceId), stream (streamId), kernels, kernel_ns; the most kernel time first. nsysq iters splits a trace without usable NVTX by the period of the kernel names on the first stream.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, streamId, globalPid)
-- params: none
-- dialect: duckdb
SELECT globalPid AS pid, deviceId AS dev, streamId AS stream, count(*) AS kernels,
       sum(greatest("end" - start, 0)) AS kernel_ns
FROM CUPTI_ACTIVITY_KIND_KERNEL
WHERE start IS NOT NULL AND "end" IS NOT NULL AND deviceId IS NOT NULL AND streamId IS NOT NULL
GROUP BY ALL
ORDER BY kernel_ns DESC, kernels DESC, pid, dev, stream
