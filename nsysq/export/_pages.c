/*
 * nsysq page decoder: integer columns of an SQLite rowid table, read straight from its leaf pages.
 *
 * Called through ctypes from nsysq/pages.py (which walks the table's b-tree, checks its interior
 * pages' keys, reads its leaf pages into a buffer and hands them over in rowid order, each with the
 * rowid range its parent's keys give it); the interface is _pages.h. The input is
 * untrusted: every read is bounds-checked against the buffer, the page and the record, so a damaged
 * file yields an error code, never a read outside the buffer. Each code says whether the page
 * contradicts the file format (the file is damaged) or is valid but not handled here (overflow
 * pages, a real/text/blob value in a requested column, a column absent from a record whose default
 * is not NULL: the caller reads the table through SQLite instead). nsysq_check_text walks the same
 * cells with the same checks and validates the UTF-8 of text columns (the guard of a table DuckDB's
 * sqlite scanner reads, nsysq/export/reader.py). File format:
 * https://sqlite.org/fileformat2.html
 */
#include "_pages.h"

#include <stddef.h>
#include <string.h>

/* Body bytes of the one-byte serial types (0..127); -1 for the reserved 10 and 11. */
static const int8_t SIZE1[128] = {
     0,  1,  2,  3,  4,  6,  8,  8,  0,  0, -1, -1,  0,  0,  1,  1,
     2,  2,  3,  3,  4,  4,  5,  5,  6,  6,  7,  7,  8,  8,  9,  9,
    10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17,
    18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23, 24, 24, 25, 25,
    26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31, 32, 32, 33, 33,
    34, 34, 35, 35, 36, 36, 37, 37, 38, 38, 39, 39, 40, 40, 41, 41,
    42, 42, 43, 43, 44, 44, 45, 45, 46, 46, 47, 47, 48, 48, 49, 49,
    50, 50, 51, 51, 52, 52, 53, 53, 54, 54, 55, 55, 56, 56, 57, 57,
};

/* A varint at p that must end before `end`: its length (1..9), or -1 when it runs past `end`. */
static int varint(const uint8_t *p, const uint8_t *end, uint64_t *out) {
    uint64_t x = 0;
    for (int i = 0; i < 9; i++) {
        if (p + i >= end) return -1;
        const uint8_t b = p[i];
        if (i == 8) {
            *out = (x << 8) | b;
            return 9;
        }
        x = (x << 7) | (uint64_t)(b & 0x7F);
        if (b < 0x80) {
            *out = x;
            return i + 1;
        }
    }
    return -1;
}

static int64_t serial_size(uint64_t t) {
    return t >= 128 ? (int64_t)((t - 12) >> 1) : SIZE1[t];
}

/* A big-endian integer of `size` (1..8) bytes at p, sign-extended. When 8 bytes can be read
 * without leaving the page, one load and a byte swap; otherwise byte by byte. */
static inline int64_t read_int(const uint8_t *p, int64_t size, const uint8_t *pend) {
    uint64_t u = 0;
    if (p + 8 <= pend) {
        for (int b = 0; b < 8; b++) u = (u << 8) | p[b]; /* compiles to a load + bswap */
        u >>= 8 * (8 - size);
    } else {
        for (int64_t b = 0; b < size; b++) u = (u << 8) | p[b];
    }
    if (size < 8) {
        const int shift = 64 - 8 * (int)size;
        return (int64_t)(u << shift) >> shift;
    }
    return (int64_t)u;
}

/* What the caller asked for: see nsysq_decode_leaves in _pages.h. */
struct request {
    const int32_t *cols;
    int32_t last; /* the highest requested column index, -1 for none */
    const uint8_t *absent_null;
    const uint8_t *wide;
    void *const *values;
    uint8_t *const *nulls;
    int64_t row0;
    int64_t *first;
    uint8_t *written;
};

/* Store value v (NULL when is_null) of requested column k at `row`, lazily (see _pages.h): the
 * first row's value and NULL-ness are kept in first[k] and written[k]; each output starts being
 * written at the first row that differs, after back-filling the rows before it. */
