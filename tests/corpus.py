"""A deterministic corpus of damaged copies of an nsys SQLite export.

Independent of nsysq: it finds each table's pages from sqlite_master's rootpage and a walk of the
table b-tree in plain Python (the file format at https://www.sqlite.org/fileformat2.html), then
writes copies with one kind of damage each:

- ``kernel-leaf``: random bytes flipped in the cell area of a leaf page of the kernel table;
- ``kernel-interior``: random bytes flipped in an interior page of the kernel table (child page
  numbers, separator keys, cell pointers);
- ``interior-keys``: one separator key of an interior page of the kernel table (its root first)
  rewritten to a value at or below the key before it, in the same number of bytes: the keys run out
  of order ("Rowid N out of order") while every child pointer, leaf and record stays intact, so
  SQLite's full scan still reads every row and only a seek by rowid goes astray;
- ``rowid-order``: rowid varints of two cells swapped, within one leaf page or across neighbouring
  leaf pages, or one rowid raised to the largest its varint length holds, so rowids run out of
  order while every record stays well formed;
- ``string-utf8``: one byte of a text value in a StringIds leaf page replaced by a byte that is never
  valid UTF-8 (the record stays well formed);
- ``other-leaf``: random bytes flipped in a leaf page of another table nsysq reads.

Run ``python -m tests.corpus SOURCE OUT_DIR [PER_KIND]`` to write a corpus to a directory.
"""

from __future__ import annotations

import random
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

KERNEL_TABLE = "CUPTI_ACTIVITY_KIND_KERNEL"
STRING_TABLE = "StringIds"
OTHER_TABLES = (
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "NVTX_EVENTS",
    "TARGET_INFO_GPU",
    "TARGET_INFO_CUDA_DEVICE",
    "ThreadNames",
    "META_DATA_EXPORT",
    "ENUM_CUDA_MEMCPY_OPER",
)
KINDS = ("kernel-leaf", "kernel-interior", "interior-keys", "rowid-order", "string-utf8", "other-leaf")

LEAF_TABLE = 0x0D
INTERIOR_TABLE = 0x05


@dataclass(frozen=True)
class Damaged:
    kind: str
    path: Path
    table: str
    page: int


@dataclass(frozen=True)
class Cell:
    page: int
    offset: int  # absolute file offset of the cell
    rowid_at: int  # absolute file offset of the rowid varint
    rowid_len: int
    payload_size: int
    payload_at: int  # absolute file offset of the payload


@dataclass
class Tree:
    leaves: list[int]
    interiors: list[int]


class Pages:
    """Reads a database image: page geometry, b-tree pages and leaf cells."""

    def __init__(self, image: bytes) -> None:
        self.image = image
        size = int.from_bytes(image[16:18], "big")
        self.page_size = 65536 if size == 1 else size
        self.usable = self.page_size - image[20]

    def start(self, page: int) -> int:
        return (page - 1) * self.page_size

    def header_at(self, page: int) -> int:
        return self.start(page) + (100 if page == 1 else 0)

    def kind(self, page: int) -> int:
        return self.image[self.header_at(page)]

    def cell_pointers(self, page: int) -> list[int]:
        header = self.header_at(page)
        count = int.from_bytes(self.image[header + 3 : header + 5], "big")
        array = header + (12 if self.kind(page) == INTERIOR_TABLE else 8)
        pointers = [
            int.from_bytes(self.image[array + 2 * i : array + 2 * i + 2], "big") for i in range(count)
        ]
        return [self.start(page) + p for p in pointers]

    def content_start(self, page: int) -> int:
        header = self.header_at(page)
        value = int.from_bytes(self.image[header + 5 : header + 7], "big")
        return self.start(page) + (65536 if value == 0 else value)

    def children(self, page: int) -> list[int]:
        header = self.header_at(page)
        kids = [int.from_bytes(self.image[c : c + 4], "big") for c in self.cell_pointers(page)]
        return kids + [int.from_bytes(self.image[header + 8 : header + 12], "big")]

    def tree(self, root: int) -> Tree:
        """Leaf and interior pages of a table b-tree, leaves in key order."""
        tree = Tree([], [])
        stack, seen = [root], set()
        while stack:
            page = stack.pop()
            if page in seen or not 1 <= page <= len(self.image) // self.page_size:
                continue
            seen.add(page)
            kind = self.kind(page)
            if kind == LEAF_TABLE:
                tree.leaves.append(page)
            elif kind == INTERIOR_TABLE:
                tree.interiors.append(page)
                stack.extend(reversed(self.children(page)))
        return tree

    def varint(self, at: int) -> tuple[int, int]:
        value = 0
        for i in range(9):
            byte = self.image[at + i]
            if i == 8:
                return (value << 8) | byte, 9
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                return value, i + 1
        raise AssertionError("unreachable")

    def leaf_cells(self, page: int) -> list[Cell]:
        cells = []
        for offset in self.cell_pointers(page):
            size, size_len = self.varint(offset)
            _, rowid_len = self.varint(offset + size_len)
            rowid_at = offset + size_len
            cells.append(Cell(page, offset, rowid_at, rowid_len, size, rowid_at + rowid_len))
        return cells

    def local(self, cell: Cell) -> bool:
        """Whether the whole payload is on the leaf page (no overflow pages)."""
        return cell.payload_size <= self.usable - 35

    def text_spans(self, cell: Cell) -> list[tuple[int, int]]:
        """(absolute offset, length) of each non-empty text value in a local record."""
        header_size, used = self.varint(cell.payload_at)
        at, body = cell.payload_at + used, cell.payload_at + header_size
        spans = []
        while at < cell.payload_at + header_size:
            serial, used = self.varint(at)
            at += used
            length = _serial_length(serial)
            if serial >= 13 and serial % 2 == 1 and length > 0:
                spans.append((body, length))
            body += length
        return spans


