/*
 * nsysq NVTX sums: the interface of _sweep.c, defined once.
 *
 * Included by _sweep.c (so the compiler checks the definitions against these prototypes) and by the
 * sanitizer harness tests/native/fuzz_sweep.c; tests/test_sweep_native.py parses the prototypes
 * below and checks them against the ctypes signatures in nsysq/analyses/nvtx_native.py.
 */
#ifndef NSYSQ_SWEEP_H
#define NSYSQ_SWEEP_H

#include <stdint.h>

#if defined(__GNUC__)
#define NSYSQ_API __attribute__((visibility("default")))
#else
#define NSYSQ_API
#endif

/* Raised whenever a prototype or the meaning of an argument changes: nvtx_native.py refuses a
 * library built from another version of this file (a stale build in a source tree). */
#define NSYSQ_SWEEP_ABI_VERSION 6

/* The columns of sums[k * n_ranges + r], per range r (column by column: each a numpy column). */
#define NSYSQ_SUM_KERNELS 0    /* ops of kind 0 (kernels) */
#define NSYSQ_SUM_MEMCPYS 1    /* kind 1 */
#define NSYSQ_SUM_MEMSETS 2    /* kind 2 */
#define NSYSQ_SUM_GRAPHS 3     /* kind 3 (graph executions) */
#define NSYSQ_SUM_KERNEL_NS 4  /* summed GPU durations of the kernels */
#define NSYSQ_SUM_GRAPH_NS 5   /* summed GPU durations of the graph executions */
#define NSYSQ_SUM_LOW 6        /* earliest GPU start */
#define NSYSQ_SUM_HIGH 7       /* latest GPU end */
#define NSYSQ_SUM_BUSY 8       /* the union of the ops' GPU intervals */
#define NSYSQ_SUMS 9

/* Error codes (negative returns). */
#define NSYSQ_SWEEP_BAD_INDEX (-1)  /* an index points outside its array */
#define NSYSQ_SWEEP_CYCLE (-2)      /* a parent chain longer than there are ranges */
#define NSYSQ_SWEEP_OVERFLOW (-3)   /* a sum or a difference does not fit in 64 bits */
#define NSYSQ_SWEEP_BAD_KIND (-4)   /* an op kind outside 0..3 */
#define NSYSQ_SWEEP_ORDER (-5)      /* a range's ops not in GPU start order */
#define NSYSQ_SWEEP_UNNESTED (-6)   /* ranges that overlap without nesting, or out of start order */

/*
 * The ops of one thread held by a picked range of one of its push/pop stacks (a --nvtx scope's
 * launches): each op's range is found as nsysq_nvtx_sums finds it, and chosen[op] is set to 1 when
 * that range, or one of its ancestors (not with innermost), is picked (picked[r] != 0, n_ranges
 * of them). The other arguments are nsysq_nvtx_sums'; the ops may come in any order.
 *
 * Returns the number of ops this call found held by a picked range, or a negative NSYSQ_SWEEP_
 * code.
 */
NSYSQ_API int64_t nsysq_nvtx_picked(const int64_t *ev_ts, const int32_t *ev_inner, int64_t n_ev,
                                    const int64_t *range_end, const int32_t *prid,
                                    const uint8_t *picked, int64_t n_ranges, const int32_t *ops,
                                    int64_t n_ops, const uint16_t *op_thread, int32_t thread,
                                    const int32_t *call_of, const int64_t *call_s,
                                    const int64_t *call_e, int64_t n_calls, int64_t n_all,
                                    int32_t innermost, uint8_t *chosen);

/*
 * The push/pop stacks, one sweep per stack with a stack of open ranges, as
 * nsysq.analyses.nvtx_sweep.build_stacks sorts their boundaries (queries/nvtx/marks.sql's order).
 *
 * The ranges: start and end, n_ranges each. The stacks: stack j's ranges are rows[stack_first[j] ..
 * stack_first[j + 1]) (indexes into start and end, in rid order: start ascending, outer first;
 * stack_first holds n_stacks + 1 positions, the last n_rows). Stack j's 2 (stack_first[j + 1] -
 * stack_first[j]) boundaries are written from 2 stack_first[j] on: ev_ts (the boundary's time),
 * ev_inner (the innermost range open after it, -1 for none) and ev_depth (the ranges open after
 * it). Ends come before starts at one time, an inner end before an outer one, and
 * a zero-length range ends right after it starts. Per range of rows: lvl (the ranges open when it
 * starts) and prid (the innermost of them, -1 for none); the others are not written. open: n_rows
 * int32 of scratch.
 *
 * Returns 0, or a negative NSYSQ_SWEEP_ code: NSYSQ_SWEEP_UNNESTED when a range outlasts the range
 * it starts in, ends before it starts, or starts before the range before it (the caller then sorts
 * the boundaries: only then do levels and depths disagree, and it counts where); the outputs are
 * then partial.
 */
