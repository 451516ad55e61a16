-- name: launch_dims
-- version: 1
-- returns: no rows: defines the macro nsysq_dims(x, y, z), the product of a launch's three dimensions (gridX x gridY x gridZ = thread blocks, blockX x blockY x blockZ = threads per block) as a BIGINT. The export stores each dimension as a 32-bit integer and DuckDB multiplies 32-bit integers in 32 bits, so a grid of 65536 x 32768 blocks would stop the query with an overflow error; in 64 bits the product is exact for every grid CUDA allows (x < 2^31, y and z < 2^16). stakeout, census, lineup, launch_configs and the under-filled view call it.
-- tables: none
-- params: none
-- dialect: duckdb
CREATE OR REPLACE TEMP MACRO nsysq_dims(x, y, z) AS CAST(x AS BIGINT) * y * z