def _serial_length(serial: int) -> int:
    fixed = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8, 7: 8, 8: 0, 9: 0}
    if serial in fixed:
        return fixed[serial]
    return (serial - 12) // 2 if serial % 2 == 0 else (serial - 13) // 2


def table_trees(source: Path, pages: Pages) -> dict[str, Tree]:
    con = sqlite3.connect(f"file:{source}?mode=ro&immutable=1", uri=True)
    try:
        roots = con.execute("SELECT name, rootpage FROM sqlite_master WHERE type = 'table'").fetchall()
    finally:
        con.close()
    return {name: pages.tree(root) for name, root in roots if root}


def _flip(image: bytearray, rng: random.Random, low: int, high: int, count: int) -> None:
    for _ in range(count):
        at = rng.randrange(low, high)
        image[at] ^= rng.randrange(1, 256)


def _flip_leaf(pages: Pages, image: bytearray, rng: random.Random, page: int) -> None:
    low = min([pages.content_start(page)] + pages.cell_pointers(page))
    _flip(image, rng, low, pages.start(page) + pages.usable, rng.randint(1, 4))


def _flip_interior(pages: Pages, image: bytearray, rng: random.Random, page: int) -> None:
    header = pages.header_at(page)
    regions = [(header + 8, header + 12)]  # the right-most child
    regions.append((header + 12, header + 12 + 2 * len(pages.cell_pointers(page))))
    regions += [(c, c + 8) for c in pages.cell_pointers(page)]
    for _ in range(rng.randint(1, 3)):
        low, high = rng.choice(regions)
        _flip(image, rng, low, high, 1)


def _swap(image: bytearray, a: Cell, b: Cell) -> None:
    first = bytes(image[a.rowid_at : a.rowid_at + a.rowid_len])
    image[a.rowid_at : a.rowid_at + a.rowid_len] = image[b.rowid_at : b.rowid_at + b.rowid_len]
    image[b.rowid_at : b.rowid_at + b.rowid_len] = first


def _rowid_pair(pages: Pages, rng: random.Random, leaves: list[int]) -> tuple[Cell, Cell] | None:
    """Two cells with same-length rowid varints: within a leaf or the last/first of neighbours."""
    for _ in range(50):
        if len(leaves) > 1 and rng.random() < 0.5:
            i = rng.randrange(len(leaves) - 1)
            left, right = pages.leaf_cells(leaves[i]), pages.leaf_cells(leaves[i + 1])
            if not left or not right:
                continue
            a, b = left[-1], right[0]
        else:
            cells = pages.leaf_cells(rng.choice(leaves))
            if len(cells) < 2:
                continue
            a, b = rng.sample(cells, 2)
        if a.rowid_len == b.rowid_len and image_rowid(pages, a) != image_rowid(pages, b):
            return a, b
    return None


def _bump_rowid(pages: Pages, image: bytearray, rng: random.Random, leaves: list[int]) -> Cell:
    """Raise one cell's rowid to the largest value its varint length holds (the length, and so
    the record, unchanged): it then runs ahead of the rowids after it, and of its parent's key."""
    cell = rng.choice(pages.leaf_cells(rng.choice(leaves[:-1] or leaves)))
    image[cell.rowid_at : cell.rowid_at + cell.rowid_len - 1] = b"\xff" * (cell.rowid_len - 1)
    image[cell.rowid_at + cell.rowid_len - 1] = 0x7F if cell.rowid_len < 9 else 0xFF
    return cell


def _varint_in(value: int, length: int) -> bytes:
    """``value`` (0 <= value < 2**(7 * length)) as a varint of exactly ``length`` (1..8) bytes:
    leading 0x80 bytes where it is shorter (SQLite reads such a varint as the same value)."""
    assert 1 <= length <= 8 and 0 <= value < 1 << (7 * length)
    groups = [(value >> (7 * (length - 1 - i))) & 0x7F for i in range(length)]
    return bytes([0x80 | g for g in groups[:-1]] + [groups[-1]])


