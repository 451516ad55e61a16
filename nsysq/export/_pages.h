/*
 * nsysq page decoder: the interface of _pages.c, defined once.
 *
 * Included by _pages.c (so the compiler checks the definitions against these prototypes) and by the
 * sanitizer harness in tests/native/; tests/test_pages.py parses the prototypes below and checks them
 * against the ctypes signatures in nsysq/pages.py, and reads the error table through the exported
 * nsysq_error_* functions, so neither is copied by hand.
 */
#ifndef NSYSQ_PAGES_H
#define NSYSQ_PAGES_H

#include <stdint.h>

#if defined(__GNUC__)
#define NSYSQ_API __attribute__((visibility("default")))
#else
#define NSYSQ_API
#endif

/* Raised whenever a prototype, an error code or the meaning of an argument changes: pages.py
 * refuses a library built from another version of this file (a stale build in a source tree). */
#define NSYSQ_ABI_VERSION 6

/* written[k] bits of nsysq_decode_leaves. */
#define NSYSQ_WROTE_VALUES 1 /* values[k] holds every row of the call */
#define NSYSQ_WROTE_NULLS 2  /* nulls[k] holds every row of the call */
#define NSYSQ_FIRST_NULL 4   /* the call's first row is NULL in column cols[k] */

/* What an error code means for the caller. */
#define NSYSQ_UNSUPPORTED 0 /* a valid file this decoder does not handle: read it through SQLite */
#define NSYSQ_DAMAGED 1     /* the page contradicts the SQLite file format: the file is damaged */
#define NSYSQ_TOO_NARROW 2  /* a value needs 64 bits: decode again with every column int64 */

/* X(name, code, class, message): every error nsysq_decode_leaves and nsysq_check_text return. */
#define NSYSQ_ERRORS(X)                                                                              \
    X(NOT_LEAF, -2, NSYSQ_DAMAGED, "a page the b-tree lists as a leaf is not a table leaf page")       \
    X(CELL_COUNT, -3, NSYSQ_DAMAGED, "a leaf page's cell pointer array does not fit the page")          \
    X(CELL_OFFSET, -4, NSYSQ_DAMAGED, "a cell pointer points outside its page's cell content area")     \
    X(VARINT, -5, NSYSQ_DAMAGED, "a varint runs past its page or record")                             \
    X(OVERFLOW, -6, NSYSQ_UNSUPPORTED, "a record spills into overflow pages")                         \
    X(RECORD, -7, NSYSQ_DAMAGED, "a record runs past its page, or its header past the record")        \
    X(CAPACITY, -9, NSYSQ_DAMAGED, "more rows than the b-tree's rowid range allows")                  \
    X(SERIAL, -11, NSYSQ_DAMAGED, "a record uses a reserved serial type (10 or 11)")                  \
    X(DEFAULT, -12, NSYSQ_UNSUPPORTED, "a column missing from a record has a non-NULL default")        \
    X(BODY, -13, NSYSQ_DAMAGED, "a value runs past its record")                                       \
    X(NOT_INTEGER, -14, NSYSQ_UNSUPPORTED, "a requested column holds a real, text or blob value")     \
    X(NARROW, -15, NSYSQ_TOO_NARROW, "a value too large for its 32-bit column")                       \
    X(NULL_VALUE, -16, NSYSQ_DAMAGED, "a NULL in a column declared NOT NULL")                          \
    X(ROWID_ORDER, -17, NSYSQ_DAMAGED, "rowids out of order")                                         \
    X(ROWID_BOUNDS, -18, NSYSQ_DAMAGED, "a rowid outside the key range its parent page gives")      \
    X(TEXT, -19, NSYSQ_DAMAGED, "a text value is not valid UTF-8")                                    \
    X(NOT_TEXT, -20, NSYSQ_UNSUPPORTED, "a text column holds an integer, real or blob value")

#define NSYSQ_ENUM(name, code, cls, msg) NSYSQ_ERR_##name = (code),
enum nsysq_error { NSYSQ_ERRORS(NSYSQ_ENUM) };
#undef NSYSQ_ENUM

/*
 * Decode the integer columns of n_pages table leaf pages (in rowid order) from buf.
 *
 * buf: n_pages pages of page_size bytes, of which the first `usable` are used (the rest is the
 * file's reserved tail). cols: n_cols requested column indexes, strictly ascending. absent_null[k]:
 * column cols[k] may be missing from a record (added by ALTER TABLE with a NULL default). wide[k]:
 * 1 for int64 output, 0 for int32. values[k][row0 + i] and nulls[k][row0 + i] receive row i of this
 * buffer; nulls[k] may be NULL for a column declared NOT NULL. cap: the length of every output array.
 *
 * Outputs are written lazily, so that a column holding one value costs no memory: first[k] receives
 * the value of column cols[k] in the buffer's first row, and written[k] says what was written
 * (bits NSYSQ_WROTE_*): values[k] only from the first row whose value differs from first[k] on
 * (with rows row0 .. that row back-filled with first[k]), nulls[k] likewise from the first row whose
 * NULL-ness differs from the first row's. Rows never written hold first[k] (and the first row's
 * NULL-ness); the caller fills them, or keeps one value for the whole column.
 *
 * Returns the number of rows decoded, or a negative NSYSQ_ERR_ code. *failed_page: the index in buf
 * of the page the error was found on (-1 on success). *first_rowid, *last_rowid: the first and last
 * rowid decoded (untouched when no row was); on NSYSQ_ERR_ROWID_ORDER and NSYSQ_ERR_ROWID_BOUNDS
 * *last_rowid is the rowid at fault. Rowids strictly increase within the buffer; the caller checks
 * across buffers.
 *
 * min_rowid[p], max_rowid[p]: the inclusive rowid range the b-tree's interior pages give page p of
 * buf (from the separator keys above it: greater than the key before its pointer, at most the key
 * of its pointer); a rowid outside it is NSYSQ_ERR_ROWID_BOUNDS. Both NULL: no range is checked.
 */