NSYSQ_API int64_t nsysq_nvtx_stacks(const int64_t *start, const int64_t *end, int64_t n_ranges,
                                    const int32_t *rows, int64_t n_rows, const int64_t *stack_first,
                                    int64_t n_stacks, int32_t *open, int64_t *ev_ts, int32_t *ev_inner,
                                    int32_t *ev_depth, int64_t *lvl, int32_t *prid);

/*
 * Attribute the ops of one thread to the ranges of one of its push/pop stacks and add them to each
 * range's sums, as nsysq.analyses.nvtx_sweep's pairs and per-range rows do.
 *
 * The stack: n_ev boundaries, ev_ts (ascending) and ev_inner (the innermost open range after the
 * boundary, -1 when the stack is empty). The ranges: range_end and prid (parent, -1 for none), of
 * n_ranges each. The ops: ops[0..n_ops) are indexes into gs, ge and kind (n_all each), taken in
 * (GPU start, GPU end) order, those with op_thread[i] == thread alone (every one when op_thread is
 * NULL: the stack's thread launched them all); an op's launching call is call_of[op] (an index into call_s and
 * call_e, n_calls each), or the op itself when call_of is NULL (call_s and call_e then n_all).
 *
 * Per op: the last boundary at or before its call's start gives its innermost range; a range that
 * ends before the call does gives way to its parent, until one outlasts the call (none: the op is
 * not attributed on this stack). That range, and every ancestor unless innermost, gets the op:
 * sums[k * n_ranges + r] is updated (the caller zeroes it; a range's first op sets its LOW, HIGH
 * and BUSY) and attributed[op] set to 1. Since each range's ops come in GPU start order, BUSY
 * grows by the part of [gs, ge) past the latest end seen so far.
 *
 * Returns the number of (op, range) pairs, or a negative NSYSQ_SWEEP_ code (sums then partial).
 */
NSYSQ_API int64_t nsysq_nvtx_sums(const int64_t *ev_ts, const int32_t *ev_inner, int64_t n_ev,
                                  const int64_t *range_end, const int32_t *prid, int64_t n_ranges,
                                  const int32_t *ops, int64_t n_ops, const uint16_t *op_thread,
                                  int32_t thread, const int32_t *call_of,
                                  const int64_t *call_s, const int64_t *call_e, int64_t n_calls,
                                  const int64_t *gs, const int64_t *ge, const int8_t *kind,
                                  int64_t n_all, int32_t innermost, int64_t *sums,
                                  uint8_t *attributed);

/*
 * The launch key of each of n_calls CUDA calls (nsysq.iterations.launches' join of the GPU ops to
 * their launching calls): key[i] = (tid[i] >> 24) << 32 | corr[i], corr being corr_bytes (4 or 8)
 * wide signed integers.
 *
 * Returns 0 when every key fits (tid >= 0 with a process number tid >> 24 below 2^31, corr in
 * [0, 2^32)) and the keys increase strictly; NSYSQ_SWEEP_OVERFLOW when one does not fit,
 * NSYSQ_SWEEP_ORDER when they do not increase, NSYSQ_SWEEP_BAD_INDEX for another corr_bytes (key
 * then partial: the caller takes the numpy path).
 */
NSYSQ_API int64_t nsysq_call_keys(const int64_t *tid, const void *corr, int32_t corr_bytes,
                                  int64_t n_calls, int64_t *key);

/*
 * Each of n_ops GPU ops' launching call and GPU time. Op i has the key (pid >> 24) << 32 | corr
 * when its pid is a process id (low 24 bits 0, pid >= 0, pid >> 24 below 2^31) and its corr lies
 * in [0, 2^32); pid is pid[i * pid_step] (pid_step 0: one pid for every op), corr is corr_bytes (4
 * or 8) wide. The key is looked up among the calls' n_calls strictly increasing keys: through
 * table (table_len entries, table[key - low] the call's index or -1) when table is not NULL, else
 * by binary search.
 *
 * Writes op_call[i] (the call's index, -1 for no key or no call with it) and op_ns[i] = max(e - s,
 * 0); for a found call, adds e - s to call_gpu[call] (the caller zeroes it) and sets launched[call]
 * to 1. Returns the number of ops found a call, or NSYSQ_SWEEP_OVERFLOW when an e - s or a sum
 * does not fit, NSYSQ_SWEEP_BAD_INDEX when a table entry points outside the calls or corr_bytes or
 * pid_step is another value (outputs then partial).
 */
NSYSQ_API int64_t nsysq_launch_ops(const int64_t *key, int64_t n_calls, const int32_t *table,
                                   int64_t low, int64_t table_len, const int64_t *pid,
                                   int64_t pid_step, const void *corr, int32_t corr_bytes,
                                   const int64_t *s, const int64_t *e, int64_t n_ops,
                                   int64_t *op_call, int64_t *op_ns, int64_t *call_gpu,
                                   uint8_t *launched);

/* NSYSQ_SWEEP_ABI_VERSION of the source this library was built from. */
NSYSQ_API int32_t nsysq_sweep_abi_version(void);

#endif
