/*
 * nsysq page decoder: integer columns of an SQLite rowid table, read straight from its leaf pages.
 *
 * Called through ctypes from nsysq/pages.py (which finds the leaf pages, reads them into a buffer
 * and hands them over in rowid order). Every read is bounds-checked against the page and the
 * record, so a damaged file yields an error code, never a read outside the buffer. Anything this
 * decoder does not handle (overflow pages, a real/text/blob value in a requested column, a column
 * absent from a record whose default is not NULL) is an error code too: the caller then reads the
 * table through SQLite instead. File format: https://sqlite.org/fileformat2.html
 */
#include <stdint.h>

enum {
    ERR_NOT_LEAF = -2,      /* a page in the list is not a table b-tree leaf */
    ERR_CELL_COUNT = -3,    /* cell pointer array does not fit the page */
    ERR_CELL_OFFSET = -4,   /* a cell pointer points outside the cell content area */
    ERR_VARINT = -5,        /* a varint runs past the page or record */
    ERR_OVERFLOW = -6,      /* a record spills into overflow pages */
    ERR_RECORD = -7,        /* a record runs past the page, or its header past the record */
    ERR_CAPACITY = -9,      /* more rows than the caller allocated */
    ERR_SERIAL = -11,       /* reserved serial type (10, 11) */
    ERR_DEFAULT = -12,      /* column absent from a record and its default is not NULL */
    ERR_BODY = -13,         /* a value runs past the record */
    ERR_NOT_INTEGER = -14,  /* a requested column holds a real, text or blob value */
    ERR_NARROW = -15,       /* a value does not fit the 32-bit output asked for its column */
    ERR_NULL = -16,         /* a NULL in a column given no NULL mask (declared NOT NULL) */
};

static int varint(const uint8_t *p, const uint8_t *end, uint64_t *out) {
    uint64_t x = 0;
    for (int i = 0; i < 9; i++) {
        if (p + i >= end) return -1;
        uint8_t b = p[i];
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
    static const int8_t size[12] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0, -1, -1};
    return t >= 12 ? (int64_t)((t - 12) >> 1) : size[t];
}

/* Body bytes of the one-byte serial types (0..127); -1 for the reserved 10 and 11. */
static int8_t SIZE1[128];

static void init_sizes(void) {
    for (int t = 0; t < 128; t++) SIZE1[t] = (int8_t)serial_size((uint64_t)t);
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

/*
 * buf: n_pages pages of page_size bytes (usable bytes each: page_size minus the reserved tail).
 * cols: n_cols requested column indexes, ascending; absent_null[k]: column k may be missing from a
 * record (added by ALTER TABLE with a NULL default); wide[k]: 1 for int64 output, 0 for int32.
 * values[k][row0 + i] and nulls[k][row0 + i] receive row i of this buffer; nulls[k] may be NULL for
 * a NOT NULL column. Returns the number of rows decoded, or a negative ERR_ code.
 */
int64_t nsysq_decode_leaves(const uint8_t *buf, int64_t n_pages, int64_t page_size, int64_t usable,
                            const int32_t *cols, int32_t n_cols, const uint8_t *absent_null,
                            const uint8_t *wide, void *const *values, uint8_t *const *nulls,
                            int64_t row0, int64_t cap) {
    int64_t row = row0;
    const int32_t last = n_cols > 0 ? cols[n_cols - 1] : -1;
    if (SIZE1[10] == 0) init_sizes(); /* idempotent: concurrent callers write the same values */
    const uint64_t max_local = (uint64_t)(usable - 35);
    for (int64_t p = 0; p < n_pages; p++) {
        const uint8_t *page = buf + p * page_size;
        const uint8_t *pend = page + usable;
        if (page[0] != 0x0D) return ERR_NOT_LEAF;
        const int64_t ncell = ((int64_t)page[3] << 8) | page[4];
        if (8 + 2 * ncell > usable) return ERR_CELL_COUNT;
        if (row + ncell > cap) return ERR_CAPACITY;
        for (int64_t i = 0; i < ncell; i++, row++) {
            const int64_t cp = ((int64_t)page[8 + 2 * i] << 8) | page[9 + 2 * i];
            if (cp < 8 + 2 * ncell || cp >= usable) return ERR_CELL_OFFSET;
            const uint8_t *cell = page + cp;
            uint64_t payload, rowid, header_len;
            const int l1 = varint(cell, pend, &payload);
            if (l1 < 0) return ERR_VARINT;
            const int l2 = varint(cell + l1, pend, &rowid);
            if (l2 < 0) return ERR_VARINT;
            if (payload > max_local) return ERR_OVERFLOW;
            const uint8_t *rec = cell + l1 + l2;
            if (payload > (uint64_t)(pend - rec)) return ERR_RECORD;
            const uint8_t *rend = rec + payload;
            const int lh = varint(rec, rend, &header_len);
            if (lh < 0) return ERR_VARINT;
            if (header_len > payload || header_len < (uint64_t)lh) return ERR_RECORD;
            const uint8_t *hp = rec + lh;
            const uint8_t *hend = rec + header_len;
            const uint8_t *body = hend;
            int32_t k = 0;
            for (int32_t j = 0; j <= last; j++) {
                uint64_t t = 0;
                int64_t size = 0;
                const int wanted = (j == cols[k]);
                if (hp < hend && *hp < 0x80) {
                    t = *hp++;
                    size = SIZE1[t];
                } else if (hp < hend) {
                    const int lt = varint(hp, hend, &t);
                    if (lt < 0) return ERR_VARINT;
                    hp += lt;
                    size = serial_size(t);
                } else if (wanted && !absent_null[k]) {
                    return ERR_DEFAULT;
                }
                if (size < 0) return ERR_SERIAL;
                if (size > rend - body) return ERR_BODY;
                if (wanted) {
                    if (t == 7 || t >= 12) return ERR_NOT_INTEGER;
                    int64_t v = size > 0 ? read_int(body, size, pend) : (t == 9);
                    if (wide[k]) {
                        ((int64_t *)values[k])[row] = v;
                    } else {
                        if (v < INT32_MIN || v > INT32_MAX) return ERR_NARROW;
                        ((int32_t *)values[k])[row] = (int32_t)v;
                    }
                    if (nulls[k]) nulls[k][row] = (uint8_t)(t == 0);
                    else if (t == 0) return ERR_NULL;
                    k++;
                }
                body += size;
            }
        }
    }
    return row - row0;
}
