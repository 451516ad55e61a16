/*
 * Sanitizer harness for nsysq/_pages.c: built with -fsanitize=address,undefined by
 * tests/test_sanitizers.py and linked with the decoder.
 *
 *   fuzz_pages [-m MUTATIONS] [-s SEED] FILE...
 *
 * (a) Every page of every FILE (a corruption corpus) is decoded as a one-page leaf buffer, with 64
 *     columns requested, twice: int64 outputs with NULL masks and absent columns allowed, then
 *     int32 outputs, no NULL masks and no absent columns.
 * (b) MUTATIONS times, 1 to 4 real leaf pages of the FILEs are copied, mutated at random
 *     (deterministic for a SEED: bytes anywhere, biased to the page header and cell pointers) and
 *     decoded with a random column request, reserved tail, row offset, output capacity and, half
 *     of the time, a rowid range per page (arrays of exactly one entry per page).
 *
 * Each buffer is also given to nsysq_check_text with the same columns (the text check of a table read
 * through SQLite), and to nsysq_intern_text with the first requested column (exact-size outputs
 * and hash slots, with a random room), under the same contract; every text it reports lies inside
 * the buffer and every code names one of them.
 *
 * Each buffer is allocated at its exact size and its reserved tail is poisoned, and each output
 * array is allocated at exactly `cap` rows, so any access outside them is an AddressSanitizer
 * report. The decoder's contract is checked too (a row count within the capacity, or a known error
 * code with the failing page inside the buffer); a violation aborts. Prints one summary line.
 */
#include "_pages.h"

#include <sanitizer/asan_interface.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 64

struct outcome {
    long decoded, damaged, unsupported, narrow, text_valid, text_invalid;
};

static uint64_t rng_state;

