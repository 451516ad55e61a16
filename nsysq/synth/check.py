"""A fixture for ``nsysq check`` (tests/test_check.py): one nsys 2025.1 export holding what every
rule looks for, and what each rule must leave out.

Process 4242 on device 0: dense kernels (100 ms), a 700 ms idle gap, a gap of exactly 500 ms (not
strictly longer), sparse kernels (10% busy: low-utilization chunks), under-filled 1x1x1 launches,
a split-K nvjet kernel (danger), pageable and pinned async copies, synchronous copies (including
the small host-to-device ones and the same-device ones nsys skips), memsets on pinned, managed and
device memory, synchronous and asynchronous, device and stream synchronize calls, NVTX ranges
(nested) around some of it. Process 5151 on device 1: tiny kernels each launched by a call longer
than the kernel (launch-bound).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nsysq.synth.writer import H200, TraceSpec, global_pid, global_tid, write_trace

MS = 1_000_000
US = 1_000
BASE = 1_000 * MS
PID, OTHER = 4242, 5151


class _Builder:
    def __init__(self) -> None:
        self.spec = TraceSpec(
            version="2025.1",
            gpus=[
                dict(H200),
                {**H200, "id": 1, "cuDevice": 1, "uuid": "00000000-0000-0000-0000-0000000001h2"},
            ],
            threads=[{"nameId": "python3", "globalTid": global_tid(PID, PID)}],
        )
        self.corr = 0

    def call(self, name: str, start: int, end: int, pid: int = PID, tid: int | None = None) -> int:
        self.corr += 1
        row = {"nameId": name, "start": start, "end": end, "correlationId": self.corr}
        row["globalTid"] = global_tid(pid, pid if tid is None else tid)
        self.spec.runtime.append(row)
        return self.corr

    def kernel(self, name: str, start: int, dur: int, pid: int = PID, device: int = 0, **extra: Any) -> None:
        corr = self.call("cudaLaunchKernel_v7000", start - 8 * US, start - 2 * US, pid)
        self.spec.kernels.append(
            {
                "shortName": name,
                "demangledName": f"void {name}(float*)",
                "start": start,
                "end": start + dur,
                "deviceId": device,
                "globalPid": global_pid(pid),
                "correlationId": corr,
                "streamId": 7 if device == 0 else 13,
                **extra,
            }
        )

    def op(self, table: str, api: str, start: int, dur: int, **extra: Any) -> None:
        corr = self.call(api, start - 5 * US, start + dur + 2 * US)
        row = {
            "start": start,
            "end": start + dur,
            "correlationId": corr,
            "globalPid": global_pid(PID),
            **extra,
        }
        getattr(self.spec, table).append(row)

    def nvtx(self, text: str, start: int, end: int) -> None:
        self.spec.nvtx.append({"text": text, "start": start, "end": end, "eventType": 59})


def _kernels(b: _Builder) -> None:
    t = BASE
    for i in range(80):  # dense: 1 ms kernels every 1.25 ms (80% busy)
        name = "tiny_reduce" if i % 4 == 0 else ("nvjet_tst_64x8_splitK_v" if i % 10 == 1 else "gemm_main")
        grid = {"gridX": 1} if name == "tiny_reduce" else {}
        b.kernel(name, t, MS, **grid)
        t += MS + MS // 4
    t += 700 * MS  # a 700 ms gap (from the end of the last dense kernel)
    t -= MS // 4
    b.kernel("gemm_main", t, 2 * MS)
    t += 2 * MS + 500 * MS  # exactly 500 ms: not strictly longer
    b.kernel("gemm_main", t, 2 * MS)
    t += 2 * MS
    for _ in range(200):  # sparse: 0.1 ms kernels every 1 ms (10% busy)
        t += 900 * US
        b.kernel("elementwise_add", t, 100 * US, gridX=512)
        t += 100 * US
    b.nvtx("step", BASE - MS, BASE + 40 * MS)
    b.nvtx("forward", BASE + 5 * MS, BASE + 20 * MS)


def _copies(b: _Builder) -> None:
    t = BASE + 3 * MS
    kinds = {"copyKind": 1, "srcKind": 0, "dstKind": 2}
    for i, dur in enumerate((300 * US, 120 * US, 450 * US)):  # pageable async copies (flagged)
        b.op("memcpys", "cudaMemcpyAsync_v3020", t + i * MS, dur, bytes=1 << 20, **kinds)
    b.op(
        "memcpys",
        "cudaMemcpyAsync_v3020",
        t + 4 * MS,
        200 * US,
        bytes=1 << 20,
        copyKind=1,
        srcKind=1,
        dstKind=2,
    )
    b.op(
        "memcpys", "cudaMemcpyAsync_v3020", t + 5 * MS, 90 * US, bytes=4096, copyKind=2, srcKind=2, dstKind=0
    )
    sync = "cudaMemcpy_v3020"
    b.op("memcpys", sync, t + 8 * MS, 400 * US, bytes=1 << 20, **kinds)  # flagged
    b.op("memcpys", sync, t + 9 * MS, 30 * US, bytes=4096, **kinds)  # small host-to-device: skipped
    b.op("memcpys", sync, t + 10 * MS, 35 * US, bytes=64_000, **kinds)  # at the limit: skipped
    b.op("memcpys", sync, t + 11 * MS, 36 * US, bytes=64_001, **kinds)  # just above: flagged
    b.op("memcpys", sync, t + 12 * MS, 20 * US, bytes=100, copyKind=2, srcKind=2, dstKind=0)  # flagged
    same = {"copyKind": 8, "srcKind": 2, "dstKind": 2, "srcDeviceId": 0, "dstDeviceId": 0}
    b.op("memcpys", sync, t + 13 * MS, 50 * US, bytes=1 << 20, **same)  # same device: skipped
    other = {**same, "copyKind": 10, "dstDeviceId": 1}
    b.op("memcpys", sync, t + 14 * MS, 60 * US, bytes=1 << 20, **other)  # peer copy: flagged
    b.op(
        "memcpys", "cuMemcpyHtoD_v2", t + 15 * MS, 70 * US, bytes=1 << 20, **kinds
    )  # driver call: not matched


def _memsets_and_syncs(b: _Builder) -> None:
    t = BASE + 20 * MS
    for i, (api, kind, dur) in enumerate(
        (
            ("cudaMemset_v3020", 1, 40 * US),  # pinned: flagged
            ("cudaMemset_v3020", 4, 45 * US),  # managed: flagged
            ("cudaMemset_v3020", 2, 50 * US),  # device: not
            ("cudaMemsetAsync_v3020", 1, 55 * US),  # asynchronous: not
        )
    ):
        b.op("memsets", api, t + i * MS, dur, bytes=1 << 16, memKind=kind)
    t = BASE + 30 * MS
    for i, (api, dur) in enumerate(
        (
            ("cudaDeviceSynchronize_v3020", 3 * MS),
            ("cudaStreamSynchronize_v3020", 1 * MS),
            ("cudaDeviceSynchronize_v3020", 2 * MS),
            ("cudaEventSynchronize_v3020", 4 * MS),  # not a device or stream synchronize
            ("cudaStreamSynchronize_v3020", 500 * US),
        )
    ):
        b.call(api, t + i * 5 * MS, t + i * 5 * MS + dur)


def _launch_bound(b: _Builder) -> None:
    t = BASE + 50 * MS
    for _ in range(300):  # 10 us kernels, each launched by a 50 us call: the GPU waits on the launches
        corr = b.call("cudaLaunchKernel_v7000", t - 50 * US, t, OTHER)
        b.spec.kernels.append(
            {
                "shortName": "tiny_step",
                "demangledName": "void tiny_step(float*)",
                "start": t,
                "end": t + 10 * US,
                "deviceId": 1,
                "streamId": 13,
                "globalPid": global_pid(OTHER),
                "correlationId": corr,
            }
        )
        t += 60 * US


def check_trace(path: str | Path) -> Path:
    """Write the ``nsysq check`` fixture at ``path`` and return it."""
    b = _Builder()
    _kernels(b)
    _copies(b)
    _memsets_and_syncs(b)
    _launch_bound(b)
    b.spec.threads.append({"nameId": "worker", "globalTid": global_tid(OTHER, OTHER)})
    return write_trace(path, b.spec)