static inline void store(const struct request *rq, int32_t k, int64_t row, int64_t v, int is_null) {
    uint8_t w = rq->written[k];
    if (row == rq->row0) {
        rq->first[k] = v;
        rq->written[k] = is_null ? NSYSQ_FIRST_NULL : 0;
        return;
    }
    if (!(w & NSYSQ_WROTE_VALUES) && v != rq->first[k]) {
        if (rq->wide[k]) {
            for (int64_t r = rq->row0; r < row; r++) ((int64_t *)rq->values[k])[r] = rq->first[k];
        } else {
            for (int64_t r = rq->row0; r < row; r++) ((int32_t *)rq->values[k])[r] = (int32_t)rq->first[k];
        }
        w |= NSYSQ_WROTE_VALUES;
    }
    if (w & NSYSQ_WROTE_VALUES) {
        if (rq->wide[k]) ((int64_t *)rq->values[k])[row] = v;
        else ((int32_t *)rq->values[k])[row] = (int32_t)v;
    }
    if (rq->nulls[k]) {
        const uint8_t first_null = (w & NSYSQ_FIRST_NULL) ? 1 : 0;
        if (!(w & NSYSQ_WROTE_NULLS) && (uint8_t)is_null != first_null) {
            for (int64_t r = rq->row0; r < row; r++) rq->nulls[k][r] = first_null;
            w |= NSYSQ_WROTE_NULLS;
        }
        if (w & NSYSQ_WROTE_NULLS) rq->nulls[k][row] = (uint8_t)is_null;
    }
    rq->written[k] = w;
}

/* Whether an overflowing cell's local part and its 4-byte overflow page number fit the page
 * (fileformat2 "Cell Payload Overflow Pages"): if not, the payload size is damaged. */
static int overflow_fits(uint64_t payload, int64_t usable, const uint8_t *rec, const uint8_t *pend) {
    const uint64_t u = (uint64_t)usable;
    const uint64_t max_local = u - 35;
    const uint64_t min_local = (u - 12) * 32 / 255 - 23;
    uint64_t local = min_local + (payload - min_local) % (u - 4);
    if (local > max_local) local = min_local;
    return local + 4 <= (uint64_t)(pend - rec);
}

/* The header of the record [rec, rend): its serial types [*hp, *hend) (the body follows): 0 or an
 * error code. */
static inline int record_header(const uint8_t *rec, const uint8_t *rend, const uint8_t **hp,
                                const uint8_t **hend) {
    uint64_t header_len;
    const int lh = varint(rec, rend, &header_len);
    if (lh < 0) return NSYSQ_ERR_VARINT;
    if (header_len > (uint64_t)(rend - rec) || header_len < (uint64_t)lh) return NSYSQ_ERR_RECORD;
    *hp = rec + lh;
    *hend = rec + header_len;
    return 0;
}

/* Write the requested columns of the record [rec, rend) to output row `row`: 0 or an error code. */
static inline int decode_record(const struct request *rq, const uint8_t *rec, const uint8_t *rend,
                                const uint8_t *pend, int64_t row) {
    const uint8_t *hp, *hend;
    const int bad = record_header(rec, rend, &hp, &hend);
    if (bad != 0) return bad;
    const uint8_t *body = hend;
    int32_t k = 0;
    for (int32_t j = 0; j <= rq->last; j++) {
        uint64_t t = 0;
        int64_t size = 0;
        const int wanted = (j == rq->cols[k]);
        if (hp < hend && *hp < 0x80) {
            t = *hp++;
            size = SIZE1[t];
        } else if (hp < hend) {
            const int lt = varint(hp, hend, &t);
            if (lt < 0) return NSYSQ_ERR_VARINT;
            hp += lt;
            size = serial_size(t);
        } else if (wanted && !rq->absent_null[k]) {
            return NSYSQ_ERR_DEFAULT;
        }
        if (size < 0) return NSYSQ_ERR_SERIAL;
        if (size > rend - body) return NSYSQ_ERR_BODY;
        if (wanted) {
            if (t == 7 || t >= 12) return NSYSQ_ERR_NOT_INTEGER;
            const int64_t v = size > 0 ? read_int(body, size, pend) : (t == 9);
            if (!rq->wide[k] && (v < INT32_MIN || v > INT32_MAX)) return NSYSQ_ERR_NARROW;
            if (t == 0 && !rq->nulls[k]) return NSYSQ_ERR_NULL_VALUE;
            store(rq, k, row, v, t == 0);
            k++;
        }
        body += size;
    }
    return 0;
}

/* Whether `n` bytes at s are valid UTF-8 (Unicode's well-formed sequences, as Python's strict
 * decoder: no overlong form, no surrogate, nothing above U+10FFFF). ASCII is skipped 8 bytes at a time. */