static uint64_t next_random(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int64_t below(int64_t n) { return n > 0 ? (int64_t)(next_random() % (uint64_t)n) : 0; }

static void *checked_malloc(size_t size) {
    void *p = malloc(size ? size : 1);
    if (p == NULL) {
        fprintf(stderr, "fuzz_pages: out of memory\n");
        exit(2);
    }
    return p;
}

struct request {
    int32_t cols[MAX_COLS];
    int32_t n_cols;
    uint8_t absent_null[MAX_COLS];
    uint8_t wide[MAX_COLS];
    int with_nulls;
};

/* Check the text of the columns of `rq` in `n_pages` pages of `buf` (nsysq_check_text), and the
 * contract: a row count, or a known error code with the failing page inside the buffer (and, for
 * invalid text, one of the requested columns). */
static void check_text(const uint8_t *buf, int64_t n_pages, int64_t page_size, int64_t usable,
                       const struct request *rq, const int64_t *min_rowid, const int64_t *max_rowid,
                       struct outcome *out) {
    int64_t failed_page = -7, rowid = 0;
    int32_t col = -1;
    const int64_t got = nsysq_check_text(buf, n_pages, page_size, usable, rq->cols, rq->n_cols,
                                         &failed_page, &rowid, &col, min_rowid, max_rowid);
    if (got >= 0) {
        if (got > n_pages * ((usable - 8) / 2) || failed_page != -1) abort();
        out->text_valid++;
        return;
    }
    if (nsysq_error_message(got) == NULL || failed_page < 0 || failed_page >= n_pages) abort();
    if (got == NSYSQ_ERR_TEXT) {
        int32_t k = 0;
        while (k < rq->n_cols && rq->cols[k] != col) k++;
        if (k == rq->n_cols) abort();
        out->text_invalid++;
    }
}

/* Code the text column rq->cols[0] of `n_pages` pages of `buf` (nsysq_intern_text) into outputs of
 * exactly `room` rows, and the contract: a row count within the room, each code 0 or a reported
 * text, each text inside the buffer; or a known error code with the failing page inside it. */
static void intern_text(const uint8_t *buf, int64_t n_pages, int64_t page_size, int64_t usable,
                        const struct request *rq, int64_t room, const int64_t *min_rowid,
                        const int64_t *max_rowid, struct outcome *out) {
    int64_t n_slots = 1;
    while (n_slots < 2 * room) n_slots *= 2;
    int32_t *codes = checked_malloc((size_t)room * sizeof *codes);
    int32_t *slots = checked_malloc((size_t)n_slots * sizeof *slots);
    int64_t *at = checked_malloc((size_t)room * sizeof *at);
    int64_t *len = checked_malloc((size_t)room * sizeof *len);
    int64_t failed_page = -7, rowid = 0, n_texts = -1;
    const int32_t col = rq->n_cols > 0 ? rq->cols[0] : 0;
    const int64_t got = nsysq_intern_text(buf, n_pages, page_size, usable, col, rq->absent_null[0],
                                          codes, room, slots, n_slots, at, len, &n_texts,
                                          &failed_page, &rowid, min_rowid, max_rowid);
    if (got >= 0) {
        if (got > room || failed_page != -1 || n_texts < 0 || n_texts > got) abort();
        for (int64_t i = 0; i < got; i++)
            if (codes[i] < 0 || codes[i] > n_texts) abort();
        for (int64_t k = 0; k < n_texts; k++)
            if (at[k] < 0 || len[k] < 0 || at[k] + len[k] > n_pages * page_size) abort();
        out->text_valid++;
    } else if (nsysq_error_message(got) == NULL || failed_page < 0 || failed_page >= n_pages) {
        abort();
    } else if (got == NSYSQ_ERR_TEXT) {
        out->text_invalid++;
    }
    free(codes);
    free(slots);
    free(at);
    free(len);
}

/* Decode `n_pages` pages of `buf` with `rq` into freshly allocated outputs of `cap` rows; with
 * `bounded`, each page gets a rowid range (arrays of exactly n_pages), random or unbounded. */
static void decode(const uint8_t *buf, int64_t n_pages, int64_t page_size, int64_t usable,
                   const struct request *rq, int64_t row0, int64_t cap, int bounded,
                   struct outcome *out) {
    void *values[MAX_COLS];
    uint8_t *nulls[MAX_COLS];
    for (int32_t k = 0; k < rq->n_cols; k++) {
        values[k] = checked_malloc((size_t)cap * (rq->wide[k] ? 8u : 4u));
        nulls[k] = rq->with_nulls ? checked_malloc((size_t)cap) : NULL;
    }
    int64_t *min_rowid = NULL, *max_rowid = NULL;
    if (bounded) {
        min_rowid = checked_malloc((size_t)n_pages * sizeof *min_rowid);
        max_rowid = checked_malloc((size_t)n_pages * sizeof *max_rowid);
        for (int64_t p = 0; p < n_pages; p++) {
            const int wide_open = below(2) == 0;
            min_rowid[p] = wide_open ? INT64_MIN : below(2000) - 100;
            max_rowid[p] = wide_open ? INT64_MAX : min_rowid[p] + below(4000);
        }
    }
    check_text(buf, n_pages, page_size, usable, rq, min_rowid, max_rowid, out);
    intern_text(buf, n_pages, page_size, usable, rq, cap - row0, min_rowid, max_rowid, out);
    int64_t failed_page = -7, first = 0, last = 0;
    int64_t first_values[MAX_COLS];
    uint8_t written[MAX_COLS];
    const int64_t got = nsysq_decode_leaves(buf, n_pages, page_size, usable, rq->cols, rq->n_cols,
                                            rq->absent_null, rq->wide, values, nulls, row0, cap,
                                            first_values, written, &failed_page, &first, &last,
                                            min_rowid, max_rowid);
    free(min_rowid);
    free(max_rowid);
    if (got >= 0) {
        if (got > cap - row0 || failed_page != -1) abort(); /* contract: rows fit, no failed page */
        for (int32_t k = 0; k < rq->n_cols; k++) /* contract: only the documented bits */
            if (written[k] & ~(NSYSQ_WROTE_VALUES | NSYSQ_WROTE_NULLS | NSYSQ_FIRST_NULL)) abort();
        out->decoded++;
    } else {
        if (nsysq_error_message(got) == NULL || failed_page < 0 || failed_page >= n_pages) abort();
        const int32_t cls = nsysq_error_class(got);
        if (cls == NSYSQ_DAMAGED) out->damaged++;
        else if (cls == NSYSQ_UNSUPPORTED) out->unsupported++;
        else if (cls == NSYSQ_TOO_NARROW) out->narrow++;
        else abort();
    }
    for (int32_t k = 0; k < rq->n_cols; k++) {
        free(values[k]);
        free(nulls[k]);
    }
}

/* A buffer of `n_pages` pages copied from `pages`, its reserved tails poisoned. */
static uint8_t *page_buffer(const uint8_t *const *pages, int64_t n_pages, int64_t page_size, int64_t usable) {
    uint8_t *buf = checked_malloc((size_t)(n_pages * page_size));
    for (int64_t p = 0; p < n_pages; p++) {
        memcpy(buf + p * page_size, pages[p], (size_t)page_size);
        ASAN_POISON_MEMORY_REGION(buf + p * page_size + usable, (size_t)(page_size - usable));
    }
    return buf;
}

static void free_buffer(uint8_t *buf, int64_t n_pages, int64_t page_size) {
    ASAN_UNPOISON_MEMORY_REGION(buf, (size_t)(n_pages * page_size));
    free(buf);
}

struct file {
    uint8_t *data;
    int64_t size, page_size, usable;
};

static int load(const char *path, struct file *f) {
    FILE *fh = fopen(path, "rb");
    if (fh == NULL) return -1;
    fseek(fh, 0, SEEK_END);
    const long size = ftell(fh);
    fseek(fh, 0, SEEK_SET);
    f->data = checked_malloc((size_t)size);
    const size_t got = fread(f->data, 1, (size_t)size, fh);
    fclose(fh);
    if (size < 100 || got != (size_t)size) return -1;
    const int64_t ps = ((int64_t)f->data[16] << 8) | f->data[17];
    f->size = size;
    f->page_size = ps == 1 ? 65536 : ps;
    f->usable = f->page_size - f->data[20];
    if (f->page_size < 512 || f->page_size > 65536 || f->usable < 480) return -1;
    return 0;
}

static void all_columns(struct request *rq, int wide, int with_nulls) {
    rq->n_cols = MAX_COLS;
    rq->with_nulls = with_nulls;
    for (int32_t k = 0; k < MAX_COLS; k++) {
        rq->cols[k] = k;
        rq->absent_null[k] = (uint8_t)with_nulls;
        rq->wide[k] = (uint8_t)wide;
    }
}

/* (a) every page of `f` as a one-page leaf buffer, with every column requested. */
static void every_page(const struct file *f, struct outcome *out) {
    struct request wide_nullable, narrow_not_null;
    all_columns(&wide_nullable, 1, 1);
    all_columns(&narrow_not_null, 0, 0);
    const int64_t cap = (f->usable - 8) / 2; /* as many cells as a page's pointer array holds */
    for (int64_t at = 0; at + f->page_size <= f->size; at += f->page_size) {
        const uint8_t *page = f->data + at;
        uint8_t *buf = page_buffer(&page, 1, f->page_size, f->usable);
        decode(buf, 1, f->page_size, f->usable, &wide_nullable, 0, cap, 0, out);
        decode(buf, 1, f->page_size, f->usable, &narrow_not_null, 0, cap, 0, out);
        free_buffer(buf, 1, f->page_size);
    }
}

static void random_request(struct request *rq) {
    rq->n_cols = 0;
    rq->with_nulls = below(4) != 0;
    const int64_t density = 1 + below(8);
    for (int32_t j = 0; j < MAX_COLS; j++) {
        if (below(density) != 0) continue;
        rq->cols[rq->n_cols] = j;
        rq->absent_null[rq->n_cols] = (uint8_t)(below(4) != 0);
        rq->wide[rq->n_cols] = (uint8_t)(below(3) != 0);
        rq->n_cols++;
    }
}

static void mutate(uint8_t *page, int64_t page_size) {
    static const uint8_t special[] = {0x00, 0x01, 0x7F, 0x80, 0xFF, 0x0D, 0x05, 0x0A, 0x0B, 0x0C};
    const int64_t edits = 1 + below(8);
    for (int64_t e = 0; e < edits; e++) {
        const int64_t ncell = ((int64_t)page[3] << 8) | page[4];
        int64_t at;
        switch (below(3)) {
        case 0: at = below(8 + 2 * (ncell < 64 ? ncell : 64)); break; /* header, cell pointers */
        default: at = below(page_size); break;
        }
        if (at >= page_size) at = page_size - 1;
        switch (below(3)) {
        case 0: page[at] = (uint8_t)next_random(); break;
        case 1: page[at] ^= (uint8_t)(1u << below(8)); break;
        default: page[at] = special[below((int64_t)sizeof special)]; break;
        }
    }
}

/* (b) `iterations` random mutations of runs of 1..4 leaf pages of the files. */
static void mutations(const struct file *files, int n_files, long iterations, struct outcome *out) {
    const uint8_t *leaves[4096];
    int leaf_file[4096];
    int n_leaves = 0;
    for (int i = 0; i < n_files; i++)
        for (int64_t at = files[i].page_size; at + files[i].page_size <= files[i].size && n_leaves < 4096;
             at += files[i].page_size)
            if (files[i].data[at] == 0x0D) {
                leaves[n_leaves] = files[i].data + at;
                leaf_file[n_leaves++] = i;
            }
    if (n_leaves == 0) return;
    for (long it = 0; it < iterations; it++) {
        const int first = (int)below(n_leaves);
        const struct file *f = &files[leaf_file[first]];
        int64_t n_pages = 1 + below(4);
        while (first + n_pages > n_leaves || leaf_file[first + n_pages - 1] != leaf_file[first]) n_pages--;
        const int64_t reserved = below(4) == 0 ? below(64) : 0;
        const int64_t usable = f->usable - reserved;
        uint8_t *buf = page_buffer(leaves + first, n_pages, f->page_size, usable);
        ASAN_UNPOISON_MEMORY_REGION(buf, (size_t)(n_pages * f->page_size));
        mutate(buf + below(n_pages) * f->page_size, f->page_size);
        for (int64_t p = 0; p < n_pages; p++)
            ASAN_POISON_MEMORY_REGION(buf + p * f->page_size + usable, (size_t)(f->page_size - usable));
        struct request rq;
        random_request(&rq);
        const int64_t row0 = below(3) == 0 ? below(100) : 0;
        const int64_t cap = row0 + (below(8) == 0 ? below(300) : n_pages * (usable - 8) / 2);
        decode(buf, n_pages, f->page_size, usable, &rq, row0, cap, below(2) == 0, out);
        free_buffer(buf, n_pages, f->page_size);
    }
}

int main(int argc, char **argv) {
    long iterations = 0;
    rng_state = 1;
    int arg = 1;
    for (; arg + 1 < argc && argv[arg][0] == '-'; arg += 2) {
        if (strcmp(argv[arg], "-m") == 0) iterations = strtol(argv[arg + 1], NULL, 10);
        else if (strcmp(argv[arg], "-s") == 0) rng_state = strtoull(argv[arg + 1], NULL, 10);
        else break;
    }
    if (arg >= argc || nsysq_abi_version() != NSYSQ_ABI_VERSION) {
        fprintf(stderr, "usage: fuzz_pages [-m MUTATIONS] [-s SEED] FILE...\n");
        return 2;
    }
    const int n_files = argc - arg;
    struct file *files = checked_malloc(sizeof *files * (size_t)n_files);
    struct outcome out = {0, 0, 0, 0, 0, 0};
    for (int i = 0; i < n_files; i++) {
        if (load(argv[arg + i], &files[i]) != 0) {
            fprintf(stderr, "fuzz_pages: cannot use %s\n", argv[arg + i]);
            return 2;
        }
        every_page(&files[i], &out);
    }
    mutations(files, n_files, iterations, &out);
    printf("decoded=%ld damaged=%ld unsupported=%ld narrow=%ld text_valid=%ld text_invalid=%ld\n",
           out.decoded, out.damaged, out.unsupported, out.narrow, out.text_valid, out.text_invalid);
    for (int i = 0; i < n_files; i++) free(files[i].data);
    free(files);
    return 0;
}