def unorder_keys(pages: Pages, image: bytearray, rng: random.Random, page: int) -> int | None:
    """Rewrite one separator key of interior page ``page`` (not its first) to a value at or below
    the key before it, in the bytes it had; returns the new key, or None when the page has no such
    key (one cell, or keys that take 9 bytes)."""
    cells = pages.cell_pointers(page)
    candidates = [i for i in range(1, len(cells)) if pages.varint(cells[i] + 4)[1] <= 8]
    if not candidates:
        return None
    i = rng.choice(candidates)
    before, _ = pages.varint(cells[i - 1] + 4)
    at = cells[i] + 4
    length = pages.varint(at)[1]
    value = rng.randint(max(0, before - 100), before)
    image[at : at + length] = _varint_in(value, length)
    return value


def image_rowid(pages: Pages, cell: Cell) -> int:
    return pages.varint(cell.rowid_at)[0]


def _invalid_utf8(pages: Pages, image: bytearray, rng: random.Random, leaves: list[int]) -> int | None:
    for _ in range(50):
        page = rng.choice(leaves)
        cells = [c for c in pages.leaf_cells(page) if pages.local(c)]
        spans = [s for c in cells for s in pages.text_spans(c)]
        if spans:
            at, length = rng.choice(spans)
            image[at + rng.randrange(length)] = rng.choice((0xFF, 0xFE, 0xC0, 0xF8))
            return page
    return None


def _damage(
    kind: str, pages: Pages, trees: dict[str, Tree], rng: random.Random
) -> tuple[bytearray, str, int] | None:
    image = bytearray(pages.image)
    kernel = trees.get(KERNEL_TABLE, Tree([], []))
    if kind == "kernel-leaf" and kernel.leaves:
        page = rng.choice(kernel.leaves)
        _flip_leaf(pages, image, rng, page)
        return image, KERNEL_TABLE, page
    if kind == "kernel-interior" and kernel.interiors:
        page = rng.choice(kernel.interiors)
        _flip_interior(pages, image, rng, page)
        return image, KERNEL_TABLE, page
    if kind == "interior-keys" and kernel.interiors:
        page = kernel.interiors[0] if rng.random() < 0.5 else rng.choice(kernel.interiors)  # [0]: root
        return None if unorder_keys(pages, image, rng, page) is None else (image, KERNEL_TABLE, page)
    if kind == "rowid-order" and kernel.leaves and rng.random() < 0.5:
        cell = _bump_rowid(pages, image, rng, kernel.leaves)
        return image, KERNEL_TABLE, cell.page
    if kind == "rowid-order" and kernel.leaves:
        pair = _rowid_pair(pages, rng, kernel.leaves)
        if pair is None:
            return None
        _swap(image, *pair)
        return image, KERNEL_TABLE, pair[1].page
    if kind == "string-utf8" and STRING_TABLE in trees:
        found = _invalid_utf8(pages, image, rng, trees[STRING_TABLE].leaves)
        return None if found is None else (image, STRING_TABLE, found)
    if kind == "other-leaf":
        present = [t for t in OTHER_TABLES if t in trees and trees[t].leaves]
        if not present:
            return None
        table = rng.choice(present)
        page = rng.choice(trees[table].leaves)
        _flip_leaf(pages, image, rng, page)
        return image, table, page
    return None


def damaged_copies(source: Path, out_dir: Path, *, seed: int = 0, per_kind: int = 6) -> list[Damaged]:
    """Write up to ``per_kind`` damaged copies of ``source`` per kind into ``out_dir`` (fewer when
    the file has no such page, e.g. a kernel table without interior pages). Same seed, same bytes."""
    pages = Pages(Path(source).read_bytes())
    trees = table_trees(Path(source), pages)
    out_dir.mkdir(parents=True, exist_ok=True)
    damaged = []
    for kind in KINDS:
        rng = random.Random(f"{seed}:{kind}:{Path(source).name}")
        for index in range(per_kind):
            made = _damage(kind, pages, trees, rng)
            if made is None:
                break
            image, table, page = made
            path = out_dir / f"{Path(source).stem}.{kind}.{index:02d}.sqlite"
            path.write_bytes(bytes(image))
            damaged.append(Damaged(kind, path, table, page))
    return damaged


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python -m tests.corpus SOURCE OUT_DIR [PER_KIND]", file=sys.stderr)
        return 2
    per_kind = int(argv[2]) if len(argv) == 3 else 6
    for item in damaged_copies(Path(argv[0]), Path(argv[1]), per_kind=per_kind):
        print(f"{item.kind}\t{item.table}\t{item.page}\t{item.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
