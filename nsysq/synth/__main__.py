"""``python -m nsysq.synth {example,big,fixtures} ...``"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from nsysq.synth.scenarios import all_fixtures, big, example_pair


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m nsysq.synth", description="Write synthetic nsys SQLite exports."
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_ex = sub.add_parser("example", help="write bs1.sqlite and bs16.sqlite into OUTDIR")
    p_ex.add_argument("outdir", type=Path)
    p_big = sub.add_parser("big", help="write one large benchmark export")
    p_big.add_argument("out", type=Path)
    p_big.add_argument("--kernels", type=int, default=1_000_000)
    p_big.add_argument("--seed", type=int, default=0)
    p_big.add_argument("--devices", type=int, default=2)
    p_big.add_argument("--streams", type=int, default=4)
    p_fx = sub.add_parser("fixtures", help="write every test fixture into OUTDIR")
    p_fx.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    if args.cmd == "example":
        paths = list(example_pair(args.outdir))
    elif args.cmd == "big":
        paths = [big(args.out, args.kernels, seed=args.seed, devices=args.devices, streams=args.streams)]
    else:
        paths = list(all_fixtures(args.outdir).values())
    for p in paths:
        print(f"{p}\t{p.stat().st_size} B")
    print(f"done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
