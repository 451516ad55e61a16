"""GPU time as intervals: the GPU ops, busy time, gaps and their causes, compute/communication
overlap."""
