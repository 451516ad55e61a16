"""The HTML of ``nsysq report``: one self-contained page (inline CSS, a small inline script, inline
SVG), tables whose cells carry their raw values, and nothing that reaches the network.

Every table cell holds the value the command's JSON holds in ``data-value`` (JSON text, times in
ns) and shows it the way ``nsysq <command>`` prints it (:func:`nsysq.base.render.cell`, times in ms);
clicking a header sorts by the raw values. A Content-Security-Policy forbids any request.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nsysq.base.render import cell, to_json
from nsysq.base.table import Table
from nsysq.plot import shorten

__all__ = ["PageSection", "figure_html", "page_html", "table_html"]

SHOWN_UNIT = "ms"
NAME_WIDTH = 64
"""Longer texts in name-like columns are shortened (the full text on hover and in data-value)."""
_PROSE = {"clue", "evidence", "verdict", "reason", "warning", "value", "note"}
_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
_XML_PROLOG = re.compile(r"^\s*<\?xml[^>]*\?>\s*(<!DOCTYPE[^>]*>\s*)?", re.S)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)

CSS = """
:root{--fg:#1a1a1a;--muted:#5f6368;--line:#d0d4d9;--bg:#fff;--band:#f4f6f8;--accent:#1f5fa8;--warn:#9a5b00;--high:#b3261e}
*{box-sizing:border-box}
body{margin:0;color:var(--fg);background:var(--bg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
header,main,footer{max-width:1240px;margin:0 auto;padding:0 16px}
header h1{font-size:1.45rem;margin:18px 0 4px}
header p{margin:2px 0;color:var(--muted)}
nav{max-width:1240px;margin:8px auto 0;padding:0 16px}
nav a{display:inline-block;margin:2px 10px 2px 0;color:var(--accent);text-decoration:none}
section{margin:22px 0 30px;border-top:1px solid var(--line);padding-top:8px}
h2{font-size:1.2rem;margin:8px 0}
h3{font-size:1rem;margin:14px 0 4px}
h1,h2,h3,p,dd,li,figcaption{overflow-wrap:anywhere}
.cmd{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:var(--muted);margin:2px 0 6px;
overflow-wrap:anywhere}
.note{color:var(--muted);margin:4px 0}
.warn{color:var(--warn)}
.nodata{color:var(--muted);font-style:italic}
.scroll{overflow-x:auto;max-width:100%;-webkit-overflow-scrolling:touch}
table.nsysq{border-collapse:collapse;font-size:13px;margin:4px 0 8px;min-width:50%}
table.nsysq th,table.nsysq td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:left;
vertical-align:top}
table.nsysq th{background:var(--band);cursor:pointer;white-space:nowrap;user-select:none;position:sticky;
top:0}
table.nsysq th[aria-sort=ascending]::after{content:" \\25B2";font-size:10px}
table.nsysq th[aria-sort=descending]::after{content:" \\25BC";font-size:10px}
table.nsysq td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.nsysq td.prose{min-width:14em;max-width:38em}
table.nsysq tr.high td{color:var(--high)}
table.nsysq tfoot td{color:var(--muted);font-size:12px;border:0}
dl.card{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0}
dl.card dt{color:var(--muted)}dl.card dd{margin:0}
figure{margin:8px 0 12px}
figure svg{max-width:100%;height:auto;display:block}
figcaption{color:var(--muted);font-size:12px}
footer{color:var(--muted);font-size:12px;margin:30px auto 20px}
@media (max-width:640px){body{font-size:14px}table.nsysq{font-size:12px}
table.nsysq th,table.nsysq td{padding:2px 5px}dl.card{grid-template-columns:1fr}dl.card dd{margin-bottom:4px}
table.cards,table.cards tbody,table.cards tr,table.cards td{display:block;width:100%}
table.cards thead{display:none}
table.cards tr{border-bottom:2px solid var(--line);padding:4px 0}table.cards td{border:0;max-width:none}
table.cards td::before{content:attr(data-label) ": ";color:var(--muted)}}
@media print{nav,.hint{display:none}body{font-size:11px}section{break-before:auto}
figure,tr,dl.card{break-inside:avoid}.scroll{overflow:visible}table.nsysq th{position:static}
a{color:inherit;text-decoration:none}}
"""

SCRIPT = """
(function(){
function raw(td){var v=td.getAttribute('data-value');if(v===null)return td.textContent;
try{return JSON.parse(v);}catch(e){return v;}}
function cmp(a,b){if(a===b)return 0;if(a===null||a===undefined)return 1;if(b===null||b===undefined)return -1;
if(typeof a==='number'&&typeof b==='number')return a-b;return String(a).localeCompare(String(b));}
function sortBy(th){var table=th.closest('table'),body=table.tBodies[0],i=th.cellIndex;
var dir=th.getAttribute('aria-sort')==='descending'?'ascending':'descending';
var first=body.rows.length?raw(body.rows[0].cells[i]):null;
if(th.getAttribute('aria-sort')===null&&typeof first!=='number')dir='ascending';
Array.prototype.forEach.call(th.parentNode.cells,function(h){h.removeAttribute('aria-sort');});
th.setAttribute('aria-sort',dir);var sign=dir==='ascending'?1:-1;
var rows=Array.prototype.slice.call(body.rows);
rows.sort(function(r,s){var x=raw(r.cells[i]),y=raw(s.cells[i]);
if(x===null||y===null)return cmp(x,y);return sign*cmp(x,y);});
rows.forEach(function(r){body.appendChild(r);});}
document.querySelectorAll('table.nsysq thead th').forEach(function(th){
th.addEventListener('click',function(){sortBy(th);});
th.addEventListener('keydown',function(e){
if(e.key==='Enter'||e.key===' '){e.preventDefault();sortBy(th);}});});
})();
"""


@dataclass(frozen=True)
class PageSection:
    """One section of the page: an anchor id, a heading and its HTML body."""

    key: str
    title: str
    body: str


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _raw_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _display(column: str, value: Any, unit: str) -> tuple[str, str]:
    """(shown text, css class) for one value already in ``unit``."""
    text = cell(column, value, unit)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return esc(text), "num"
    full = "" if value is None else str(value)
    if column in _PROSE or column.endswith("_reason"):
        return esc(full), "prose"
    if len(full) > NAME_WIDTH:
        return f'<span title="{esc(full)}">{esc(shorten(full, NAME_WIDTH))}</span>', ""
    return esc(full), ""


def table_html(
    table: Table,
    *,
    attrs: Mapping[str, str],
    shown_rows: int | None = None,
    row_class: Sequence[str] | None = None,
    cards: bool = False,
    people: Table | None = None,
) -> str:
    """A sortable table of ``table`` (in ns): each cell's ``data-value`` is the raw JSON value, its
    text the value in ms as nsysq prints it. ``shown_rows`` keeps the first rows only (the caption
    says so); ``attrs`` become ``data-*`` attributes of the table; ``cards``: on a narrow screen
    each row becomes a card of labelled lines (for tables of prose, like the evidence board);
    ``people``: the same rows in ms when ``Table.in_unit`` cannot make them (the diff's totals)."""
    raw = to_json(table)
    people = people or table.in_unit(SHOWN_UNIT)
    rows = raw["rows"][:shown_rows] if shown_rows is not None else raw["rows"]
    head = "".join(
        f'<th scope="col" tabindex="0" data-col="{esc(c)}">{esc(p.replace("_", " "))}</th>'
        for c, p in zip(table.columns, people.columns, strict=True)
    )
    body: list[str] = []
    for i, (record, shown) in enumerate(zip(rows, people.rows, strict=False)):
        cells = []
        for column, shown_column, value in zip(table.columns, people.columns, shown, strict=True):
            text, css = _display(shown_column, value, SHOWN_UNIT)
            klass = f' class="{css}"' if css else ""
            label = f' data-label="{esc(shown_column.replace("_", " "))}"' if cards else ""
            cells.append(f"<td{klass}{label} data-value='{esc(_raw_json(record[column]))}'>{text}</td>")
        klass = f' class="{esc(row_class[i])}"' if row_class and row_class[i] else ""
        body.append(f"<tr{klass}>{''.join(cells)}</tr>")
    data = "".join(f' data-{esc(k)}="{esc(v)}"' for k, v in attrs.items())
    cut = ""
    if len(rows) < len(raw["rows"]):
        cut = (
            f'<tfoot><tr><td colspan="{len(table.columns)}">first {len(rows):,} of '
            f"{len(raw['rows']):,} rows (the command prints them all)</td></tr></tfoot>"
        )
    klass = "nsysq cards" if cards else "nsysq"
    counts = f'data-rows="{len(rows)}" data-total-rows="{len(raw["rows"])}"'
    return (
        f'<div class="scroll"><table class="{klass}" {counts}'
        f"{data}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>{cut}</table></div>"
    )


def footer_html(footer: Mapping[str, Any], path: str) -> str:
    """A table's footer (totals, counts) as a card; each value carries its raw JSON and its key."""
    items = []
    for key, value in footer.items():
        if isinstance(value, (list, dict)):
            continue
        shown_key = key[:-3] + "_" + SHOWN_UNIT if key.endswith("_ns") else key
        shown = value / 1e6 if key.endswith("_ns") and isinstance(value, (int, float)) else value
        text, _ = _display(shown_key, shown, SHOWN_UNIT)
        items.append(
            f'<dt>{esc(shown_key.replace("_", " "))}</dt><dd data-key="{esc(path)}.{esc(key)}" '
            f"data-value='{esc(_raw_json(value))}'>{text}</dd>"
        )
    return f'<dl class="card">{"".join(items)}</dl>' if items else ""


def figure_html(svg: str, caption: str) -> str:
    """An inline SVG figure (the XML prolog, DOCTYPE and RDF metadata dropped) with a caption."""
    body = _METADATA.sub("", _XML_PROLOG.sub("", svg), count=1)
    return f"<figure>{body}<figcaption>{esc(caption)}</figcaption></figure>"


def page_html(title: str, subtitle: Sequence[str], sections: Sequence[PageSection], generator: str) -> str:
    """The whole page: header, a contents line, the sections, a footer."""
    nav = "".join(f'<a href="#{esc(s.key)}">{esc(s.title)}</a>' for s in sections)
    parts = "".join(
        f'<section id="{esc(s.key)}" data-section="{esc(s.key)}"><h2>{esc(s.title)}</h2>{s.body}</section>'
        for s in sections
    )
    lines = "".join(f"<p>{esc(line)}</p>" for line in subtitle)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>{esc(title)}</h1>{lines}</header><nav class="hint">{nav}</nav>'
        f"<main>{parts}</main><footer>{esc(generator)}. Click a column header to sort; "
        "hover over a shortened name to read it whole.</footer>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
