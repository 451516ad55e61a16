/*
 * Sanitizer harness for nsysq/analyses/_sweep.c (tests/test_sanitizers.py builds it with
 * -fsanitize=address,undefined and the wheel build's warnings-as-errors flags).
 *
 * Each round makes random stacks, parents, ops and calls, every array in a heap block of exactly its
 * length (so AddressSanitizer sees one element past it), with indexes that now and then point
 * outside their array, parents in cycles, kinds outside 0..3, ops out of order, thread codes of
 * other threads and timestamps near the int64 limits; and calls nsysq_nvtx_sums and
 * nsysq_nvtx_picked on them, then nsysq_nvtx_stacks on random ranges. It counts the
 * outcomes (pairs or each error code) and prints them; a sanitizer report makes it exit non-zero.
 *
 *   fuzz_sweep ROUNDS SEED
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "_sweep.h"

static uint64_t state;

static uint64_t next(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

/* A value in [lo, hi]. */
static int64_t between(int64_t lo, int64_t hi) {
    return lo + (int64_t)(next() % (uint64_t)(hi - lo + 1));
}

static int chance(int percent) {
    return between(0, 99) < percent;
}

static void *block(int64_t n, size_t size) {
    void *p = malloc((size_t)(n > 0 ? n : 1) * size);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* An index into an array of n (-1 now and then, past the end rarely). */
static int32_t index_into(int64_t n, int bad) {
    if (bad && chance(3)) return (int32_t)(n + between(0, 3));
    if (chance(5) || n == 0) return -1;
    return (int32_t)between(0, n - 1);
}

static int64_t round_once(int64_t counts[8]) {
    const int bad = chance(50);
    const int64_t n_ranges = between(0, 60), n_ev = between(0, 120), n_all = between(0, 200);
    const int64_t n_calls = between(0, 200), n_ops = between(0, n_all + 10);
    const int64_t wide = chance(10) ? INT64_MAX / 2 : 1000;
    int64_t *ev_ts = block(n_ev, sizeof *ev_ts), *range_end = block(n_ranges, sizeof *range_end);
    int32_t *ev_inner = block(n_ev, sizeof *ev_inner), *prid = block(n_ranges, sizeof *prid);
    int32_t *ops = block(n_ops, sizeof *ops), *call_of = block(n_all, sizeof *call_of);
    uint16_t *op_thread = block(n_ops, sizeof *op_thread);
    int64_t *call_s = block(n_calls, sizeof *call_s), *call_e = block(n_calls, sizeof *call_e);
    int64_t *gs = block(n_all, sizeof *gs), *ge = block(n_all, sizeof *ge);
    int8_t *kind = block(n_all, sizeof *kind);
    int64_t *sums = calloc((size_t)(NSYSQ_SUMS * (n_ranges > 0 ? n_ranges : 1)), sizeof *sums);
    uint8_t *attributed = calloc((size_t)(n_all > 0 ? n_all : 1), 1);
    int64_t t = -wide;
    for (int64_t i = 0; i < n_ev; i++) {
        t += between(0, 5);
        ev_ts[i] = t;
        ev_inner[i] = index_into(n_ranges, bad);
    }
    for (int64_t r = 0; r < n_ranges; r++) {
        range_end[r] = between(-wide, wide);
        prid[r] = bad && chance(10) ? index_into(n_ranges, bad) : (r > 0 && chance(70) ? (int32_t)between(0, r - 1) : -1);
    }
    for (int64_t k = 0; k < n_all; k++) {
        gs[k] = between(-wide, wide);
        ge[k] = gs[k] + between(-2, 50);
        if (wide > 1000 && chance(5)) {  /* an interval as wide as int64 allows: its length overflows */
            gs[k] = INT64_MIN + between(0, 1000);
            ge[k] = INT64_MAX - between(0, 1000);
        }
        kind[k] = bad && chance(2) ? (int8_t)between(-3, 9) : (int8_t)between(0, 3);
        call_of[k] = n_calls > 0 ? index_into(n_calls, bad) : -1;
    }
    for (int64_t i = 0; i < n_ops; i++) {
        ops[i] = n_all > 0 ? index_into(n_all, bad) : (int32_t)between(-1, 2);
        if (ops[i] < 0 && !bad) ops[i] = 0;
        op_thread[i] = (uint16_t)between(0, 2);
    }
    for (int64_t c = 0; c < n_calls; c++) {
        call_s[c] = between(-wide, wide);
        call_e[c] = call_s[c] + between(0, 40);
    }
    const int by_call = chance(60);
    const int64_t got = nsysq_nvtx_sums(
        ev_ts, ev_inner, n_ev, range_end, prid, n_ranges, ops, n_ops, chance(50) ? op_thread : NULL,
        (int32_t)between(0, 2), by_call ? call_of : NULL, by_call ? call_s : gs, by_call ? call_e : ge,
        by_call ? n_calls : n_all, gs, ge, kind, n_all, (int32_t)chance(30), sums, attributed);
    counts[got >= 0 ? 0 : (-got < 8 ? -got : 7)]++;
    uint8_t *picked = block(n_ranges, sizeof *picked);
    for (int64_t r = 0; r < n_ranges; r++) picked[r] = (uint8_t)chance(30);
    const int64_t chose = nsysq_nvtx_picked(
        ev_ts, ev_inner, n_ev, range_end, prid, picked, n_ranges, ops, n_ops, chance(50) ? op_thread : NULL,
        (int32_t)between(0, 2), by_call ? call_of : NULL, by_call ? call_s : gs, by_call ? call_e : ge,
        by_call ? n_calls : n_all, n_all, (int32_t)chance(30), attributed);
    counts[6] += chose > 0;
    free(picked);
    free(ev_ts), free(range_end), free(ev_inner), free(prid), free(ops), free(call_of);
    free(op_thread), free(call_s), free(call_e), free(gs), free(ge), free(kind), free(sums);
    free(attributed);
    return got;
}

/* nsysq_nvtx_stacks on random ranges: nested ones mostly, with stacks out of bounds, rows out of
 * their array, ranges out of order, reversed or unnested now and then. Returns its code. */
static int64_t stacks_once(void) {
    const int bad = chance(30);
    const int64_t n_ranges = between(0, 80), n_rows = between(0, n_ranges), n_stacks = between(0, 4);
    int64_t *start = block(n_ranges, sizeof *start), *end = block(n_ranges, sizeof *end);
    int32_t *rows = block(n_rows, sizeof *rows), *open = block(n_rows, sizeof *open);
    int64_t *first = block(n_stacks + 1, sizeof *first), *lvl = block(n_ranges, sizeof *lvl);
    int64_t *ev_ts = block(2 * n_rows, sizeof *ev_ts);
    int32_t *ev_inner = block(2 * n_rows, sizeof *ev_inner), *ev_depth = block(2 * n_rows, sizeof *ev_depth);
    int32_t *prid = block(n_ranges, sizeof *prid);
    int64_t t = 0;
    for (int64_t r = 0; r < n_ranges; r++) { /* nested: each inside the one before, or after it */
        t += between(0, 3);
        start[r] = t;
        end[r] = r > 0 && chance(60) ? start[r] + (end[r - 1] - start[r]) / 2 : t + between(0, 20);
        if (bad && chance(5)) end[r] = start[r] - 1;
    }
    for (int64_t i = 0; i < n_rows; i++) rows[i] = bad && chance(3) ? index_into(n_ranges, 1) : (int32_t)i;
    for (int64_t j = 0; j <= n_stacks; j++) first[j] = j == n_stacks ? n_rows : between(0, n_rows);
    for (int64_t j = 1; j <= n_stacks && !(bad && chance(20)); j++)
        if (first[j] < first[j - 1]) first[j] = first[j - 1];
    if (n_stacks > 0 && !bad) first[0] = 0;
    const int64_t got = nsysq_nvtx_stacks(start, end, n_ranges, rows, n_rows, first, n_stacks, open, ev_ts,
                                          ev_inner, ev_depth, lvl, prid);
    free(start), free(end), free(rows), free(open), free(first), free(lvl), free(ev_ts);
    free(ev_inner), free(ev_depth), free(prid);
    return got;
}

/* nsysq_call_keys and nsysq_launch_ops on random calls and ops: keys increasing mostly, thread ids
 * and correlation ids now and then out of the key's range, 4- or 8-byte ids (a bad width rarely), a
 * table that misses calls, points past them or at a call of another key, one pid or one per op,
 * durations that overflow. Returns nsysq_launch_ops' result (or nsysq_call_keys' code). */
static int64_t launch_once(void) {
    const int bad = chance(30);
    const int64_t n_calls = between(0, 120), n_ops = between(0, 150), wide_ts = chance(10) ? INT64_MAX : 1000;
    const int32_t bytes = bad && chance(3) ? (int32_t)between(0, 9) : (chance(50) ? 4 : 8);
    int64_t *tid = block(n_calls, sizeof *tid), *key = block(n_calls, sizeof *key);
    int64_t *call_corr = block(n_calls, 8), *op_corr = block(n_ops, 8), *pid = block(n_ops, sizeof *pid);
    int64_t *s = block(n_ops, sizeof *s), *e = block(n_ops, sizeof *e), *op_call = block(n_ops, sizeof *op_call);
    int64_t *op_ns = block(n_ops, sizeof *op_ns), *gpu = calloc((size_t)(n_calls > 0 ? n_calls : 1), 8);
    uint8_t *launched = calloc((size_t)(n_calls > 0 ? n_calls : 1), 1);
    int64_t corr = 0;
    for (int64_t i = 0; i < n_calls; i++) {
        corr += bad && chance(5) ? between(-3, 3) : between(1, 3);
        tid[i] = (between(0, 2) << 24) | between(0, 5);
        if (bad && chance(3)) tid[i] = chance(50) ? -1 : INT64_MAX;
        if (bad && chance(3)) corr = chance(50) ? -1 : ((int64_t)1 << 32);
        if (bytes == 4) ((int32_t *)call_corr)[i] = (int32_t)corr; else call_corr[i] = corr;
    }
    for (int64_t i = 0; i < n_ops; i++) {
        pid[i] = chance(90) ? between(0, 2) << 24 : between(-5, 5);
        const int64_t c = between(-2, corr + 3);
        if (bytes == 4) ((int32_t *)op_corr)[i] = (int32_t)c; else op_corr[i] = c;
        s[i] = between(-wide_ts / 2, wide_ts / 2);
        e[i] = chance(5) ? (chance(50) ? INT64_MAX : INT64_MIN) : s[i] + between(-2, 50);
    }
    int64_t got = nsysq_call_keys(tid, call_corr, bytes, n_calls, key);
    if (got == 0) {
        const int64_t low = n_calls > 0 ? key[0] : 0, span = n_calls > 0 ? key[n_calls - 1] - low + 1 : 0;
        const int64_t table_len = chance(40) || span > 4 * n_calls + 64 ? 0 : span;
        int32_t *table = block(table_len, sizeof *table);
        for (int64_t k = 0; k < table_len; k++) table[k] = -1;
        for (int64_t i = 0; i < n_calls && table_len > 0; i++) table[key[i] - low] = (int32_t)i;
        for (int64_t k = 0; bad && k < table_len; k++)
            if (chance(5)) table[k] = (int32_t)between(-2, n_calls + 2);
        got = nsysq_launch_ops(key, n_calls, table_len > 0 ? table : NULL, bad && chance(5) ? INT64_MIN : low,
                               table_len, pid, chance(50) ? 1 : (bad && chance(5) ? 2 : 0), op_corr, bytes, s, e,
                               n_ops, op_call, op_ns, gpu, launched);
        free(table);
    } else {
        got = got - 100; /* the keys refused: counted apart */
    }
    free(tid), free(key), free(call_corr), free(op_corr), free(pid), free(s), free(e), free(op_call);
    free(op_ns), free(gpu), free(launched);
    return got;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: fuzz_sweep ROUNDS SEED\n");
        return 2;
    }
    const long rounds = strtol(argv[1], NULL, 10);
    state = (uint64_t)strtoull(argv[2], NULL, 10) | 1;
    int64_t counts[8] = {0}; /* [0] summed, [1..5] each error, [6] picked some */
    int64_t pairs = 0;
    int64_t stacked = 0, unnested = 0, refused = 0, matched = 0, unkeyed = 0, join_refused = 0;
    for (long i = 0; i < rounds; i++) {
        const int64_t got = round_once(counts);
        if (got > 0) pairs += got;
        const int64_t swept = stacks_once();
        stacked += swept == 0, unnested += swept == NSYSQ_SWEEP_UNNESTED;
        refused += swept == NSYSQ_SWEEP_BAD_INDEX;
        const int64_t joined = launch_once();
        matched += joined > 0, unkeyed += joined < -50, join_refused += joined < 0 && joined > -50;
    }
    printf("summed=%" PRId64 " pairs=%" PRId64 " bad_index=%" PRId64 " cycle=%" PRId64
           " overflow=%" PRId64 " bad_kind=%" PRId64 " order=%" PRId64 "\n",
           counts[0], pairs, counts[1], counts[2], counts[3], counts[4], counts[5]);
    printf("picked=%" PRId64 "\n", counts[6]);
    printf("stacked=%" PRId64 " unnested=%" PRId64 " refused=%" PRId64 "\n", stacked, unnested, refused);
    printf("matched=%" PRId64 " unkeyed=%" PRId64 " join_refused=%" PRId64 "\n", matched, unkeyed, join_refused);
    return 0;
}
