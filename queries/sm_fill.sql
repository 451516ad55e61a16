-- name: sm_fill
-- version: 1
-- returns: no rows: defines the macro nsysq_sm_fill_pct(blocks, sms), the share of the GPU's SMs a launch of that many thread blocks can keep busy at once: 100 x min(blocks, sms) / sms (NULL when either is unknown or sms is 0). A launch is under-filled when it is below 50. stakeout, census, lineup, the under-filled view and diff call it.
-- tables: none
-- params: none
-- dialect: duckdb
CREATE OR REPLACE TEMP MACRO nsysq_sm_fill_pct(blocks, sms) AS
    CASE WHEN sms > 0 AND blocks IS NOT NULL THEN 100.0 * least(blocks, sms) / sms END
