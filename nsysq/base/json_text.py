"""The one way nsysq writes a JSON document for people and scripts: ``json.dumps(doc, indent=2,
default=str, ensure_ascii=False)``, byte for byte, its tables of rows written a column at a time.

The standard library's indenting encoder is its pure-Python one (the C encoder serves only compact
output): about 10 us a value, 0.12 s for the 12,500 iterations of ``nsysq iters`` on the bench's
nested trace. Every list of rows in the document (dicts with the same text keys, as
``base.render.to_json`` makes them) is written here instead: each column's values turned into text
in one pass (the C string escaper, ``int.__repr__``, ``float.__repr__``), then joined a row at a
time, at the indent the list has in the document; everything else, and any value that is not a
plain scalar, goes through ``json.dumps`` with the same options. tests/test_render.py holds the
output to ``json.dumps``'s on every kind of value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

_TOKEN = "\x00nsysq-rows-{}\x00"  # where a list of rows goes in the document's skeleton
_BOOLS = {True: "true", False: "false"}


def dumps(doc: Any) -> str:
    """``json.dumps(doc, indent=2, default=str, ensure_ascii=False)``."""
    tables: list[tuple[list[dict[str, Any]], tuple[str, ...]]] = []
    text = _standard(_skeleton(doc, tables))
    for i, (rows, keys) in enumerate(tables):
        token = _standard(_TOKEN.format(i))
        at = text.find(token)
        if at < 0 or text.find(token, at + 1) >= 0:  # a text that holds the token: no shortcut
            return _standard(doc)
        line = text.rfind("\n", 0, at) + 1
        indent = len(text[line:at]) - len(text[line:at].lstrip(" "))
        text = text[:at] + _rows(rows, keys, indent) + text[at + len(token) :]
    return text


def _standard(value: Any) -> str:
    return json.dumps(value, indent=2, default=str, ensure_ascii=False)


def _skeleton(value: Any, tables: list[tuple[list[dict[str, Any]], tuple[str, ...]]]) -> Any:
    """``value`` with each list of rows (:func:`_row_keys`) replaced by a token naming it."""
    if type(value) is dict:
        return {k: _skeleton(v, tables) for k, v in value.items()}
    if type(value) is list:
        keys = _row_keys(value)
        if keys is None:
            return [_skeleton(v, tables) for v in value]
        tables.append((value, keys))
        return _TOKEN.format(len(tables) - 1)
    return value


def _row_keys(rows: list[Any]) -> tuple[str, ...] | None:
    """The keys every row has, in order (None: not a non-empty list of such dicts)."""
    if not rows or not all(type(r) is dict for r in rows):
        return None
    keys = tuple(rows[0])
    if not all(type(k) is str for k in keys) or any(tuple(r) != keys for r in rows):
        return None
    return keys


def _rows(rows: list[dict[str, Any]], keys: tuple[str, ...], indent: int) -> str:
    """The list as json.dumps writes it where its opening bracket is on a line indented ``indent``."""
    row, key = " " * (indent + 2), " " * (indent + 4)
    if not keys:
        body = ",\n".join(f"{row}{{}}" for _ in rows)
    else:
        columns = [_column(k, [r[k] for r in rows], key) for k in keys]
        body = ",\n".join(
            f"{row}{{\n" + ",\n".join(parts) + f"\n{row}}}" for parts in zip(*columns, strict=True)
        )
    return f"[\n{body}\n{' ' * indent}]"


def _column(name: str, values: list[Any], key: str) -> list[str]:
    """Each row's ``"name": value`` line for one column, its key indented ``key``."""
    prefix = key + encode_basestring(name) + ": "
    kinds = set(map(type, values))
    encode: Callable[[Any], str]
    if kinds <= {int}:
        encode = int.__repr__
    elif kinds <= {str}:
        encode = encode_basestring
    elif kinds <= {bool}:
        encode = _BOOLS.__getitem__
    elif kinds <= {float} and all(map(math.isfinite, values)):
        encode = float.__repr__
    else:
        nested = "\n" + key

        def encode(value: Any) -> str:
            return _value(value, nested)

    return list(map(prefix.__add__, map(encode, values)))


def _value(value: Any, nested: str) -> str:
    """One value as json.dumps writes it; a list or dict with its lines after the first indented
    by ``nested``."""
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, list | tuple | dict):
        return _standard(value).replace("\n", nested)
    return encode_basestring(str(value))  # default=str


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == float("inf"):
        return "Infinity"
    if value == -float("inf"):
        return "-Infinity"
    return float.__repr__(value)
