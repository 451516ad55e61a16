-- name: launch_sm_counts
-- version: 1
-- returns: one row: known_devices (the (process, CUDA device) pairs of the kernel table whose GPU's SM count the export gives), devices (all such pairs), sms (the SM count when every known pair has the same one, else NULL).
-- tables: nsysq_launch_devices (queries/launch/devices.sql), CUPTI_ACTIVITY_KIND_KERNEL(globalPid, deviceId), TARGET_INFO_GPU, TARGET_INFO_CUDA_GPU, TARGET_INFO_CUDA_DEVICE
-- params: none
-- dialect: duckdb
SELECT
    count(sms) AS known_devices,
    count(*) AS devices,
    CASE WHEN count(DISTINCT sms) = 1 THEN min(sms) END AS sms
FROM nsysq_launch_devices
