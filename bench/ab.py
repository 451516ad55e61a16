"""Two trees of nsysq side by side: the same commands, old and new alternating, in one run.

    python bench/ab.py OLD_TREE                 # 5M kernels, 5 rounds
    python bench/ab.py OLD_TREE --kernels 200000 --rounds 3
    python bench/ab.py OLD_TREE --only "2 MB" --rounds 15   # the commands whose name says so

OLD_TREE is a checkout of nsysq (for example ``git worktree add /tmp/old <commit>``) with its page
decoder built (``python -c "import hatch_build, pathlib; hatch_build.compile_decoder(...)"`` or a
test run there). Each command runs once per round under each tree (``PYTHONPATH`` names the tree;
the same interpreter and packages), in the order old, new, old, new, ..., so the machine's drift
falls on both alike. Cold runs get a fresh cache directory; "cached copy" runs read a copy built
once per tree, with the kept answers dropped before each run. Prints, per command, the median wall
time, CPU and peak RSS of each tree and the median of the per-round ratios new/old.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import (  # noqa: E402
    NSYSQ,
    NVTX_NESTED_KERNELS,
    SPEED_FLEET,
    Result,
    Spec,
    interleaved,
    rank_traces,
    trace,
)

NEW_TREE = Path(__file__).resolve().parents[1]


def tree_env(tree: Path, cache_dir: Path) -> dict[str, str]:
    """The environment that runs nsysq from ``tree``, with its own cache directory."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # modules load from bytecode, as installed (bench/run.py)
    env.update(
        PYTHONPATH=str(tree),
        NSYSQ_CACHE_DIR=str(cache_dir),
        NSYSQ_CACHE_BACKGROUND="0",
        MPLBACKEND="Agg",
    )
    return env


def commands() -> list[tuple[str, list[str], dict[str, bool]]]:
    """(name, arguments, Spec options) of every command timed; ``{big}``, ``{other}``, ``{small}``,
    ``{nested}`` and ``{ranks}`` (bench/run.py --speed's rank traces) stand for the traces (see
    :func:`traces`: only those a chosen command reads are generated, when missing)."""
    cold = {"fresh_cache": True}
    return [
        ("census (first, cold cache)", ["census", "{big}"], cold),
        ("census --no-cache", ["census", "{big}", "--no-cache"], {}),
        ("census (cached copy, new question)", ["census", "{big}", "-n", "30"], {"forget_answers": True}),
        ("lineup (cached copy, new question)", ["lineup", "{big}"], {"forget_answers": True}),
        ("census (asked before)", ["census", "{big}"], {}),
        ("census --nvtx (first, cold cache)", ["census", "{big}", "--nvtx-like", "%/0"], cold),
        ("diff A B (first, cold)", ["diff", "{big}", "{other}"], cold),
        ("gaps (first, cold cache)", ["gaps", "{big}"], cold),
        ("check (first, cold cache)", ["check", "{big}"], cold),
        ("stats (first, cold cache)", ["stats", "{big}"], cold),
        ("--help", ["--help"], {}),
        ("census, 2 MB trace", ["census", "{small}", "--no-cache"], {}),
        ("census, nested-NVTX trace (first, cold cache)", ["census", "{nested}"], cold),
        ("nvtx, nested-NVTX trace (first, cold cache)", ["nvtx", "{nested}"], cold),
        (
            "nvtx --innermost, nested-NVTX trace (first, cold cache)",
            ["nvtx", "{nested}", "--innermost"],
            cold,
        ),
        ("iters, nested-NVTX trace (first, cold cache)", ["iters", "{nested}"], cold),
        (
            "census --nvtx step, nested-NVTX trace (first, cold cache)",
            ["census", "{nested}", "--nvtx", "step"],
            cold,
        ),
        (
            "nvtx, nested-NVTX trace (cached copy, new question)",
            ["nvtx", "{nested}"],
            {"forget_answers": True},
        ),
        (
            "nvtx --innermost, nested-NVTX trace (cached copy, new question)",
            ["nvtx", "{nested}", "--innermost"],
            {"forget_answers": True},
        ),
        (
            "iters, nested-NVTX trace (cached copy, new question)",
            ["iters", "{nested}"],
            {"forget_answers": True},
        ),
        (
            "census --nvtx step, nested-NVTX trace (cached copy, new question)",
            ["census", "{nested}", "--nvtx", "step"],
            {"forget_answers": True},
        ),
        ("fleet census, 24 ranks", ["fleet", "census", "--fail-on", "failed", "{ranks}"], {}),
        ("fleet collectives, 24 ranks", ["fleet", "collectives", "{ranks}"], {}),
    ]


def traces(chosen: list[tuple[str, list[str], dict[str, bool]]], kernels: int) -> dict[str, str]:
    """The trace each placeholder the chosen commands use stands for (generated when missing)."""
    used = {arg for _, cmd, _ in chosen for arg in cmd if arg.startswith("{")}
    makers = {
        "{big}": lambda: trace(kernels),
        "{other}": lambda: trace(kernels, seed=1),
        "{small}": lambda: trace(15_000),  # about 2 MB, as bench/run.py's
        "{nested}": lambda: trace(NVTX_NESTED_KERNELS, nested_nvtx=True),
        "{ranks}": lambda: rank_traces(*SPEED_FLEET)[0].parent,
    }
    return {name: str(make()) for name, make in makers.items() if name in used}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old", type=Path, help="the other checkout of nsysq")
    ap.add_argument("--kernels", type=int, default=5_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", help="time only the commands whose name contains this text")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="nsysq-ab-"))
    trees = {"old": args.old.resolve(), "new": NEW_TREE}
    envs = {label: tree_env(tree, work / label) for label, tree in trees.items()}
    chosen = [c for c in commands() if args.only is None or args.only in c[0]]
    paths = traces(chosen, args.kernels)
    try:
        copied = {  # the traces "cached copy" and "asked before" runs read
            arg
            for name, cmd, options in chosen
            if options.get("forget_answers") or "asked before" in name
            for arg in cmd
            if arg in paths
        }
        for env in envs.values():  # the copy each tree's runs read
            for placeholder in sorted(copied):
                build = [*NSYSQ, "cache", "build", paths[placeholder]]
                subprocess.run(build, env=env, check=True, capture_output=True)
        specs = [
            Spec(f"{label}: {name}", [*NSYSQ, *(paths.get(a, a) for a in cmd)], envs[label], **options)
            for name, cmd, options in chosen
            for label in trees
        ]
        results = interleaved(specs, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print_table(results, args)
    return 0


def print_table(results: list[Result], args: argparse.Namespace) -> None:
    print(f"{args.kernels:,} kernels, {args.rounds} rounds, old = {args.old}, new = {NEW_TREE}\n")
    print("| command | old | new | new/old (median of rounds) |")
    print("|---|---:|---:|---:|")
    for old, new in zip(results[::2], results[1::2], strict=True):
        ratio = statistics.median(n / o for n, o in zip(new.walls, old.walls, strict=True))
        name = old.name.removeprefix("old: ")
        print(f"| {name} | {_cell(old)} | {_cell(new)} | {ratio:.3f} |")


def _cell(res: Result) -> str:
    return f"{res.wall:.3f} s, {res.cpu:.2f} s CPU, {res.rss_mb:.0f} MB"


if __name__ == "__main__":
    raise SystemExit(main())
