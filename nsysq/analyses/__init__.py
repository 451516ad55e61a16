"""One question about one trace per module: census, lineup, stakeout, timeline, info, graphs,
explain, nvtx."""
