-- name: kernel_short_names
-- version: 1
-- returns: the distinct short names of the kernels (StringIds value of shortName; kernels whose id is missing from StringIds are left out), one row each, ordered by name: the names `nsysq stakeout` suggests when no kernel matches.
-- tables: CUPTI_ACTIVITY_KIND_KERNEL(shortName), StringIds(id, value)
-- params: none
-- dialect: portable
SELECT DISTINCT s.value AS name
FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
JOIN StringIds AS s ON s.id = k.shortName
ORDER BY name