NSYSQ_API int64_t nsysq_decode_leaves(const uint8_t *buf, int64_t n_pages, int64_t page_size,
                                      int64_t usable, const int32_t *cols, int32_t n_cols,
                                      const uint8_t *absent_null, const uint8_t *wide,
                                      void *const *values, uint8_t *const *nulls, int64_t row0,
                                      int64_t cap, int64_t *first, uint8_t *written,
                                      int64_t *failed_page, int64_t *first_rowid,
                                      int64_t *last_rowid, const int64_t *min_rowid,
                                      const int64_t *max_rowid);

/*
 * Check the text columns of n_pages table leaf pages (in rowid order) from buf, as SQLite would hand
 * them to a reader: every text or blob value of the n_cols columns cols (strictly ascending indexes)
 * valid UTF-8 (as Python's strict decoder: no overlong form, no surrogate, nothing above U+10FFFF),
 * with the page, cell, record and rowid checks of nsysq_decode_leaves (integers, reals and NULLs
 * pass; a column missing from a record holds its default and passes).
 *
 * buf, page_size, usable, min_rowid, max_rowid: as for nsysq_decode_leaves. Returns the number of
 * rows (cells) of the buffer, or a negative NSYSQ_ERR_ code (NSYSQ_ERR_TEXT: invalid UTF-8;
 * NSYSQ_ERR_OVERFLOW: a record spills into overflow pages, check it through SQLite). *failed_page:
 * the index in buf of the page at fault (-1 on success); *failed_rowid: the rowid of the record at
 * fault, *failed_col: the column of the invalid text (for NSYSQ_ERR_TEXT).
 */
NSYSQ_API int64_t nsysq_check_text(const uint8_t *buf, int64_t n_pages, int64_t page_size,
                                   int64_t usable, const int32_t *cols, int32_t n_cols,
                                   int64_t *failed_page, int64_t *failed_rowid, int32_t *failed_col,
                                   const int64_t *min_rowid, const int64_t *max_rowid);

/*
 * Each row's value of text column `col` of n_pages table leaf pages (in rowid order) from buf, as a
 * code into the distinct texts of the buffer: codes[i] (row i of the buffer) is 0 for NULL, else
 * 1 + the index of its text among the distinct texts, numbered in order of first appearance. Text
 * k (0-based) is the text_len[k] bytes at buf + text_at[k], valid UTF-8 (checked once per distinct
 * text, as nsysq_check_text checks every value). absent_null: the column may be missing from a
 * record (its default is NULL). slots: n_slots int32 of scratch (a power of two, at least twice
 * `room`), the hash table of the distinct texts. room: the length of codes, text_at and text_len.
 *
 * buf, page_size, usable, min_rowid, max_rowid: as for nsysq_decode_leaves, with the same page,
 * cell, record and rowid checks. Returns the number of rows, with *n_texts the number of distinct
 * texts, or a negative NSYSQ_ERR_ code (NSYSQ_ERR_NOT_TEXT: an integer, real or blob value, reported
 * once every cell has been walked, so that damage after it is reported instead;
 * NSYSQ_ERR_OVERFLOW: a record spills into overflow pages; read the column through SQLite then).
 * *failed_page: the index in buf of the page at fault (-1 on success); *failed_rowid: the rowid of
 * the record at fault.
 */
NSYSQ_API int64_t nsysq_intern_text(const uint8_t *buf, int64_t n_pages, int64_t page_size,
                                    int64_t usable, int32_t col, uint8_t absent_null, int32_t *codes,
                                    int64_t room, int32_t *slots, int64_t n_slots, int64_t *text_at,
                                    int64_t *text_len, int64_t *n_texts, int64_t *failed_page,
                                    int64_t *failed_rowid, const int64_t *min_rowid,
                                    const int64_t *max_rowid);

/* The message for an error code, or NULL for a code nsysq_decode_leaves never returns. */
NSYSQ_API const char *nsysq_error_message(int64_t code);

/* NSYSQ_UNSUPPORTED, NSYSQ_DAMAGED or NSYSQ_TOO_NARROW for an error code; -1 for an unknown one. */
NSYSQ_API int32_t nsysq_error_class(int64_t code);

/* NSYSQ_ABI_VERSION of the source this library was built from. */
NSYSQ_API int32_t nsysq_abi_version(void);

#endif
