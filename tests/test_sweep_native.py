"""The native NVTX sums (nsysq/analyses/_sweep.c through nsysq.analyses.nvtx_native) give the numpy
path's rows: each range's per_range row from attributed_pairs' pairs, and the same attributed ops,
on random nested stacks (ties, zero-length ranges, calls that outlast their range, ops with no call
or on a thread with no stack, several domains and threads), in both modes; `nsysq nvtx` takes the
native path and prints the same JSON as with it turned off, on the fixtures and the real exports;
bad input gives an error code, never a read outside an array."""

from __future__ import annotations

import ctypes
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nsysq.analyses import nvtx_native, nvtx_sweep
from nsysq.iterations import launches
from tests.conftest import REAL_TRACES

ROOT = Path(__file__).resolve().parents[1]
HEADER = ROOT / "nsysq" / "analyses" / "_sweep.h"

needs_library = pytest.mark.skipif(
    nvtx_native.library() is None, reason="the native sums are not built here (no C compiler)"
)


def _nest(rng: np.random.Generator, lo: int, hi: int, depth: int, out: list[tuple[int, int]]) -> None:
    """Ranges nested inside [lo, hi), with shared boundaries and zero-length ones now and then."""
    t = lo
    while t < hi and depth < 8:
        if rng.random() < 0.25:
            t += int(rng.integers(0, 3))
        a = t
        b = min(hi, a + int(rng.integers(0, max(2, (hi - lo) // 2))))
        if b < a:
            break
        out.append((a, b))
        if b - a > 2 and rng.random() < 0.7:
            _nest(rng, a, b, depth + 1, out)
        t = b if rng.random() < 0.5 else b + 1


def _stacks(rng: np.random.Generator) -> nvtx_sweep.Stacks:
    rows = []
    for tid in (7 << 24, 9 << 24)[: int(rng.integers(1, 3))]:
        for dom in range(int(rng.integers(1, 3))):
            found: list[tuple[int, int]] = []
            _nest(rng, 0, 400, 0, found)
            rows += [(tid, dom, a, b) for a, b in found]
    rows.sort(key=lambda r: (r[0], r[1], r[2], -r[3]))  # rid order: thread, domain, start, outer first
    tid, dom, start, end = (np.array([r[k] for r in rows], dtype=np.int64) for k in range(4))
    n = len(rows)
    kept = rng.random(n) < 0.95
    arrays = {"tid": tid, "dom": dom, "start": start, "end": end, "kept": kept, "pushpop": np.ones(n, bool)}
    return nvtx_sweep.build_stacks(None, arrays)  # type: ignore[arg-type]


def _ops(rng: np.random.Generator, st: nvtx_sweep.Stacks, *, with_calls: bool) -> nvtx_sweep.Ops:
    n = int(rng.integers(20, 600))
    gs = rng.integers(0, 500, n).astype(np.int64)
    ge = gs + rng.integers(-1, 40, n)  # a reversed interval now and then
    kind = rng.integers(0, 4, n).astype(np.int8)
    threads = np.unique(st.tid) if len(st.tid) else np.array([7 << 24])
    m = n + 5
    call_tid = rng.choice(np.concatenate([threads, [11 << 24]]), m).astype(np.int64)
    call_s = rng.integers(-5, 420, m).astype(np.int64)
    call_e = call_s + rng.integers(0, 30, m)
    of = rng.integers(-1, m, n).astype(np.int32)  # -1: no launching call
    called = of >= 0
    if with_calls:
        thread, codes = np.unique(call_tid, return_inverse=True)
        calls = nvtx_sweep.OpCalls(of, call_s, call_e, codes.astype(np.int64), thread)
        return nvtx_sweep.Ops(None, kind, gs, ge, called, None, None, None, calls)
    at = np.maximum(of, 0)
    tid, s, e = (np.where(called, v[at], 0) for v in (call_tid, call_s, call_e))
    return nvtx_sweep.Ops(np.arange(1, n + 1), kind, gs, ge, called, tid, s, e)


def _numpy_rows(st: nvtx_sweep.Stacks, ops: nvtx_sweep.Ops, innermost: bool) -> tuple[dict[str, Any], Any]:
    op_idx, range_idx, rank = nvtx_sweep.attributed_pairs(st, ops, innermost=innermost)
    rows = nvtx_sweep.per_range(ops, op_idx, range_idx, rank)
    assert rows is not None
    held = np.zeros(len(ops.gs), bool)
    held[op_idx] = True
    return rows, held


@needs_library
@pytest.mark.parametrize("seed", range(60))
def test_native_sums_are_the_pairs_summed(seed: int) -> None:
    rng = np.random.default_rng(seed)
    st = _stacks(rng)
    ops = _ops(rng, st, with_calls=bool(seed % 2))
    innermost = seed % 3 == 0
    found = nvtx_native.stack_sums(st, ops, innermost=innermost)
    assert found is not None
    want, held = _numpy_rows(st, ops, innermost)
    for column in nvtx_sweep.PER_RANGE_COLUMNS:
        assert np.asarray(found.rows[column]).tolist() == np.asarray(want[column]).tolist(), column
    assert np.array_equal(found.attributed, held)
    assert len(want["rid"]) > 0  # every seed attributes work: the comparison is not empty


@needs_library
@pytest.mark.parametrize("seed", range(40))
def test_picked_ops_are_the_ops_of_the_picked_ranges_pairs(seed: int) -> None:
    """nvtx_native.picked_ops: the ops holding a pair with a picked range (attributed_pairs), in
    both modes, whatever ranges are picked (none, some, all)."""
    rng = np.random.default_rng(seed)
    st = _stacks(rng)
    ops = _ops(rng, st, with_calls=bool(seed % 2))
    innermost = seed % 3 == 0
    picked = rng.random(len(st.tid)) < [0.0, 0.05, 0.3, 1.0][seed % 4]
    got = nvtx_native.picked_ops(st, ops, picked, innermost=innermost)
    op_idx, range_idx, _ = nvtx_sweep.attributed_pairs(st, ops, innermost=innermost)
    want = np.zeros(len(ops.gs), dtype=bool)
    want[op_idx[picked[range_idx]]] = True
    assert got is not None and np.array_equal(got, want)
    assert want.any() == (seed % 4 >= 2) or seed % 4 == 1  # 30% and all picked hold ops; none none


def _range_arrays(rng: np.random.Generator, *, unnested: bool = False) -> dict[str, Any]:
    """range_arrays.sql's columns of random nested stacks (in rid order), a few start/end ranges
    among them; ``unnested``: one range stretched past its parent's end."""
    rows = []
    for tid in (7 << 24, 9 << 24)[: int(rng.integers(1, 3))]:
        for dom in range(int(rng.integers(1, 3))):
            found: list[tuple[int, int]] = []
            _nest(rng, 0, 400, 0, found)
            rows += [(tid, dom, a, b, bool(rng.random() < 0.93)) for a, b in found]
    if unnested:
        inner = [k for k, r in enumerate(rows) if r[2] > 0 and r[3] < 390 and r[4]]
        k = inner[len(inner) // 2]
        rows[k] = (*rows[k][:3], 399, True)
    rows.sort(key=lambda r: (r[0], r[1], r[2], -r[3], not r[4]))  # rid order
    tid, dom, start, end = (np.array([r[k] for r in rows], dtype=np.int64) for k in range(4))
    pushpop = np.array([r[4] for r in rows], dtype=bool)
    return {
        "tid": tid,
        "dom": dom,
        "start": start,
        "end": end,
        "kept": rng.random(len(rows)) < 0.95,
        "pushpop": pushpop,
    }


@needs_library
@pytest.mark.parametrize("seed", range(40))
def test_native_stacks_are_the_sorted_boundaries(seed: int) -> None:
    """nvtx_native.build_stacks gives build_stacks' levels, parents, boundaries and stacks (start/end
    ranges' levels included) on random nests; None where a range does not nest (numpy counts it)."""
    rng = np.random.default_rng(seed)
    arrays = _range_arrays(rng, unnested=seed % 5 == 4)
    want = nvtx_sweep.build_stacks(None, arrays)  # type: ignore[arg-type]
    got = nvtx_native.build_stacks(arrays)
    if seed % 5 == 4:
        assert want.unnested > 0 and got is None
        return
    assert got is not None and want.unnested == 0 and got.unnested == 0
    for name in ("lvl", "prid", "ev_ts", "ev_inner"):
        assert np.asarray(getattr(got, name)).tolist() == np.asarray(getattr(want, name)).tolist(), name
    assert got.groups == want.groups and len(got.groups) > 0


def _call(lib: Any, *, ev_inner: list[int], prid: list[int], ops: list[int], kind: int = 0) -> int:
    ev_ts = np.array([0, 10, 20, 30][: len(ev_inner)], np.int64)
    inner = np.array(ev_inner, np.int32)
    end = np.array([100] * len(prid), np.int64)
    parent = np.array(prid, np.int32)
    order = np.array(ops, np.int32)
    s = e = gs = ge = np.array([5, 15, 25], np.int64)
    kinds = np.array([kind] * 3, np.int8)
    sums = np.zeros((nvtx_native.SUMS, len(prid)), np.int64)
    held = np.zeros(3, np.uint8)
    return int(
        lib.nsysq_nvtx_sums(
            ev_ts.ctypes.data,
            inner.ctypes.data,
            len(inner),
            end.ctypes.data,
            parent.ctypes.data,
            len(prid),
            order.ctypes.data,
            len(order),
            None,
            0,
            None,
            s.ctypes.data,
            e.ctypes.data,
            3,
            gs.ctypes.data,
            ge.ctypes.data,
            kinds.ctypes.data,
            3,
            0,
            sums.ctypes.data,
            held.ctypes.data,
        )  # fmt: skip
    )


@needs_library
def test_bad_input_gives_an_error_code() -> None:
    lib = nvtx_native.library()
    # op 0: range 0; ops 1 and 2: range 1 and its parent
    assert _call(lib, ev_inner=[0, 1], prid=[-1, 0], ops=[0, 1, 2]) == 1 + 2 + 2
    assert _call(lib, ev_inner=[0, 5], prid=[-1, 0], ops=[1]) == -1  # a range index past the ranges
    assert _call(lib, ev_inner=[0, 1], prid=[-1, 7], ops=[1]) == -1  # a parent past the ranges
    assert _call(lib, ev_inner=[0, 1], prid=[1, 0], ops=[1]) == -2  # parents in a cycle
    assert _call(lib, ev_inner=[0, 1], prid=[-1, 0], ops=[3]) == -1  # an op past the ops
    assert _call(lib, ev_inner=[0, 1], prid=[-1, 0], ops=[0], kind=4) == -4
    assert _call(lib, ev_inner=[0, 1], prid=[-1, 0], ops=[2, 1]) == -5  # not in GPU start order


def _run(path: Path, native: bool, *args: str, tmp: Path) -> str:
    import os
    import subprocess
    import sys

    env = dict(os.environ, NSYSQ_NATIVE_SWEEP="1" if native else "0", NSYSQ_CACHE_DIR=str(tmp / "c"))
    env["NSYSQ_CACHE_BACKGROUND"] = "0"
    code = "import sys; from nsysq.cli.root import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, args[0], str(path), "--format", "json", *args[1:]],
        capture_output=True, text=True, env=env, cwd=ROOT, check=False,
    )  # fmt: skip
    return f"{done.returncode}\n{done.stdout}"


def _paths() -> list[Path]:
    return [ROOT / "examples" / "bs1.sqlite", *REAL_TRACES]


@needs_library
@pytest.mark.parametrize("path", _paths(), ids=lambda p: p.name)
def test_commands_print_the_same_json_with_the_native_sweep(path: Path, tmp_path: Path) -> None:
    """nvtx (both modes, every row) and iters, with the native stacks and sums and without."""
    for args in (("nvtx", "--limit", "0"), ("nvtx", "--limit", "0", "--innermost"), ("iters",)):
        native, plain = _run(path, True, *args, tmp=tmp_path), _run(path, False, *args, tmp=tmp_path)
        assert native == plain, (path.name, args)


def _numbers_close(a: Any, b: Any) -> bool:
    """JSON documents equal but for floats within 1e-9 relative (DuckDB's parallel sums of
    floats, a stddev, vary in their last digits from run to run)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_numbers_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_numbers_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)
    return bool(a == b)


@needs_library
@pytest.mark.parametrize("path", _paths(), ids=lambda p: p.name)
def test_nvtx_scopes_pick_the_same_launches_natively(path: Path, tmp_path: Path) -> None:
    """census --nvtx (launch and innermost) of the most frequent range name: the same JSON with the
    native pass picking the launches and without it."""
    import json

    plain = _run(path, False, "nvtx", "--limit", "1", tmp=tmp_path)
    code, _, doc = plain.partition("\n")
    if code != "0":
        pytest.skip(f"{path.name}: no NVTX ranges")
    rows = json.loads(doc)["rows"]
    name = rows[0]["name"]
    for mode in ((), ("--nvtx-mode", "innermost")):
        args = ("census", "--nvtx", name, *mode)
        native, numpy_path = _run(path, True, *args, tmp=tmp_path), _run(path, False, *args, tmp=tmp_path)
        (c1, _, d1), (c2, _, d2) = native.partition("\n"), numpy_path.partition("\n")
        assert c1 == c2 and (c1 != "0" or _numbers_close(json.loads(d1), json.loads(d2))), (path.name, mode)


@needs_library
def test_nvtx_takes_the_native_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a trace with nested NVTX stacks, `nsysq nvtx` sweeps and sums natively: neither
    build_stacks' sort nor attributed_pairs runs."""
    import nsysq

    def no_pairs(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the numpy path ran")

    monkeypatch.setattr(nvtx_sweep, "attributed_pairs", no_pairs)
    monkeypatch.setattr(nvtx_sweep, "build_stacks", no_pairs)
    with nsysq.open(ROOT / "examples" / "bs1.sqlite", cache=False) as trace:
        frame = trace.nvtx()
    assert len(frame) > 0 and int(frame["kernels"].sum()) > 0


def _prototypes() -> dict[str, tuple[object, list[object]]]:
    """Every NSYSQ_API prototype of _sweep.h as (restype, argtypes)."""
    text = re.sub(r"/\*.*?\*/", "", HEADER.read_text(), flags=re.S)
    types = {"int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32}
    found = {}
    for restype, name, args in re.findall(r"NSYSQ_API\s+(\w+)\s+(\w+)\(([^)]*)\);", text):
        argtypes: list[object] = []
        for arg in (a.strip() for a in args.split(",")):
            if arg == "void":
                continue
            argtypes.append(ctypes.c_void_p if "*" in arg else types[arg.split()[0]])
        found[name] = (types[restype], argtypes)
    return found


def _fetched(rng: np.random.Generator, case: int) -> launches.FetchedCalls:
    """Random decoded calls and GPU ops (launches.fetch_calls' columns): dense or sparse keys
    (several processes), 4- or 8-byte correlation ids, calls that launch nothing, ops of no call or
    of a process id with thread bits, one pid for a table, and (case 5) a call's NULL end."""
    m = int(rng.integers(0, 300))
    processes = np.array([3, 5] if case % 3 == 1 else [3], dtype=np.int64)
    corr_type = np.int32 if case % 2 else np.int64
    corr = np.cumsum(rng.integers(1, 4, m)).astype(corr_type)
    tid = (rng.choice(processes, m) << 24) | rng.integers(0, 4, m)
    if case % 3 == 1:  # two processes: each its own ids, calls in key order
        order = np.lexsort((corr, tid >> 24))
        tid, corr = tid[order], corr[order]
    klass = (
        rng.choice(np.array([0, 1, 2], np.int32), m, p=[0.6, 0.3, 0.1])
        if case % 4 == 2
        else np.zeros(m, np.int32)
    )
    s = rng.integers(0, 10_000, m).astype(np.int64)
    end = s + rng.integers(0, 50, m)
    end_null = (rng.random(m) < 0.1).astype(np.uint8) if case == 5 else None
    calls = {
        "start": (s, None), "end": (end, end_null), "eventClass": (klass, None), "globalTid": (tid, None),
        "correlationId": (corr, None),
    }  # fmt: skip
    ops = []
    for _table in range(int(rng.integers(1, 4))):
        n = int(rng.integers(0, 400))
        high = int(corr.max()) + 3 if m else 5
        op_corr = rng.integers(-2, high, n).astype(corr_type)
        pid = rng.choice(processes, n) << 24
        pid[rng.random(n) < 0.05] += 1  # thread bits: no launch key
        gs = rng.integers(0, 10_000, n).astype(np.int64)
        ge = gs + rng.integers(-3, 60, n)  # a reversed interval now and then
        one_pid = len(processes) == 1 and n > 0 and rng.random() < 0.5
        pid_column = (np.array([processes[0] << 24]), None) if one_pid else (pid, None)
        ops.append(
            {
                "start": (gs, None),
                "end": (ge, None),
                "correlationId": (op_corr, None),
                "globalPid": pid_column,
            }
        )
    return launches.FetchedCalls(calls, ops)


@needs_library
@pytest.mark.parametrize("seed", range(48))
def test_native_launch_join_is_numpys(seed: int) -> None:
    """The calls joined to their GPU ops by the native pass (launches.calls_from) equal numpy's, on
    random calls and ops; the native pass answers where no NULL is read."""
    rng = np.random.default_rng(seed)
    fetched = _fetched(rng, seed % 6)
    copy = launches.FetchedCalls(dict(fetched.calls), [dict(o) for o in fetched.ops])
    null_end = bool(np.asarray(fetched.calls["end"][1]).any())
    native = launches._native_calls(fetched)
    expected = launches.numpy_calls(copy)
    if null_end:
        assert native is None
        return
    assert native is not None and expected is not None
    for field in ("tid", "key", "s", "e", "gpu", "launched", "op_call", "op_ns", "op_timed"):
        got, want = getattr(native, field), getattr(expected, field)
        assert got.dtype == want.dtype and np.array_equal(got, want), field


@needs_library
def test_native_launch_join_refuses_what_numpy_decides() -> None:
    """Keys that do not increase or do not fit send the join to numpy (call_keys gives None)."""
    tid = np.array([3 << 24, 3 << 24, 3 << 24], dtype=np.int64)
    assert nvtx_native.call_keys(tid, np.array([1, 2, 3], np.int32)) is not None
    assert nvtx_native.call_keys(tid, np.array([1, 3, 2], np.int32)) is None  # not increasing
    assert nvtx_native.call_keys(tid, np.array([1, 2, 1 << 32], np.int64)) is None  # does not fit
    assert nvtx_native.call_keys(np.array([-1, 0, 1], np.int64), np.array([1, 2, 3], np.int32)) is None


def test_ctypes_signatures_match_the_c_prototypes() -> None:
    prototypes = _prototypes()
    assert set(prototypes) == set(nvtx_native.SIGNATURES) and "nsysq_nvtx_sums" in prototypes
    for name, (restype, argtypes) in nvtx_native.SIGNATURES.items():
        assert prototypes[name] == (restype, argtypes), name
    version = re.search(r"#define NSYSQ_SWEEP_ABI_VERSION (\d+)", HEADER.read_text())
    assert version is not None and int(version.group(1)) == nvtx_native.ABI_VERSION
