-- name: kernel_groups
-- version: 1
-- returns: one row per distinct combination of kernel name ids and launch configuration (shortName, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ, regs, ssm, dsm) with calls, total_ns, min_ns, max_ns, first_start, last_end: the single pass over the kernel table that nsys diff needs; nsysq keeps it as the temp table nsysq_kernel_groups.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(start, end, shortName, demangledName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory)
-- params: none
-- dialect: duckdb
SELECT
    shortName,
    demangledName,
    gridX, gridY, gridZ, blockX, blockY, blockZ,
    registersPerThread AS regs,
    staticSharedMemory AS ssm,
    dynamicSharedMemory AS dsm,
    count(*) AS calls,
    sum("end" - start) AS total_ns,
    min("end" - start) AS min_ns,
    max("end" - start) AS max_ns,
    min(start) AS first_start,
    max("end") AS last_end
FROM CUPTI_ACTIVITY_KIND_KERNEL
GROUP BY ALL
