/*
 * nsysq NVTX sums: each push/pop range's GPU work in one pass over a thread's ops, no pairs.
 *
 * Called through ctypes from nsysq/analyses/nvtx_native.py; the interface is _sweep.h. The numpy
 * path (nsysq.analyses.nvtx_sweep: attributed_pairs, then per_range) writes every (op, range) pair,
 * sorts them by range and reduces; here each op walks its innermost range's ancestor chain and
 * adds itself to each range's running sums, so nothing as long as the pairs is ever written. The
 * arrays come from nsysq's own decoding of an untrusted file: every index is checked against its
 * array and every parent chain is bounded, so bad input yields an error code, never a read or write
 * outside an array.
 */
#include "_sweep.h"

#include <stddef.h>

/* The last boundary at or before t (ev_ts ascending), -1 when none: numpy's
 * searchsorted(ev_ts, t, side="right") - 1. */
static int64_t last_at_or_before(const int64_t *ev_ts, int64_t n_ev, int64_t t) {
    int64_t lo = 0, hi = n_ev;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (ev_ts[mid] <= t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo - 1;
}

/* The range an op launched at [s, e] goes to on this stack: the innermost range open at s, or the
 * deepest enclosing one that lasts to e; -1 for none, or a negative code below -1 on bad input. */
static int64_t outlasting(const int64_t *ev_ts, const int32_t *ev_inner, int64_t n_ev,
                          const int64_t *range_end, const int32_t *prid, int64_t n_ranges, int64_t s,
                          int64_t e) {
    const int64_t at = last_at_or_before(ev_ts, n_ev, s);
    if (at < 0) return -1;
    int64_t r = ev_inner[at];
    for (int64_t steps = 0; r >= 0; steps++) {
        if (r >= n_ranges) return NSYSQ_SWEEP_BAD_INDEX - 1;
        if (steps > n_ranges) return NSYSQ_SWEEP_CYCLE - 1;
        if (range_end[r] >= e) return r;
        r = prid[r];
    }
    return -1;
}

/* Add op [g0, g1) of kind k to range r's sums (row[k * n] its column k); 0, or a negative
 * NSYSQ_SWEEP_ code. */
static int64_t add_op(int64_t *row, int64_t n, int64_t g0, int64_t g1, int8_t k) {
    int64_t dur, past;
    if (__builtin_sub_overflow(g1, g0, &dur)) return NSYSQ_SWEEP_OVERFLOW;
    const int first = row[NSYSQ_SUM_KERNELS * n] + row[NSYSQ_SUM_MEMCPYS * n] + row[NSYSQ_SUM_MEMSETS * n] +
                          row[NSYSQ_SUM_GRAPHS * n] ==
                      0;
    if (!first && g0 < row[NSYSQ_SUM_LOW * n]) return NSYSQ_SWEEP_ORDER;
    row[k * n] += 1;
    if (k == 0 && __builtin_add_overflow(row[NSYSQ_SUM_KERNEL_NS * n], dur, &row[NSYSQ_SUM_KERNEL_NS * n]))
        return NSYSQ_SWEEP_OVERFLOW;
    if (k == 3 && __builtin_add_overflow(row[NSYSQ_SUM_GRAPH_NS * n], dur, &row[NSYSQ_SUM_GRAPH_NS * n]))
        return NSYSQ_SWEEP_OVERFLOW;
    if (first) {
        row[NSYSQ_SUM_LOW * n] = g0;
        row[NSYSQ_SUM_HIGH * n] = g1;
        row[NSYSQ_SUM_BUSY * n] = dur > 0 ? dur : 0;
        return 0;
    }
    const int64_t from = g0 > row[NSYSQ_SUM_HIGH * n] ? g0 : row[NSYSQ_SUM_HIGH * n];
    if (__builtin_sub_overflow(g1, from, &past)) return NSYSQ_SWEEP_OVERFLOW;
    if (past > 0 && __builtin_add_overflow(row[NSYSQ_SUM_BUSY * n], past, &row[NSYSQ_SUM_BUSY * n]))
        return NSYSQ_SWEEP_OVERFLOW;
    if (g1 > row[NSYSQ_SUM_HIGH * n]) row[NSYSQ_SUM_HIGH * n] = g1;
    return 0;
}

/* The launching call of op ops[i] (its index into call_s and call_e), -1 when it has none or is
 * another thread's, or a negative code below -1 on bad input. */
static int64_t call_of_op(const int32_t *ops, int64_t i, const uint16_t *op_thread, int32_t thread,
                          const int32_t *call_of, int64_t n_calls, int64_t n_all) {
    if (op_thread != NULL && op_thread[i] != thread) return -1;
    const int64_t op = ops[i];
    if (op < 0 || op >= n_all) return NSYSQ_SWEEP_BAD_INDEX - 1;
    const int64_t call = call_of != NULL ? call_of[op] : op;
    if (call >= (call_of != NULL ? n_calls : n_all)) return NSYSQ_SWEEP_BAD_INDEX - 1;
    return call < 0 ? -1 : call;
}

int64_t nsysq_nvtx_sums(const int64_t *ev_ts, const int32_t *ev_inner, int64_t n_ev,
                        const int64_t *range_end, const int32_t *prid, int64_t n_ranges,
                        const int32_t *ops, int64_t n_ops, const uint16_t *op_thread,
                        int32_t thread, const int32_t *call_of,
                        const int64_t *call_s, const int64_t *call_e, int64_t n_calls,
                        const int64_t *gs, const int64_t *ge, const int8_t *kind, int64_t n_all,
                        int32_t innermost, int64_t *sums, uint8_t *attributed) {
    int64_t pairs = 0;
    for (int64_t i = 0; i < n_ops; i++) {
        const int64_t call = call_of_op(ops, i, op_thread, thread, call_of, n_calls, n_all);
        if (call < -1) return call + 1;
        if (call < 0) continue; /* another thread's op, or one with no launching call */
        const int64_t op = ops[i];
        const int8_t k = kind[op];
        if (k < 0 || k > 3) return NSYSQ_SWEEP_BAD_KIND;
        int64_t r = outlasting(ev_ts, ev_inner, n_ev, range_end, prid, n_ranges, call_s[call],
                               call_e[call]);
        if (r < -1) return r + 1;
        if (r < 0) continue;
        attributed[op] = 1;
        for (int64_t steps = 0; r >= 0; steps++) {
            if (r >= n_ranges) return NSYSQ_SWEEP_BAD_INDEX;
            if (steps > n_ranges) return NSYSQ_SWEEP_CYCLE;
            const int64_t failed = add_op(sums + r, n_ranges, gs[op], ge[op], k);
            if (failed < 0) return failed;
            pairs++;
            if (innermost) break;
            r = prid[r];
        }
    }
    return pairs;
}

int64_t nsysq_nvtx_picked(const int64_t *ev_ts, const int32_t *ev_inner, int64_t n_ev,
                          const int64_t *range_end, const int32_t *prid, const uint8_t *picked,
                          int64_t n_ranges, const int32_t *ops, int64_t n_ops,
                          const uint16_t *op_thread, int32_t thread, const int32_t *call_of,
                          const int64_t *call_s, const int64_t *call_e, int64_t n_calls,
                          int64_t n_all, int32_t innermost, uint8_t *chosen) {
    int64_t found = 0;
    for (int64_t i = 0; i < n_ops; i++) {
        const int64_t call = call_of_op(ops, i, op_thread, thread, call_of, n_calls, n_all);
        if (call < -1) return call + 1;
        if (call < 0) continue;
        int64_t r = outlasting(ev_ts, ev_inner, n_ev, range_end, prid, n_ranges, call_s[call],
                               call_e[call]);
        if (r < -1) return r + 1;
        for (int64_t steps = 0; r >= 0; steps++) {
            if (r >= n_ranges) return NSYSQ_SWEEP_BAD_INDEX;
            if (steps > n_ranges) return NSYSQ_SWEEP_CYCLE;
            if (picked[r]) {
                chosen[ops[i]] = 1;
                found++;
                break;
            }
            if (innermost) break;
            r = prid[r];
        }
    }
    return found;
}

/* One boundary of the sweep: at time ts, with `depth` ranges open after it, the innermost
 * of them `inner`. */
static void boundary(int64_t *ev_ts, int32_t *ev_inner, int32_t *ev_depth, int64_t at, int64_t ts,
                     int32_t inner, int64_t depth) {
    ev_ts[at] = ts;
    ev_inner[at] = inner;
    ev_depth[at] = (int32_t)depth;
}

int64_t nsysq_nvtx_stacks(const int64_t *start, const int64_t *end, int64_t n_ranges,
                          const int32_t *rows, int64_t n_rows, const int64_t *stack_first,
                          int64_t n_stacks, int32_t *open, int64_t *ev_ts, int32_t *ev_inner,
                          int32_t *ev_depth, int64_t *lvl, int32_t *prid) {
    for (int64_t j = 0; j < n_stacks; j++) {
        const int64_t lo = stack_first[j], hi = stack_first[j + 1];
        if (lo < 0 || hi < lo || hi > n_rows) return NSYSQ_SWEEP_BAD_INDEX;
        int64_t top = 0, out = 2 * lo;
        for (int64_t i = lo; i < hi; i++) {
            const int32_t r = rows[i];
            if (r < 0 || r >= n_ranges) return NSYSQ_SWEEP_BAD_INDEX;
            const int64_t s = start[r], e = end[r];
            if (e < s || (i > lo && s < start[rows[i - 1]])) return NSYSQ_SWEEP_UNNESTED;
            while (top > 0 && end[open[top - 1]] <= s) { /* ends at or before this start: first */
                top--;
                const int32_t inner = top > 0 ? open[top - 1] : -1;
                boundary(ev_ts, ev_inner, ev_depth, out++, end[open[top]], inner, top);
            }
            if (top > 0 && e > end[open[top - 1]]) return NSYSQ_SWEEP_UNNESTED;
            lvl[r] = top;
            prid[r] = top > 0 ? open[top - 1] : -1;
            open[top++] = r;
            boundary(ev_ts, ev_inner, ev_depth, out++, s, r, top);
        }
        while (top > 0) {
            top--;
            const int32_t inner = top > 0 ? open[top - 1] : -1;
            boundary(ev_ts, ev_inner, ev_depth, out++, end[open[top]], inner, top);
        }
    }
    return 0;
}

/* Element i of a corr_bytes (4 or 8) wide signed column. */
static int64_t wide(const void *column, int32_t bytes, int64_t i) {
    return bytes == 4 ? (int64_t)((const int32_t *)column)[i] : ((const int64_t *)column)[i];
}

/* The launch key of a process number and correlation id, -1 when either does not fit. */
static int64_t launch_key(int64_t process, int64_t corr) {
    if (process < 0 || process >= ((int64_t)1 << 31) || corr < 0 || corr >= ((int64_t)1 << 32)) return -1;
    return (int64_t)((uint64_t)process << 32) | corr;
}

int64_t nsysq_call_keys(const int64_t *tid, const void *corr, int32_t corr_bytes, int64_t n_calls,
                        int64_t *key) {
    if (corr_bytes != 4 && corr_bytes != 8) return NSYSQ_SWEEP_BAD_INDEX;
    for (int64_t i = 0; i < n_calls; i++) {
        const int64_t k = tid[i] < 0 ? -1 : launch_key(tid[i] >> 24, wide(corr, corr_bytes, i));
        if (k < 0) return NSYSQ_SWEEP_OVERFLOW;
        if (i > 0 && k <= key[i - 1]) return NSYSQ_SWEEP_ORDER;
        key[i] = k;
    }
    return 0;
}

/* The index of the call with key k among the n increasing keys, -1 when none. */
static int64_t call_with(const int64_t *key, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (key[mid] < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && key[lo] == k ? lo : -1;
}

int64_t nsysq_launch_ops(const int64_t *key, int64_t n_calls, const int32_t *table, int64_t low,
                         int64_t table_len, const int64_t *pid, int64_t pid_step, const void *corr,
                         int32_t corr_bytes, const int64_t *s, const int64_t *e, int64_t n_ops,
                         int64_t *op_call, int64_t *op_ns, int64_t *call_gpu, uint8_t *launched) {
    if ((corr_bytes != 4 && corr_bytes != 8) || (pid_step != 0 && pid_step != 1)) return NSYSQ_SWEEP_BAD_INDEX;
    int64_t found = 0;
    for (int64_t i = 0; i < n_ops; i++) {
        const int64_t p = pid[i * pid_step];
        int64_t d, call = -1;
        if (__builtin_sub_overflow(e[i], s[i], &d)) return NSYSQ_SWEEP_OVERFLOW;
        op_ns[i] = d > 0 ? d : 0;
        const int64_t k = (p & 16777215) != 0 || p < 0 ? -1 : launch_key(p >> 24, wide(corr, corr_bytes, i));
        if (k >= 0 && table != NULL) {
            int64_t at;
            if (__builtin_sub_overflow(k, low, &at)) return NSYSQ_SWEEP_BAD_INDEX;
            call = at >= 0 && at < table_len ? table[at] : -1;
            if (call >= n_calls || (call >= 0 && key[call] != k)) return NSYSQ_SWEEP_BAD_INDEX;
        } else if (k >= 0) {
            call = call_with(key, n_calls, k);
        }
        op_call[i] = call;
        if (call < 0) continue;
        if (__builtin_add_overflow(call_gpu[call], d, &call_gpu[call])) return NSYSQ_SWEEP_OVERFLOW;
        launched[call] = 1;
        found++;
    }
    return found;
}

int32_t nsysq_sweep_abi_version(void) {
    return NSYSQ_SWEEP_ABI_VERSION;
}