static int valid_utf8(const uint8_t *s, int64_t n) {
    int64_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t w = 0;
            for (int b = 0; b < 8; b++) w |= (uint64_t)s[i + b] << (8 * b);
            if (!(w & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        const uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int64_t len = 4;
        uint8_t lo = 0x80, hi = 0xBF; /* the range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) len = 3;
        else if (c > 0xF4 || c < 0xF0) return 0;
        if (c == 0xE0) lo = 0xA0;
        else if (c == 0xED) hi = 0x9F;
        else if (c == 0xF0) lo = 0x90;
        else if (c == 0xF4) hi = 0x8F;
        if (len > n - i || s[i + 1] < lo || s[i + 1] > hi) return 0;
        for (int64_t k = 2; k < len; k++)
            if ((s[i + k] & 0xC0) != 0x80) return 0;
        i += len;
    }
    return 1;
}

/* Check the text and blob values of the columns `cols` of the record [rec, rend): 0, or an error
 * code with *col the column of an invalid value. */
static inline int check_record(const int32_t *cols, int32_t n_cols, const uint8_t *rec,
                               const uint8_t *rend, int32_t *col) {
    const uint8_t *hp, *hend;
    const int bad = record_header(rec, rend, &hp, &hend);
    if (bad != 0) return bad;
    const uint8_t *body = hend;
    int32_t k = 0;
    for (int32_t j = 0; k < n_cols && hp < hend; j++) {
        uint64_t t;
        const int lt = varint(hp, hend, &t);
        if (lt < 0) return NSYSQ_ERR_VARINT;
        hp += lt;
        const int64_t size = serial_size(t);
        if (size < 0) return NSYSQ_ERR_SERIAL;
        if (size > rend - body) return NSYSQ_ERR_BODY;
        if (j == cols[k]) {
            if (t >= 12 && !valid_utf8(body, size)) {
                *col = j;
                return NSYSQ_ERR_TEXT;
            }
            k++;
        }
        body += size;
    }
    return 0;
}

/* Whether a record of `payload` bytes at rec is held whole by its page: 0 or an error code. */
static inline int record_in_page(uint64_t payload, int64_t usable, const uint8_t *rec, const uint8_t *pend) {
    if (payload > (uint64_t)(usable - 35))
        return overflow_fits(payload, usable, rec, pend) ? NSYSQ_ERR_OVERFLOW : NSYSQ_ERR_RECORD;
    return payload > (uint64_t)(pend - rec) ? NSYSQ_ERR_RECORD : 0;
}

/* A walk over the cells of n_pages table leaf pages in rowid order, with the checks both entry
 * points make: each page a table leaf whose cell pointer array fits, at most `room` rows in all
 * (NSYSQ_ERR_CAPACITY past it), each cell's pointer, varints and record inside its page, rowids
 * strictly increasing and within the page's range (min_rowid/max_rowid, NULL: unchecked). */
struct walk {
    const uint8_t *buf;
    int64_t n_pages, page_size, usable, room;
    const int64_t *min_rowid, *max_rowid;
    int64_t p;     /* the page of the current cell (the failing one on an error) */
    int64_t rows;  /* cells walked so far */
    int64_t rowid; /* the current cell's rowid (the one at fault on a rowid error) */
    int64_t i, ncell, lo, hi;
};

static struct walk walk_start(const uint8_t *buf, int64_t n_pages, int64_t page_size, int64_t usable,
                              int64_t room, const int64_t *min_rowid, const int64_t *max_rowid) {
    const struct walk w = {buf, n_pages, page_size, usable, room, min_rowid, max_rowid, -1, 0, 0, 0, 0, 0, 0};
    return w;
}

/* Move to the next page's cells: 0, or an error code. */
static inline int walk_page(struct walk *w) {
    const uint8_t *page = w->buf + w->p * w->page_size;
    if (page[0] != 0x0D) return NSYSQ_ERR_NOT_LEAF;
    w->ncell = ((int64_t)page[3] << 8) | page[4];
    if (8 + 2 * w->ncell > w->usable) return NSYSQ_ERR_CELL_COUNT;
    if (w->ncell > w->room - w->rows) return NSYSQ_ERR_CAPACITY;
    const int bounded = w->min_rowid != NULL && w->max_rowid != NULL;
    w->lo = bounded ? w->min_rowid[w->p] : INT64_MIN;
    w->hi = bounded ? w->max_rowid[w->p] : INT64_MAX;
    w->i = 0;
    return 0;
}

/* The next cell's record [*rec, *rend) (and w->rowid): 1, 0 when every page is walked, or an error
 * code (w->p its page). */
static inline int walk_next(struct walk *w, const uint8_t **rec, const uint8_t **rend) {
    while (w->p < 0 || w->i == w->ncell) {
        if (++w->p == w->n_pages) return 0;
        const int bad = walk_page(w);
        if (bad != 0) return bad;
    }
    const uint8_t *page = w->buf + w->p * w->page_size;
    const uint8_t *pend = page + w->usable;
    const int64_t cp = ((int64_t)page[8 + 2 * w->i] << 8) | page[9 + 2 * w->i];
    if (cp < 8 + 2 * w->ncell || cp >= w->usable) return NSYSQ_ERR_CELL_OFFSET;
    const uint8_t *cell = page + cp;
    uint64_t payload, id;
    const int l1 = varint(cell, pend, &payload);
    if (l1 < 0) return NSYSQ_ERR_VARINT;
    const int l2 = varint(cell + l1, pend, &id);
    if (l2 < 0) return NSYSQ_ERR_VARINT;
    const int64_t prev = w->rowid;
    w->rowid = (int64_t)id;
    if (w->rowid <= prev && w->rows > 0) return NSYSQ_ERR_ROWID_ORDER;
    if (w->rowid < w->lo || w->rowid > w->hi) return NSYSQ_ERR_ROWID_BOUNDS;
    *rec = cell + l1 + l2;
    const int fits = record_in_page(payload, w->usable, *rec, pend);
    if (fits != 0) return fits;
    *rend = *rec + payload;
    w->i++;
    w->rows++;
    return 1;
}

int64_t nsysq_decode_leaves(const uint8_t *buf, int64_t n_pages, int64_t page_size, int64_t usable,
                            const int32_t *cols, int32_t n_cols, const uint8_t *absent_null,
                            const uint8_t *wide, void *const *values, uint8_t *const *nulls,
                            int64_t row0, int64_t cap, int64_t *first, uint8_t *written,
                            int64_t *failed_page, int64_t *first_rowid, int64_t *last_rowid,
                            const int64_t *min_rowid, const int64_t *max_rowid) {
    const struct request rq = {
        cols, n_cols > 0 ? cols[n_cols - 1] : -1, absent_null, wide, values, nulls, row0, first, written,
    };
    for (int32_t k = 0; k < n_cols; k++) {
        first[k] = 0;
        written[k] = 0;
    }
    struct walk w = walk_start(buf, n_pages, page_size, usable, cap - row0, min_rowid, max_rowid);
    const uint8_t *rec, *rend;
    int got;
    *failed_page = -1;
    while ((got = walk_next(&w, &rec, &rend)) == 1) {
        if (w.rows == 1) *first_rowid = w.rowid;
        const uint8_t *pend = buf + w.p * page_size + usable;
        got = decode_record(&rq, rec, rend, pend, row0 + w.rows - 1);
        if (got != 0) break;
    }
    if (got != 0) {
        *failed_page = w.p;
        if (got == NSYSQ_ERR_ROWID_ORDER || got == NSYSQ_ERR_ROWID_BOUNDS) *last_rowid = w.rowid;
        return got;
    }
    if (w.rows > 0) *last_rowid = w.rowid;
    return w.rows;
}

int64_t nsysq_check_text(const uint8_t *buf, int64_t n_pages, int64_t page_size, int64_t usable,
                         const int32_t *cols, int32_t n_cols, int64_t *failed_page,
                         int64_t *failed_rowid, int32_t *failed_col, const int64_t *min_rowid,
                         const int64_t *max_rowid) {
    struct walk w = walk_start(buf, n_pages, page_size, usable, INT64_MAX, min_rowid, max_rowid);
    const uint8_t *rec, *rend;
    int got;
    *failed_page = -1;
    while ((got = walk_next(&w, &rec, &rend)) == 1) {
        got = check_record(cols, n_cols, rec, rend, failed_col);
        if (got != 0) break;
    }
    if (got != 0) {
        *failed_page = w.p;
        *failed_rowid = w.rowid;
        return got;
    }
    return w.rows;
}

/* The value of column `col` of the record [rec, rend): 1 with [*text, *text + *size) for a text,
 * 0 for a NULL (or a column missing from the record when absent_null), or an error code. */
static inline int record_text(int32_t col, uint8_t absent_null, const uint8_t *rec, const uint8_t *rend,
                              const uint8_t **text, int64_t *size) {
    const uint8_t *hp, *hend;
    const int bad = record_header(rec, rend, &hp, &hend);
    if (bad != 0) return bad;
    const uint8_t *body = hend;
    for (int32_t j = 0; j <= col; j++) {
        if (hp >= hend) return absent_null ? 0 : NSYSQ_ERR_DEFAULT;
        uint64_t t;
        const int lt = varint(hp, hend, &t);
        if (lt < 0) return NSYSQ_ERR_VARINT;
        hp += lt;
        const int64_t n = serial_size(t);
        if (n < 0) return NSYSQ_ERR_SERIAL;
        if (n > rend - body) return NSYSQ_ERR_BODY;
        if (j == col) {
            if (t == 0) return 0;
            if (t < 13 || t % 2 == 0) return NSYSQ_ERR_NOT_TEXT;
            *text = body;
            *size = n;
            return 1;
        }
        body += n;
    }
    return NSYSQ_ERR_RECORD; /* not reached: the loop returns at j == col */
}

/* FNV-1a over the bytes, then a final mix so that the low bits (the slot) depend on every byte. */
static inline uint64_t text_hash(const uint8_t *s, int64_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

/* The distinct texts of a buffer: an open-addressing table of slots (1 + a text's index, 0 empty)
 * over their offsets and lengths in the buffer. */
struct texts {
    const uint8_t *buf;
    int32_t *slots;
    int64_t mask, count;
    int64_t *at, *len;
};

/* The code of the text [s, s + n) among the distinct texts so far (adding it when new): 1 + its
 * index, or NSYSQ_ERR_TEXT for invalid UTF-8. */
static inline int64_t text_code(struct texts *d, const uint8_t *s, int64_t n) {
    uint64_t slot = text_hash(s, n) & (uint64_t)d->mask;
    while (d->slots[slot] != 0) {
        const int64_t k = d->slots[slot] - 1;
        if (d->len[k] == n && memcmp(d->buf + d->at[k], s, (size_t)n) == 0) return k + 1;
        slot = (slot + 1) & (uint64_t)d->mask;
    }
    if (!valid_utf8(s, n)) return NSYSQ_ERR_TEXT;
    d->at[d->count] = s - d->buf;
    d->len[d->count] = n;
    d->slots[slot] = (int32_t)(d->count + 1);
    return ++d->count;
}

int64_t nsysq_intern_text(const uint8_t *buf, int64_t n_pages, int64_t page_size, int64_t usable,
                          int32_t col, uint8_t absent_null, int32_t *codes, int64_t room,
                          int32_t *slots, int64_t n_slots, int64_t *text_at, int64_t *text_len,
                          int64_t *n_texts, int64_t *failed_page, int64_t *failed_rowid,
                          const int64_t *min_rowid, const int64_t *max_rowid) {
    *failed_page = -1;
    *n_texts = 0;
    if (col < 0 || room < 0 || room >= INT32_MAX || n_slots < 2 * room || n_slots < 1 ||
        (n_slots & (n_slots - 1)) != 0)
        return NSYSQ_ERR_CAPACITY;
    memset(slots, 0, (size_t)n_slots * sizeof(int32_t));
    struct texts d = {buf, slots, n_slots - 1, 0, text_at, text_len};
    struct walk w = walk_start(buf, n_pages, page_size, usable, room, min_rowid, max_rowid);
    const uint8_t *rec, *rend, *text = NULL;
    int64_t size = 0, got, refused_page = -1, refused_rowid = 0;
    while ((got = walk_next(&w, &rec, &rend)) == 1) {
        got = record_text(col, absent_null, rec, rend, &text, &size);
        if (got == NSYSQ_ERR_NOT_TEXT) { /* refused at the end: the pages after it may be damaged */
            if (refused_page < 0) {
                refused_page = w.p;
                refused_rowid = w.rowid;
            }
            got = 0;
        } else if (got == 1) {
            got = text_code(&d, text, size);
        }
        if (got < 0) break;
        codes[w.rows - 1] = (int32_t)got;
    }
    *n_texts = d.count;
    if (got < 0 || refused_page >= 0) {
        *failed_page = got < 0 ? w.p : refused_page;
        *failed_rowid = got < 0 ? w.rowid : refused_rowid;
        return got < 0 ? got : NSYSQ_ERR_NOT_TEXT;
    }
    return w.rows;
}

#define NSYSQ_MESSAGE(name, code, cls, msg) \
    case (code):                            \
        return (msg);
#define NSYSQ_CLASS(name, code, cls, msg) \
    case (code):                          \
        return (cls);

const char *nsysq_error_message(int64_t code) {
    switch (code) {
        NSYSQ_ERRORS(NSYSQ_MESSAGE)
    default:
        return NULL;
    }
}

int32_t nsysq_error_class(int64_t code) {
    switch (code) {
        NSYSQ_ERRORS(NSYSQ_CLASS)
    default:
        return -1;
    }
}

int32_t nsysq_abi_version(void) { return NSYSQ_ABI_VERSION; }
