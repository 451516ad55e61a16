"""Which nsys wrote the export, and what that nsys calls things: report names and titles, memory
labels, the NVTX default-domain prefix. nsys renamed its reports and labels over the years;
``nsysq stats`` prints what the nsys that wrote the export prints (docs/stats.md states each rule).

* **Report names and titles**: exports of nsys 2023.1 and later use the new names (``cuda_api_sum``)
  and titles (`` ** CUDA API Summary (cuda_api_sum):``); earlier ones the old names
  (``cudaapisum``) and titles (``CUDA API Statistics:``).
* **Memory labels**: an export with the ``ENUM_CUDA_MEMCPY_OPER`` table (nsys 2023.1+) names copy
  kinds by its labels (``[CUDA memcpy Host-to-Device]``, ``[CUDA memcpy Unified Host-to-Device]``);
  one without uses the short forms (``[CUDA memcpy HtoD]``, ``[CUDA Unified Memory memcpy HtoD]``).
* **NVTX names**: ``domain:text``; a range of the default domain is ``:text`` from 2023.1 and
  ``text`` before.

An export without version metadata (before 2022) is placed by its schema: with
``ENUM_CUDA_MEMCPY_OPER`` as 2023.1+, without as older."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nsysq.export import schema
from nsysq.export.check import connect_readonly

if TYPE_CHECKING:
    from nsysq.session import Session

_RENAMED = (2023, 1)  # the first nsys with the new report names, titles and ENUM tables
_VERSION = re.compile(r"^(\d{4})\.(\d+)")


@dataclass(frozen=True)
class Flavor:
    """What the nsys that wrote an export prints."""

    version: str  # EXPORT_PRODUCT_VERSION, or "unknown"
    new_names: bool  # report names cuda_api_sum, ... and " ** Title (name):" titles
    enum_labels: bool  # memory labels from ENUM_CUDA_MEMCPY_OPER ("Host-to-Device")
    nvtx_colon: bool  # default-domain NVTX ranges print as ":text"


def nsys_version(session: Session) -> str:
    """EXPORT_PRODUCT_VERSION from the export's metadata table ("unknown" without one). The table
    is not canonical (the cached copy does not hold it): read from the file, as nsysq info does."""
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if not session.schema.has(table):
            continue
        con = connect_readonly(session.path)
        try:
            row = con.execute(
                f"SELECT value FROM {table} WHERE name = 'EXPORT_PRODUCT_VERSION'"  # noqa: S608
            ).fetchone()
        finally:
            con.close()
        if row and row[0]:
            return str(row[0])
    return "unknown"


def flavor_of(session: Session) -> Flavor:
    """The export's flavor: from its nsys version, else from its schema."""
    version = nsys_version(session)
    has_enum = session.schema.has(schema.COPY_KIND)
    match = _VERSION.match(version)
    new = (int(match.group(1)), int(match.group(2))) >= _RENAMED if match else has_enum
    return Flavor(version=version, new_names=new, enum_labels=has_enum, nvtx_colon=new)


# Copy kinds as exports without ENUM_CUDA_MEMCPY_OPER print them (CUPTI's numbering).
_SHORT_KINDS = {
    0: "Unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
}
_UNIFIED_KINDS = {11: "HtoD", 12: "DtoH", 13: "DtoD"}


def memory_label(flavor: Flavor, op: str, copy_kind: int | None, enum_label: str | None) -> str:
    """``[CUDA memset]``, ``[CUDA memcpy Host-to-Device]`` or ``[CUDA memcpy HtoD]`` (by flavor)."""
    if op == "memset":
        return "[CUDA memset]"
    if flavor.enum_labels:
        return f"[CUDA memcpy {enum_label or 'Unknown'}]"
    if copy_kind in _UNIFIED_KINDS:
        return f"[CUDA Unified Memory memcpy {_UNIFIED_KINDS[copy_kind]}]"
    return f"[CUDA memcpy {_SHORT_KINDS.get(copy_kind if copy_kind is not None else 0, 'Unknown')}]"


def nvtx_name(flavor: Flavor, domain: str | None, text: str | None) -> str:
    """An NVTX range as nvtx_sum prints it: ``domain:text``; the default domain by flavor."""
    body = "" if text is None else text
    if domain is not None:
        return f"{domain}:{body}"
    return f":{body}" if flavor.nvtx_colon else body
