"""Synthetic nsys exports: small test fixtures, the article's BS1/BS16 pair, and big benchmarks.

Everything here is deterministic (fixed seeds, no clock, no environment data).
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nsysq.synth import schemas
from nsysq.synth.writer import (
    DEFAULT_PID,
    H200,
    V100_LEGACY,
    Row,
    TraceSpec,
    global_pid,
    global_tid,
    write_trace,
)

BASE_NS = 1_000_000_000  # session-relative start of GPU work (ns)

# ---------------------------------------------------------------------------------------------
# Layout helper: kernels / copies laid out back-to-back per (device, stream), each with its API
# call on the launching CPU thread.
# ---------------------------------------------------------------------------------------------


@dataclass
class Launch:
    """One GPU operation to place on the timeline."""

    kind: str  # "kernel" | "memcpy" | "memset"
    dur: int
    row: Row
    device: int = 0
    stream: int = 7


_API = {
    "kernel": "cudaLaunchKernel_v7000",
    "memcpy": "cudaMemcpyAsync_v3020",
    "memset": "cudaMemsetAsync_v3020",
}


class Timeline:
    """Places operations so that ops on one (device, stream) never overlap."""

    def __init__(self, rng: random.Random, pid: int = DEFAULT_PID, start: int = BASE_NS) -> None:
        self.rng = rng
        self.pid = pid
        self.cursor: dict[tuple[int, int], int] = {}
        self.start = start
        self.corr = 0
        self.kernels: list[Row] = []
        self.memcpys: list[Row] = []
        self.memsets: list[Row] = []
        self.runtime: list[Row] = []

    def place(self, op: Launch, gap: tuple[int, int] = (3_000, 6_000)) -> tuple[int, int]:
        lane = (op.device, op.stream)
        t = self.cursor.get(lane, self.start) + self.rng.randint(*gap)
        end = t + op.dur
        self.cursor[lane] = end
        self.corr += 1
        row = dict(op.row)
        row.update(
            {
                "start": t,
                "end": end,
                "deviceId": op.device,
                "streamId": op.stream,
                "correlationId": self.corr,
                "globalPid": global_pid(self.pid),
            }
        )
        {"kernel": self.kernels, "memcpy": self.memcpys, "memset": self.memsets}[op.kind].append(row)
        api_dur = self.rng.randint(1_500, 2_800)
        self.runtime.append(
            {
                "start": t - 2_900,
                "end": t - 2_900 + api_dur,
                "eventClass": 0,
                "globalTid": global_tid(self.pid, self.pid + op.device),
                "correlationId": self.corr,
                "nameId": _API[op.kind],
                "returnValue": 0,
            }
        )
        return t, end


def split_total(
    rng: random.Random, total_ns: int, n: int, sigma: float = 0.2, floor: int = 1_000
) -> list[int]:
    """``n`` positive integer durations (each >= ``floor``) summing exactly to ``total_ns``."""
    if n <= 0:
        return []
    if total_ns < n * floor:
        raise ValueError("total too small for the requested number of calls")
    weights = [rng.lognormvariate(0.0, sigma) for _ in range(n)]
    spare = total_ns - n * floor
    scale = spare / sum(weights)
    out = [floor + int(w * scale) for w in weights]
    out[-1] += total_ns - sum(out)
    return out


# ---------------------------------------------------------------------------------------------
# Kernel names (real shapes; see research/kernel-names-and-hardware.md section 1)
# ---------------------------------------------------------------------------------------------

CUTLASS_GEMM = (
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, "
    "int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarp"
    "SpecializedCooperative<4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1>>, cutlass::gemm::"
    "KernelTmaWarpSpecializedCooperative>, cute::tuple<cute::C<128>, cute::C<256>, cute::C<64>>, "
    "cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long>, cutlass::bfloat16_t, cute::tuple<"
    "long, cute::C<1>, long>, cute::TiledMMA<cute::MMA_Atom<cute::SM90_64x256x16_F32BF16BF16_SS<"
    "(cute::GMMA::Major)0, (cute::GMMA::Major)0>>>>, cutlass::epilogue::collective::"
    "CollectiveEpilogue<cutlass::epilogue::Sm90TmaWarpSpecializedCooperative>, void>>"
    "(T1::Params)"
)
FA3_FWD = (
    "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::"
    "CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1>>, cute::tuple<"
    "cute::C<128>, cute::C<176>, cute::C<128>>, 128, cutlass::bfloat16_t, float, cutlass::arch::"
    "Sm90, true, false, false, true, false, false, true, false, true, true, false, false>, flash::"
    "CollectiveEpilogueFwd<cute::tuple<cute::C<128>, cute::C<128>, cute::C<176>>, cute::tuple<"
    "cute::C<1>, cute::C<1>, cute::C<1>>, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, true, "
    "false, false, false>, flash::VarlenDynamicPersistentTileScheduler<128, 256, 128, false, true,"
    " true>>>>(T1::Params)"
)


def _vec(functor: str, width: int = 4) -> str:
    return (
        f"void at::native::vectorized_elementwise_kernel<{width}, {functor}, std::array<char *, 2"
        f">>(int, T2, T3)"
    )


VEC_BF16_COPY = _vec(
    "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 1)]"
    "::operator ()() const::[lambda() (instance 7)]::operator ()() const::[lambda(float) "
    "(instance 1)]"
)
VEC_MUL = _vec(
    "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, at::native::"
    "binary_internal::MulFunctor<float>>"
)
VEC_FILL = _vec("at::native::FillFunctor<long>", 8)
REF_FLASH = (
    "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, (vllm::Fp8KV"
    "CacheDataType)0>(const T1 *, const T1 *, T2 *, T2 *, const long *, long, long, long, long, "
    "long, int, int, int, const float *, const float *)"
)
ACT_AND_MUL = (
    "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>"
    "(T1 *, const T1 *, int)"
)
RMS_NORM = "void vllm::rms_norm_kernel<c10::BFloat16, 8>(T1 *, const T1 *, long, const T1 *, float, int, int)"
ROTARY = (
    "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(const long *, T1 *, T1 *, const T1"
    " *, int, long, long, int, int, int)"
)
REDUCE_ARGMAX = (
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<"
    "float>, unsigned int, long, 4>>(T3)"
)
INDEX_ELEM = (
    "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::"
    "index_kernel_impl<at::native::OpaqueType<2>>(at::TensorIteratorBase &, c10::ArrayRef<long>,"
    " c10::ArrayRef<long>)::[lambda(char *, const char *, long) (instance 1)]>(at::TensorIterator"
    "Base &, c10::ArrayRef<long>, c10::ArrayRef<long>, const T1 &, bool)::[lambda(int) "
    "(instance 1)]>(long, T3)"
)
CAT_COPY = (
    "void at::native::<unnamed>::CatArrayBatchedCopy<at::native::<unnamed>::OpaqueType<2>, "
    "unsigned int, 3, 128, 1>(T1 *, at::native::<unnamed>::CatArrInputTensorMetadata<T1, T2, T4,"
    " T5>, at::native::<unnamed>::TensorSizeStride<T2, 4U>, int, T2)"
)
UNROLLED = (
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::Tensor"
    "IteratorBase &)::[lambda() (instance 3)]::operator ()() const::[lambda() (instance 12)]::"
    "operator ()() const::[lambda(c10::BFloat16) (instance 1)], std::array<char *, 2>, 4, "
    "TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
    "at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>>(int, T1, T2, "
    "T4, T5, T6, T7)"
)

# nvjet tiles (cuBLASLt).  Shared by both batch sizes, then the 7+7 that the autotuner swaps.
NVJET_SHARED = [
    "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN",
    "nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT",
    "nvjet_tst_192x192_64x3_1x2_h_bz_coopB_NTN",
    "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNT",
    "nvjet_tst_256x128_64x4_2x1_v_bz_coopA_TNN",
    "nvjet_tst_128x128_64x6_1x1_v_bz_TNT",
]
NVJET_BS1_ONLY = [
    "nvjet_tst_64x8_64x16_1x1_v_bz_TNT",
    "nvjet_tst_64x8_64x16_1x1_h_bz_TNN",
    "nvjet_tst_64x16_64x16_1x1_v_bz_TNT",
    "nvjet_tst_64x32_64x16_1x1_v_bz_NNT",
    "nvjet_tst_128x8_64x12_1x1_v_bz_TNT",
    "nvjet_tst_64x64_64x8_1x1_v_bz_TNN",
    "nvjet_tst_128x16_64x12_1x1_h_bz_TNT",
]
NVJET_BS16_ONLY = [
    "nvjet_tst_128x64_64x8_1x1_v_bz_TNT",
    "nvjet_tst_128x128_64x6_2x1_v_bz_coopA_TNN",
    "nvjet_tst_192x128_64x5_1x2_h_bz_coopB_TNT",
    "nvjet_tst_256x64_64x6_2x1_v_bz_coopA_NNT",
    "nvjet_tst_128x192_64x5_2x1_v_bz_coopA_TNT",
    "nvjet_tst_64x128_64x8_1x2_h_bz_TNN",
    "nvjet_tst_256x96_64x5_1x1_v_bz_coopA_TNT",
]


@dataclass
class KernelPlan:
    """``calls`` launches of one (short, demangled) name whose durations sum to ``total_ns``."""

    short: str
    demangled: str
    calls: int
    total_ns: int
    grid: tuple[int, int, int] = (132, 1, 1)
    block: tuple[int, int, int] = (128, 1, 1)
    regs: int = 32
    dyn_smem: int = 0
    static_smem: int = 0
    sigma: float = 0.2


def _ms(x: float) -> int:
    return round(x * 1_000_000)


def _example_plans(bs: int) -> list[KernelPlan]:
    """Kernel plans of the BS1 / BS16 traces.  Numbers: see ``example_pair``."""
    b16 = bs == 16
    nvjet_kw: dict[str, Any] = {"grid": (2, 66, 1), "block": (384, 1, 1), "regs": 168, "dyn_smem": 213_204}
    plans = [
        KernelPlan(
            "device_kernel",
            CUTLASS_GEMM,
            748,
            _ms(916.86 if b16 else 877.38),
            grid=(132, 1, 1),
            block=(384, 1, 1),
            regs=168,
            dyn_smem=230_400,
        ),
        KernelPlan(
            "vectorized_elementwise_kernel",
            VEC_BF16_COPY,
            400,
            _ms(25.50 if b16 else 25.00),
            grid=(1184, 1, 1),
            regs=24,
        ),
        KernelPlan(
            "vectorized_elementwise_kernel",
            VEC_MUL,
            300,
            _ms(20.40 if b16 else 20.00),
            grid=(592, 1, 1),
            regs=26,
        ),
        KernelPlan(
            "vectorized_elementwise_kernel",
            VEC_FILL,
            183,
            _ms(16.30 if b16 else 15.98),
            grid=(64, 1, 1),
            regs=16,
        ),
    ]
    shared_ms = [51.94, 33.00, 29.50, 27.06, 24.50, 21.00]  # 187.00 ms in both traces
    for name, ms in zip(NVJET_SHARED, shared_ms, strict=True):
        plans.append(KernelPlan(name, name, 28, _ms(ms), **nvjet_kw))
    only = NVJET_BS16_ONLY if b16 else NVJET_BS1_ONLY
    only_ms = (
        [14.0, 13.5, 13.0, 12.5, 12.0, 11.5, 11.5] if b16 else [3.2, 2.9, 2.7, 2.5, 2.4, 2.2, 2.1]
    )  # 88.00 vs 18.00 ms
    for name, ms in zip(only, only_ms, strict=True):
        plans.append(KernelPlan(name, name, 28, _ms(ms), **nvjet_kw))
    plans += [
        KernelPlan(
            "act_and_mul_kernel",
            ACT_AND_MUL,
            700,
            _ms(28.75 if b16 else 25.00),
            grid=(bs * 8, 1, 1),
            block=(1024, 1, 1),
            regs=28,
        ),
        KernelPlan(
            "rms_norm_kernel",
            RMS_NORM,
            1400,
            _ms(18.24 if b16 else 12.00),
            grid=(bs * 8, 1, 1),
            block=(1024, 1, 1),
            regs=30,
        ),
        KernelPlan(
            "reshape_and_cache_flash_kernel",
            REF_FLASH,
            392,
            _ms(6.170 if b16 else 1.198),
            grid=(bs, 1, 1),
            block=(256, 1, 1),
            regs=22,
            sigma=0.05,
        ),
    ]
    # The rest ("other"): 4,468 calls, 68.442 ms (BS1) -> 66.780 ms (BS16).
    others = [
        ("rotary_embedding_kernel", ROTARY, 700, 14.0),
        ("reduce_kernel", REDUCE_ARGMAX, 392, 9.0),
        ("index_elementwise_kernel", INDEX_ELEM, 800, 11.0),
        ("CatArrayBatchedCopy", CAT_COPY, 600, 8.0),
        ("unrolled_elementwise_kernel", UNROLLED, 976, 10.0),
        ("triton_poi_fused_cat_1", "triton_poi_fused_cat_1", 500, 7.0),
        ("triton_red_fused_add_mean_mul_pow_2", "triton_red_fused_add_mean_mul_pow_2", 500, 68.442 - 59.0),
    ]
    target = 66.780 if b16 else 68.442
    ratio = target / 68.442
    acc = 0
    for i, (short, dem, calls, ms) in enumerate(others):
        total = _ms(ms * ratio) if i < len(others) - 1 else _ms(target) - acc
        acc += total
        plans.append(KernelPlan(short, dem, calls, total, grid=(bs * 16, 1, 1), regs=24))
    return plans


def _example_spec(bs: int) -> TraceSpec:
    rng = random.Random(1000 + bs)
    plans = _example_plans(bs)
    assert sum(p.calls for p in plans) == 8955
    ops: list[Launch] = []
    for p in plans:
        for dur in split_total(rng, p.total_ns, p.calls, p.sigma):
            ops.append(
                Launch(
                    "kernel",
                    dur,
                    {
                        "shortName": p.short,
                        "demangledName": p.demangled,
                        "gridX": p.grid[0],
                        "gridY": p.grid[1],
                        "gridZ": p.grid[2],
                        "blockX": p.block[0],
                        "blockY": p.block[1],
                        "blockZ": p.block[2],
                        "registersPerThread": p.regs,
                        "dynamicSharedMemory": p.dyn_smem,
                        "staticSharedMemory": p.static_smem,
                        "sharedMemoryExecuted": 233_472 if p.dyn_smem else 32_768,
                    },
                )
            )
    # Memory operations.  D2D: 29 ops / 81,000,000 B (BS1) -> 53 ops / 163,000,000 B (BS16).
    n_memcpy, n_d2d, d2d_bytes = (1147, 53, 163_000_000) if bs == 16 else (1099, 29, 81_000_000)
    n_memset = 429 if bs == 16 else 345
    d2d_sizes = split_total(rng, d2d_bytes, n_d2d, sigma=0.3, floor=65_536)
    for size in d2d_sizes:
        ops.append(
            Launch(
                "memcpy", 2_000 + size // 2_000, {"bytes": size, "copyKind": 8, "srcKind": 2, "dstKind": 2}
            )
        )
    for i in range(n_memcpy - n_d2d):
        h2d = i % 3 != 2
        size = rng.choice([4, 8, 64, 512, 4096, 16_384, 65_536]) * (bs if h2d else 1)
        ops.append(
            Launch(
                "memcpy",
                1_200 + size // 20_000,
                {
                    "bytes": size,
                    "copyKind": 1 if h2d else 2,
                    "srcKind": 1 if h2d else 2,
                    "dstKind": 2 if h2d else 1,
                },
            )
        )
    for _ in range(n_memset):
        size = rng.choice([4, 256, 2048, 65_536, 1_048_576])
        ops.append(Launch("memset", 800 + size // 50_000, {"bytes": size, "value": 0, "memKind": 2}))
    # Deterministic "program order": the same shuffle seed for both traces.
    order = random.Random(7)
    order.shuffle(ops)
    tl = Timeline(rng)
    nvtx: list[Row] = []
    tid = global_tid(DEFAULT_PID, DEFAULT_PID)
    step = 0
    chunk: list[tuple[int, int]] = []
    for op in ops:
        chunk.append(tl.place(op))
        if len(chunk) == 36:
            nvtx.append(
                {
                    "start": chunk[0][0] - 4_000,
                    "end": chunk[-1][0] - 500,
                    "eventType": 59,
                    "text": f"decoder_layer_{step % 28}",
                    "globalTid": tid,
                    "domainId": 0,
                }
            )
            step += 1
            chunk = []
        if step and step % 28 == 0 and not chunk:
            s28 = nvtx[-28]["start"] - 2_000
            nvtx.append(
                {
                    "start": s28,
                    "end": nvtx[-1]["end"] + 1_000,
                    "eventType": 59,
                    "text": "execute_model",
                    "globalTid": tid,
                    "domainId": 0,
                }
            )
    runtime = tl.runtime
    # A cudaStreamSynchronize after every model step.
    for r in nvtx:
        if r["text"] == "execute_model":
            tl.corr += 1
            runtime.append(
                {
                    "start": r["end"] + 500,
                    "end": r["end"] + 20_500,
                    "eventClass": 0,
                    "globalTid": tid,
                    "correlationId": tl.corr,
                    "nameId": "cudaStreamSynchronize_v3020",
                    "returnValue": 0,
                }
            )
    end = max(tl.cursor.values())
    return TraceSpec(
        version="2025.1",
        kernels=tl.kernels,
        memcpys=tl.memcpys,
        memsets=tl.memsets,
        runtime=sorted(runtime, key=lambda r: (r["start"], r["correlationId"])),
        nvtx=sorted(nvtx, key=lambda r: r["start"]),
        gpus=[dict(H200)],
        cuda_devices=[{"gpuId": 0, "cudaId": 0, "pid": DEFAULT_PID}],
        threads=[{"nameId": "python3", "priority": 0, "globalTid": tid}],
        strings=[],
        analysis={
            "duration": end - BASE_NS + 500_000_000,
            "startTime": 500_000_000,
            "stopTime": end + 1_000_000,
        },
        capture_metadata={
            "PROCESS_0:COMMAND": "python3",
            "PROCESS_0:ARGUMENT_0": f"bench_vllm.py --batch-size {bs}",
        },
    )


def example_pair(out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``bs1.sqlite`` and ``bs16.sqlite`` mirroring the article's BS1 vs BS16 case study.

    Schema 2025.1, one NVIDIA H200 (smCount 132), one process, stream 7.  Exact numbers:

    * 8,955 kernels in each; total kernel time 1,250.000 ms (BS1) and 1,374.000 ms (BS16),
      i.e. 1.25 s -> 1.37 s.
    * ``reshape_and_cache_flash_kernel`` (the only kernel with "flash" in its short name): 392
      calls in both, 1.198 ms -> 6.170 ms (5.150x per call; printed as 1.20 -> 6.17 ms).
    * memcpy 1,099 -> 1,147 ops; device-to-device (copyKind 8) 29 -> 53 ops and
      81,000,000 -> 163,000,000 bytes (decimal MB); memset 345 -> 429 ops.
    * GEMMs: 6 ``nvjet_tst_*`` tiles in both (187.00 ms each side), 7 tiles only in BS1
      (18.00 ms) and 7 other tiles only in BS16 (88.00 ms): persistent GEMM 205 -> 275 ms
      (1.34x).
    * BS1 census top: ``device_kernel`` 748 calls 877.38 ms, ``vectorized_elementwise_kernel``
      883 calls 60.98 ms, ``nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN`` 28 calls 51.94 ms.
    * Modest growth elsewhere: ``device_kernel`` 1.045x, ``rms_norm_kernel`` 1.52x,
      ``act_and_mul_kernel`` 1.15x, ``vectorized_elementwise_kernel`` 1.02x, the rest 0.976x.

    ``device_kernel`` is a **CUTLASS 3 (sm90 TMA warp-specialized cooperative) bf16 GEMM**
    (``cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<...>>``), not a
    torch.compile kernel: TorchInductor kernels are named ``triton_*`` (two such kernels are in
    the "other" group).  The article's "device_kernel = torch.compile" label is its own.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    a = write_trace(out / "bs1.sqlite", _example_spec(1))
    b = write_trace(out / "bs16.sqlite", _example_spec(16))
    return a, b


def headline_pair(out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``fan_before.sqlite`` and ``fan_after.sqlite``: a Gaussian-elimination-like pair where
    one kernel's change *is* the trace's change (schema 2024.6, one H200).

    * ``Fan2``: 100 launches of 27.95 ms (2,795 ms) → 100 of 7.01 ms (701 ms), grid 1024x1024x1 /
      block 4x4x1 → grid 256x256x1 / block 16x16x1: 99% of the GPU time and of its change.
    * ``Fan1``: 100 launches of 0.25 ms → 0.30 ms (1.2x, grid unchanged); ``memset`` kernels-free.
    * ``copy_rows``: 100 launches of 0.05 ms on both sides (1.0x).
    Kernel time 2,825.0 ms → 736.0 ms (0.26x); typical kernel change 1.2x.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for label, fan2, fan1, grid, block in (
        ("before", 27_950_000, 250_000, 1024, 4),
        ("after", 7_010_000, 300_000, 256, 16),
    ):
        tl = Timeline(random.Random(7))
        for _ in range(100):
            for name, dur, g, b in (
                ("Fan1", fan1, 1, 512),
                ("Fan2", fan2, grid, block),
                ("copy_rows", 50_000, 64, 256),
            ):
                row: Row = {"shortName": name, "demangledName": f"{name}(float *, float *, int, int)"}
                row.update(
                    gridX=g, gridY=g if name == "Fan2" else 1, blockX=b, blockY=b if name == "Fan2" else 1
                )
                tl.place(Launch("kernel", dur, row))
        spec = _spec_from(tl, "2024.6", gpus=[_gpu()], threads=[_thread(name="gaussian")])
        paths.append(write_trace(out / f"fan_{label}.sqlite", spec))
    return paths[0], paths[1]


# ---------------------------------------------------------------------------------------------
# Small fixtures
# ---------------------------------------------------------------------------------------------


def _kernels_on(
    tl: Timeline,
    rng: random.Random,
    names: list[tuple[str, str]],
    n: int,
    devices: int = 1,
    streams: tuple[int, ...] = (7,),
    extra: Row | None = None,
) -> None:
    for i in range(n):
        short, dem = names[i % len(names)]
        row: Row = {
            "shortName": short,
            "demangledName": dem,
            "gridX": rng.choice([1, 40, 132]),
            "registersPerThread": rng.choice([16, 32, 64]),
        }
        if extra:
            row.update(extra)
        tl.place(
            Launch(
                "kernel",
                rng.randint(2_000, 90_000),
                row,
                device=i % devices,
                stream=streams[(i // devices) % len(streams)],
            )
        )


def _memcpys_on(tl: Timeline, rng: random.Random, n: int, devices: int = 1, extra: Row | None = None) -> None:
    for i in range(n):
        kind = [1, 2, 8][i % 3]
        src, dst = {1: (1, 2), 2: (2, 0), 8: (2, 2)}[kind]
        row: Row = {
            "bytes": rng.choice([4096, 65_536, 1 << 20]),
            "copyKind": kind,
            "srcKind": src,
            "dstKind": dst,
        }
        if extra:
            row.update(extra)
        tl.place(Launch("memcpy", rng.randint(1_500, 40_000), row, device=i % devices))


def _memsets_on(tl: Timeline, rng: random.Random, n: int) -> None:
    for _ in range(n):
        tl.place(
            Launch(
                "memset",
                rng.randint(900, 5_000),
                {"bytes": rng.choice([4, 2048, 65_536]), "value": 0, "memKind": 2},
            )
        )


def _thread(pid: int = DEFAULT_PID, name: str = "python3") -> Row:
    return {"nameId": name, "priority": 0, "globalTid": global_tid(pid, pid)}


def _gpu(**over: Any) -> Row:
    row = dict(H200)
    row.update(over)
    return row


def _spec_from(tl: Timeline, version: str, **kw: Any) -> TraceSpec:
    return TraceSpec(
        version=version, kernels=tl.kernels, memcpys=tl.memcpys, memsets=tl.memsets, runtime=tl.runtime, **kw
    )


def _v2020_3() -> TraceSpec:
    rng = random.Random(2020)
    tl = Timeline(rng)
    names = [
        (f"__omp_offloading_31_18a80a1__Z_3foo_l{line}", f"__omp_offloading_31_18a80a1__Z_3foo_l{line}")
        for line in (42, 57, 88)
    ]
    _kernels_on(tl, rng, names, 120, devices=2)
    _memcpys_on(tl, rng, 12, devices=2)
    gpus = []
    for dev, bus in ((0, "0000:05:00.0"), (1, "0000:91:00.0")):
        row = dict(V100_LEGACY)
        row.update({"deviceId": dev, "pciBusId": bus})
        gpus.append(row)
    return _spec_from(tl, "2020.3", gpus=gpus, threads=[_thread()])


def _v2021_2() -> TraceSpec:
    rng = random.Random(2021)
    tl = Timeline(rng)
    _kernels_on(
        tl,
        rng,
        [("probe_GPU2", "probe_GPU2(int *, int *, int)"), ("build_GPU2", "build_GPU2(int *, int *, int)")],
        12,
    )
    _memcpys_on(tl, rng, 60)
    _memsets_on(tl, rng, 16)
    gpu = _gpu(
        name="Quadro RTX 6000",
        chipName="TU102",
        smCount=72,
        computeMajor=7,
        computeMinor=5,
        smMajor=7,
        smMinor=5,
    )
    return _spec_from(tl, "2021.2", gpus=[gpu], threads=[_thread()])


def _v2022_2_nonlazy() -> TraceSpec:
    rng = random.Random(2022)
    tl = Timeline(rng)
    _kernels_on(tl, rng, [("saxpy", "saxpy(int, float, float *, float *)")], 5)
    _memcpys_on(tl, rng, 15)
    tid = global_tid(DEFAULT_PID, DEFAULT_PID)
    nvtx: list[Row] = [
        {
            "start": BASE_NS - 900_000,
            "end": None,
            "eventType": 75,
            "text": "MPI",
            "globalTid": tid,
            "domainId": 1,
        },
    ]
    t = BASE_NS - 800_000
    for i in range(17):  # registered strings (textId), like nsys-MPI
        nvtx.append(
            {
                "start": t,
                "end": t + 20_000,
                "eventType": 59,
                "textId": ["MPI_Init", "MPI_Send", "MPI_Recv", "MPI_Barrier"][i % 4],
                "globalTid": tid,
                "domainId": 1,
            }
        )
        t += 40_000
    for i in range(5):  # inline text
        nvtx.append(
            {
                "start": t,
                "end": t + 50_000,
                "eventType": 59,
                "text": f"saxpy_iter_{i}",
                "globalTid": tid,
                "domainId": 0,
            }
        )
        t += 60_000
    return _spec_from(
        tl,
        "2022.2",
        nvtx=nvtx,
        gpus=[
            _gpu(
                name="NVIDIA A100-SXM4-40GB",
                chipName="GA100",
                smCount=108,
                computeMajor=8,
                computeMinor=0,
                smMajor=8,
                smMinor=0,
            )
        ],
        threads=[_thread()],
        analysis={"duration": 3_000_000_000, "startTime": 500_000_000, "stopTime": 3_500_000_000},
        lazy=False,
    )


def _v2023_1() -> TraceSpec:
    rng = random.Random(2023)
    tl = Timeline(rng)
    xmma = (
        "sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x128x32_"
        "stage4_warpsize2x2x1_g1_tensor16x8x16_execute_kernel_trt"
    )
    names = [
        (xmma, xmma),
        (
            "trt_ampere_h16816gemm_64x64_ldg8_relu_stages_64x5_tn_v1",
            "trt_ampere_h16816gemm_64x64_ldg8_relu_stages_64x5_tn_v1",
        ),
        (
            "copyVectorizedKernel",
            "void genericReformat::copyVectorizedKernel<double, "
            "__half, __half, true, false, 1>(unsigned long, int, int, int, int, int, int, int,"
            " int, int, int, int, int, int, int, void const*, int, int, int, int, int, int,"
            " int, int, int, int, int, int, int, void*, double const*, double const*, double,"
            " double, int, cudaTextureObject_t, int, int)",
        ),
    ]
    _kernels_on(tl, rng, names, 36)
    _memcpys_on(tl, rng, 4)
    tid = global_tid(DEFAULT_PID, DEFAULT_PID)
    nvtx: list[Row] = [
        {
            "start": -1_250_000,
            "end": None,
            "eventType": 75,
            "text": "TensorRT",
            "globalTid": tid,
            "domainId": 1,
        },
        {
            "start": -1_200_000,
            "end": None,
            "eventType": 39,
            "text": "trt-worker",
            "globalTid": tid,
            "domainId": 0,
        },
        {
            "start": 400_000,
            "end": None,
            "eventType": 34,
            "text": "engine built",
            "globalTid": tid,
            "domainId": 0,
        },
    ]
    for k in tl.kernels:
        nvtx.append(
            {
                "start": k["start"] - 6_000,
                "end": k["end"] - 2_000,
                "eventType": 59,
                "textId": f"onnx::Conv_{200 + k['correlationId']}",
                "globalTid": tid,
                "domainId": 1,
            }
        )
    return _spec_from(
        tl,
        "2023.1",
        nvtx=nvtx,
        gpus=[
            _gpu(
                name="NVIDIA GeForce RTX 3090",
                chipName="GA102",
                smCount=82,
                computeMajor=8,
                computeMinor=6,
                smMajor=8,
                smMinor=6,
            )
        ],
        threads=[_thread()],
        analysis={"duration": 1_400_000_000, "startTime": 0, "stopTime": 1_400_000_000},
    )


def _v2024_6() -> TraceSpec:
    rng = random.Random(2024)
    tl = Timeline(rng)
    names = [
        ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
        (
            "splitKreduce_kernel",
            "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, "
            "float, float, false, false, false>(cublasLt::cublasSplitKParams<float>, const T4 *, "
            "const T5 *, T5 *, const T6 *, const T6 *, const T7 *, const T4 *, T7 *, void *, "
            "long, T6 *, int *, T6, T6)",
        ),
        (
            "gemv2T_kernel_val",
            "void gemv2T_kernel_val<int, int, float, float, float, float, "
            "128, 16, 4, 4, false, false, false, true, false, cublasGemvParamsEx<int, "
            "cublasGemvTensorStridedBatched<const float>, cublasGemvTensorStridedBatched<const "
            "float>, cublasGemvTensorStridedBatched<float>, float>>(T13, T6, T6)",
        ),
        (
            "softmax_warp_forward",
            "void softmax_warp_forward<float, float, float, 10, false, "
            "false>(T2 *, const T1 *, int, int, int, const bool *, int, bool)",
        ),
    ]
    _kernels_on(tl, rng, names, 64, extra={"greenContextId": 0})
    _memcpys_on(tl, rng, 16)
    _memsets_on(tl, rng, 16)
    tid = global_tid(DEFAULT_PID, DEFAULT_PID)
    nvtx: list[Row] = []
    for i, k in enumerate(tl.kernels[::4]):
        row: Row = {
            "start": k["start"] - 5_000,
            "end": k["end"] + 1_000,
            "eventType": 59,
            "text": f"layer_{i}",
            "globalTid": tid,
            "domainId": 0,
        }
        if i % 5 == 0:
            row["binaryData"] = bytes([i % 256, 0x4E, 0x56, 0x54, 0x58])
        nvtx.append(row)
    return _spec_from(
        tl,
        "2024.6",
        nvtx=nvtx,
        gpus=[
            _gpu(
                name="NVIDIA GeForce RTX 4060 Ti",
                chipName="AD106",
                smCount=34,
                computeMajor=8,
                computeMinor=9,
                smMajor=8,
                smMinor=9,
            )
        ],
        threads=[_thread()],
        analysis={"duration": 2_700_000_000, "startTime": 480_000_000, "stopTime": 3_180_000_000},
    )


def _v2025_5() -> TraceSpec:
    rng = random.Random(2025)
    tl = Timeline(rng, pid=22836)
    names = [
        ("naive_gemm", "naive_gemm(const float *, const float *, float *, int, int, int)"),
        ("tiled_gemm", "void tiled_gemm<16>(const float *, const float *, float *, int, int, int)"),
    ]
    for i in range(40):
        short, dem = names[i % 2]
        clustered = i % 4 == 3
        tl.place(
            Launch(
                "kernel",
                rng.randint(50_000, 2_500_000),
                {
                    "shortName": short,
                    "demangledName": dem,
                    "mangledName": f"_Z{len(short)}{short}PKfS0_Pfiii",
                    "gridX": 7,
                    "gridY": 16,
                    "blockX": 16,
                    "blockY": 16,
                    "clusterX": 2 if clustered else 0,
                    "clusterY": 1 if clustered else 0,
                    "clusterZ": 1 if clustered else 0,
                    "maxPotentialClusterSize": 8 if clustered else 0,
                    "maxActiveClusters": 23 if clustered else 0,
                    "qmdBulkReleaseDone": None,
                },
            )
        )
    for i in range(4):
        tl.place(
            Launch(
                "memcpy",
                rng.randint(5_000, 20_000),
                {
                    "bytes": 102_400 * (i + 1),
                    "copyKind": 1 + i % 2,
                    "srcKind": 1 if i % 2 == 0 else 2,
                    "dstKind": 2 if i % 2 == 0 else 1,
                    "copyCount": 1 if i < 3 else 4,
                },
            )
        )
    for _ in range(4):
        tl.place(Launch("memset", 3_000, {"bytes": 102_400, "value": 0, "memKind": 2}))
    gpus = [
        _gpu(
            name="NVIDIA GeForce RTX 5070 Ti Laptop GPU",
            chipName="GB205",
            smCount=46,
            busLocation="0000:01:00.0",
            luid=79938,
            computeMajor=12,
            computeMinor=0,
            smMajor=10,
            smMinor=4,
        ),
    ]
    for gid, name, luid in ((1, "Intel(R) UHD Graphics", 78947), (2, "Microsoft Basic Render Driver", 79888)):
        row = {k: (0 if isinstance(v, int) else "") for k, v in H200.items()}
        row.update(
            {
                "vmId": H200["vmId"],
                "id": gid,
                "name": name,
                "isDiscrete": 1,
                "luid": luid,
                "cuDevice": 0,
                "uuid": "00000000-0000-0000-0000-000000000000",
            }
        )
        gpus.append(row)
    return _spec_from(
        tl,
        "2025.5",
        gpus=gpus,
        cuda_devices=[{"gpuId": 0, "cudaId": 0, "pid": 22836}],
        threads=[_thread(22836, "run.exe")],
        analysis={
            "duration": 624_443_000_000,
            "startTime": 32_833_851_000_000,
            "stopTime": 33_458_294_000_000,
        },
        capture_metadata={"DEVICE_TYPE": "Windows", "PROCESS_0:COLLECT_NVTX_TRACE": "false"},
    )


EDGE_NAMES: list[tuple[str, str]] = [
    ("device_kernel", FA3_FWD),
    ("device_kernel", CUTLASS_GEMM),
    (
        "Kernel2",
        "void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_64x64_64x6_tn_align8>(T1::Params)",
    ),
    ("vectorized_elementwise_kernel", VEC_BF16_COPY),
    ("vectorized_elementwise_kernel", VEC_MUL),
    ("vectorized_elementwise_kernel", VEC_FILL),
    ("triton_poi_fused_mul_silu_0", "triton_poi_fused_mul_silu_0"),
    (
        "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1",
        "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1",
    ),
    ("triton_per_fused_softmax_2", "triton_per_fused_softmax_2"),
    (
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    ),
    ("nvjet_hss_64x8_64x16_1x1_v_bz_splitK_NNT", "nvjet_hss_64x8_64x16_1x1_v_bz_splitK_NNT"),
    (
        "splitKreduce_kernel",
        "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, "
        "float, float, false, false, false>(cublasLt::cublasSplitKParams<float>, const T4 *, "
        "const T5 *, T5 *, const T6 *, const T6 *, const T7 *, const T4 *, T7 *, void *, long, "
        "T6 *, int *, T6, T6)",
    ),
    (
        "merge_attn_states_kernel",
        "void vllm::merge_attn_states_kernel<__nv_bfloat16, 8, 128>"
        "(T1 *, float *, const T1 *, const float *, const T1 *, const float *, unsigned int, "
        "unsigned int, unsigned int)",
    ),
    ("reshape_and_cache_flash_kernel", REF_FLASH),
    ("ядро_свёртки_µs", "void ядро_свёртки_µs<数据类型, 🚀>(float *)"),
    ("カーネル", "カーネル(int)"),
]

#: Ids used on purpose in ``edge_cases`` that are *not* in StringIds.
DANGLING_SHORT_ID = 900_001
DANGLING_DEMANGLED_ID = 900_002


def _edge_cases() -> TraceSpec:
    rng = random.Random(4040)
    tl = Timeline(rng)
    _kernels_on(tl, rng, EDGE_NAMES, 160, devices=2, streams=(7, 13, 14))
    for k in tl.kernels[::7]:
        k["mangledName"] = None  # nullable
    # zero-length kernels
    for stream in (7, 13):
        s = tl.cursor.get((0, stream), BASE_NS) + 1_000
        tl.cursor[(0, stream)] = s
        tl.corr += 1
        tl.kernels.append(
            {
                "start": s,
                "end": s,
                "deviceId": 0,
                "streamId": stream,
                "correlationId": tl.corr,
                "globalPid": global_pid(DEFAULT_PID),
                "shortName": "zero_length_kernel",
                "demangledName": "zero_length_kernel(void)",
            }
        )
    # dangling ids: a kernel whose names are not in StringIds
    for dangling_short in (True, False):
        s = tl.cursor[(1, 7)] + 2_000
        tl.cursor[(1, 7)] = s + 5_000
        tl.corr += 1
        tl.kernels.append(
            {
                "start": s,
                "end": s + 5_000,
                "deviceId": 1,
                "streamId": 7,
                "correlationId": tl.corr,
                "globalPid": global_pid(DEFAULT_PID),
                "shortName": DANGLING_SHORT_ID if dangling_short else "dangling_demangled_only",
                "demangledName": DANGLING_DEMANGLED_ID,
            }
        )
    tl.runtime[3]["correlationId"] = None  # nullable
    _memcpys_on(tl, rng, 20, devices=2)
    _memsets_on(tl, rng, 8)
    tid = global_tid(DEFAULT_PID, DEFAULT_PID)
    nvtx: list[Row] = [
        {
            "start": BASE_NS - 10_000,
            "end": tl.cursor[(0, 7)],
            "eventType": 59,
            "text": "générer 🚀 step",
            "globalTid": tid,
            "domainId": 0,
        },
        {
            "start": BASE_NS,
            "end": BASE_NS + 100_000,
            "eventType": 59,
            "text": None,
            "textId": None,
            "globalTid": tid,
            "domainId": 0,
        },  # nameless range
        {
            "start": BASE_NS + 5_000,
            "end": BASE_NS + 50_000,
            "eventType": 60,
            "text": "async",
            "globalTid": tid,
            "endGlobalTid": global_tid(DEFAULT_PID, DEFAULT_PID + 1),
            "rangeId": 1,
            "domainId": 0,
        },
        {
            "start": BASE_NS + 6_000,
            "end": None,
            "eventType": 34,
            "text": "mark",
            "globalTid": tid,
            "domainId": 0,
        },
    ]
    gpus = [
        _gpu(),
        _gpu(id=1, cuDevice=1, busLocation="0000:46:00.0", uuid="00000000-0000-0000-0000-0000000000h3"),
    ]
    return _spec_from(
        tl,
        "2025.1",
        nvtx=nvtx,
        gpus=gpus,
        cuda_devices=[
            {"gpuId": 0, "cudaId": 0, "pid": DEFAULT_PID},
            {"gpuId": 1, "cudaId": 1, "pid": DEFAULT_PID},
        ],
        threads=[_thread(), _thread(name="pt_autograd_0")],
        analysis={"duration": 2_000_000_000, "startTime": 0, "stopTime": 2_000_000_000},
    )


def _no_kernels() -> TraceSpec:
    rng = random.Random(2032)
    tid = global_tid(DEFAULT_PID, DEFAULT_PID)
    runtime: list[Row] = []
    t = BASE_NS
    for i in range(200):
        name = [
            "cudaMalloc_v3020",
            "cudaFree_v3020",
            "cudaGetDeviceProperties_v12000",
            "cudaLaunchKernel_v7000",
        ][i % 4]
        dur = rng.randint(1_000, 80_000)
        runtime.append(
            {
                "start": t,
                "end": t + dur,
                "eventClass": 0,
                "globalTid": tid,
                "correlationId": i + 1,
                "nameId": name,
                "returnValue": 0,
            }
        )
        t += dur + rng.randint(500, 5_000)
    return TraceSpec(
        version="2023.1",
        runtime=runtime,
        gpus=[
            _gpu(
                name="NVIDIA GeForce RTX 3060 Laptop GPU",
                chipName="GA106",
                smCount=30,
                computeMajor=8,
                computeMinor=6,
                smMajor=8,
                smMinor=6,
            )
        ],
        threads=[_thread()],
        analysis={"duration": 14_211_931_469, "startTime": 279_186_744, "stopTime": 14_491_118_213},
    )


def _graph_trace() -> TraceSpec:
    rng = random.Random(3030)
    tl = Timeline(rng)
    _kernels_on(tl, rng, EDGE_NAMES[:4], 30)
    _memcpys_on(tl, rng, 4)  # every kind of GPU op, so portable queries can be checked on this file
    _memsets_on(tl, rng, 3)
    graphs: list[Row] = []
    for i in range(12):
        s = tl.cursor[(0, 7)] + 4_000
        e = s + rng.randint(200_000, 900_000)
        tl.cursor[(0, 7)] = e
        tl.corr += 1
        graphs.append(
            {
                "start": s,
                "end": e,
                "deviceId": 0,
                "contextId": 1,
                "greenContextId": 0,
                "streamId": 7,
                "correlationId": tl.corr,
                "globalPid": global_pid(DEFAULT_PID),
                "graphId": 1 + i % 2,
                "graphExecId": 1 + i % 2,
            }
        )
        tl.runtime.append(
            {
                "start": s - 9_000,
                "end": s - 3_000,
                "eventClass": 0,
                "globalTid": global_tid(DEFAULT_PID, DEFAULT_PID),
                "correlationId": tl.corr,
                "nameId": "cudaGraphLaunch_v10000",
                "returnValue": 0,
            }
        )
    return _spec_from(
        tl,
        "2025.1",
        graph_traces=graphs,
        gpus=[_gpu()],
        threads=[_thread()],
        cuda_devices=[{"gpuId": 0, "cudaId": 0, "pid": DEFAULT_PID}],
        capture_metadata={"PROCESS_0:CUDA_GRAPH_TRACE_OPTIONS:MODE": "Graph"},
        analysis={"duration": 1_000_000_000, "startTime": 0, "stopTime": 1_000_000_000},
    )


_GRAPH_NODE_KERNELS = (
    (
        "rms_norm_kernel",
        "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16 *, const c10::BFloat16 *, float, int, int)",
    ),
    ("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", "nvjet_tst_64x8_64x16_4x1_v_bz_TNT"),
    (
        "act_and_mul_kernel",
        "void vllm::act_and_mul_kernel<c10::BFloat16>(c10::BFloat16 *, const c10::BFloat16 *, int)",
    ),
)


def _graph_replays(tl: Timeline, rng: random.Random, device: int, launches: int, graph_id: int) -> list[Row]:
    """``launches`` replays of one captured graph traced per node (nsys --cuda-graph-trace=node):
    every kernel carries graphNodeId and graphId (2025.5) and the cudaGraphLaunch call's
    correlationId; returns one NVTX push/pop range per replay on the launching thread."""
    tid = global_tid(tl.pid, tl.pid + device)
    ranges: list[Row] = []
    for _ in range(launches):
        t = tl.cursor.get((device, 7), tl.start) + rng.randint(20_000, 40_000)
        tl.corr += 1
        tl.runtime.append(
            {
                "start": t - 9_000,
                "end": t - 2_000,
                "eventClass": 0,
                "globalTid": tid,
                "correlationId": tl.corr,
                "nameId": "cudaGraphLaunch_v10000",
                "returnValue": 0,
            }
        )
        ranges.append(
            {
                "start": t - 12_000,
                "end": t - 1_000,
                "eventType": 59,
                "text": "decode_step",
                "globalTid": tid,
                "domainId": 0,
            }
        )
        for node, (short, dem) in enumerate(_GRAPH_NODE_KERNELS):
            end = t + rng.randint(3_000, 30_000)
            tl.kernels.append(
                {
                    "start": t,
                    "end": end,
                    "deviceId": device,
                    "streamId": 7,
                    "correlationId": tl.corr,
                    "globalPid": global_pid(tl.pid),
                    "shortName": short,
                    "demangledName": dem,
                    "gridX": 132,
                    "graphNodeId": 1000 * graph_id + node,
                    "graphId": graph_id,
                }
            )
            t = end + rng.randint(500, 1_500)
        tl.cursor[(device, 7)] = t
    return ranges


def _graph_node() -> TraceSpec:
    """Two processes (pid 4242 on device 0, pid 5151 on device 1), each with eager kernels and replays
    of one CUDA graph traced per node (2025.5 schema: kernels carry graphId and graphNodeId);
    correlation ids restart in each process, as they do in real exports."""
    rng = random.Random(5050)
    first, second = Timeline(rng), Timeline(rng, pid=5151)
    _kernels_on(first, rng, EDGE_NAMES[:3], 12)
    nvtx = _graph_replays(first, rng, 0, 8, 1)
    _kernels_on(second, rng, EDGE_NAMES[2:5], 9, extra=None)
    for row in second.kernels:  # the second process runs on device 1: its replays follow its kernels
        row["deviceId"] = 1
    second.cursor[(1, 7)] = second.cursor[(0, 7)]
    nvtx += _graph_replays(second, rng, 1, 5, 2)
    tl = first
    tl.kernels += second.kernels
    tl.runtime += second.runtime
    return _spec_from(
        tl,
        "2025.5",
        nvtx=nvtx,
        gpus=[_gpu(), _gpu(id=1, cuDevice=1)],
        threads=[_thread(), _thread(5151)],
        cuda_devices=[{"gpuId": 0, "cudaId": 0, "pid": DEFAULT_PID}, {"gpuId": 1, "cudaId": 1, "pid": 5151}],
        capture_metadata={
            "PROCESS_0:CUDA_GRAPH_TRACE_OPTIONS:MODE": "Node",
            "PROCESS_1:CUDA_GRAPH_TRACE_OPTIONS:MODE": "Node",
        },
        analysis={"duration": 1_000_000_000, "startTime": 0, "stopTime": 1_000_000_000},
    )


def _graph_node_v2024_6() -> TraceSpec:
    """The same replays written by nsys 2024.6, whose kernel table has graphNodeId but no graphId:
    a graph is then known by its nodes only."""
    return replace(_graph_node(), version="2024.6", cuda_devices=[])


def _not_nsys(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("CREATE TABLE measurements (id INTEGER PRIMARY KEY, label TEXT, value REAL)")
        con.executemany(
            "INSERT INTO measurements VALUES (?, ?, ?)", [(i, f"m{i}", i * 0.5) for i in range(10)]
        )
        con.commit()
    finally:
        con.close()
    return path


_SPECS: dict[str, Callable[[], TraceSpec]] = {
    "v2020_3": _v2020_3,
    "v2021_2": _v2021_2,
    "v2022_2_nonlazy": _v2022_2_nonlazy,
    "v2023_1": _v2023_1,
    "v2024_6": _v2024_6,
    "v2025_5": _v2025_5,
    "edge_cases": _edge_cases,
    "no_kernels": _no_kernels,
    "graph_trace": _graph_trace,
    "graph_node": _graph_node,
    "graph_node_v2024_6": _graph_node_v2024_6,
}

#: Fixture name -> nsys schema version it is written with (``None``: not an nsys export).
FIXTURE_VERSIONS: dict[str, str | None] = {
    "v2020_3": "2020.3",
    "v2021_2": "2021.2",
    "v2022_2_nonlazy": "2022.2",
    "v2023_1": "2023.1",
    "v2024_6": "2024.6",
    "v2025_5": "2025.5",
    "edge_cases": "2025.1",
    "no_kernels": "2023.1",
    "graph_trace": "2025.1",
    "graph_node": "2025.5",
    "graph_node_v2024_6": "2024.6",
    "not_nsys": None,
}

FIXTURE_NAMES: tuple[str, ...] = (*_SPECS, "not_nsys")


def fixture_spec(name: str) -> TraceSpec:
    """The ``TraceSpec`` of fixture ``name`` (all but ``not_nsys``)."""
    if name not in _SPECS:
        raise ValueError(f"unknown fixture {name!r}; known: {', '.join(FIXTURE_NAMES)}")
    return _SPECS[name]()


def fixture(name: str, path: str | Path) -> Path:
    """Write fixture ``name`` to ``path`` and return the path."""
    path = Path(path)
    if name == "not_nsys":
        return _not_nsys(path)
    return write_trace(path, fixture_spec(name))


def all_fixtures(out_dir: str | Path) -> dict[str, Path]:
    """Write every fixture as ``<out_dir>/<name>.sqlite``."""
    out = Path(out_dir)
    return {name: fixture(name, out / f"{name}.sqlite") for name in FIXTURE_NAMES}


assert set(FIXTURE_VERSIONS) == set(FIXTURE_NAMES)
assert all(v is None or v in schemas.VERSIONS for v in FIXTURE_VERSIONS.values())


# ---------------------------------------------------------------------------------------------
# Big benchmark exports (DuckDB bulk insert into the real DDL)
# ---------------------------------------------------------------------------------------------

_BIG_FAMILIES: list[tuple[str, str]] = [
    (
        "device_kernel",
        "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<"
        "cute::tuple<int, int, int, int>, Mainloop{i}>>(T1::Params)",
    ),
    (
        "vectorized_elementwise_kernel",
        "void at::native::vectorized_elementwise_kernel<4, "
        "at::native::Functor{i}<c10::BFloat16>, std::array<char *, 2>>(int, T2, T3)",
    ),
    ("nvjet_tst_{m}x{n}_64x{s}_{c}_v_bz_coopA_TNT", "nvjet_tst_{m}x{n}_64x{s}_{c}_v_bz_coopA_TNT"),
    ("triton_poi_fused_add_mul_{i}", "triton_poi_fused_add_mul_{i}"),
    ("triton_red_fused_sum_{i}", "triton_red_fused_sum_{i}"),
    ("triton_per_fused_softmax_{i}", "triton_per_fused_softmax_{i}"),
    (
        "rms_norm_kernel",
        "void vllm::rms_norm_kernel<c10::BFloat16, {i}>(T1 *, const T1 *, long, const T1 *, float, int, int)",
    ),
    (
        "act_and_mul_kernel",
        "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<"
        "c10::BFloat16>, {i}>(T1 *, const T1 *, int)",
    ),
    (
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<{i}ul>)",
    ),
    (
        "reduce_kernel",
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
        "at::native::Op{i}<float>, unsigned int, float, 4>>(T3)",
    ),
]


def big_names(n_names: int = 200, seed: int = 0) -> list[tuple[str, str, int]]:
    """``(short, demangled, median_ns)`` for the big export, most frequent first."""
    rng = random.Random(seed)
    out: list[tuple[str, str, int]] = []
    seen: set[tuple[str, str]] = set()
    i = 0
    while len(out) < n_names:
        short_t, dem_t = _BIG_FAMILIES[i % len(_BIG_FAMILIES)]
        fill = {
            "i": i,
            "m": 64 * (1 + i % 4),
            "n": 64 * (1 + (i // 4) % 4),
            "s": 3 + i % 5,
            "c": ["1x1", "2x1", "1x2"][i % 3],
        }
        key = (short_t.format(**fill), dem_t.format(**fill))
        i += 1
        if key in seen:
            continue
        seen.add(key)
        demangled = key[1] + _template_tail(i, random.Random(seed * 7919 + i)) if key[1] != key[0] else key[1]
        # heavy-tailed medians: ~2 us typical, some ~ms
        out.append((key[0], demangled, int(min(5e7, 1_500 + rng.paretovariate(1.3) * 1_500))))
    return out


def _template_tail(i: int, rng: random.Random) -> str:
    """The configuration CUTLASS 3 / CuTe / FlashAttention-3 / PyTorch kernels spell out in their
    demangled template arguments: real ones run from a few hundred to several thousand characters
    (5,835 in the H200 export under shared/traces/real)."""
    target = int(rng.lognormvariate(6.5, 0.7))  # median ~665 chars, long tail into the thousands
    parts: list[str] = []
    k = 0
    while sum(len(p) for p in parts) < target:
        m, n = 64 * (1 + (i + k) % 4), 64 * (1 + (i * 3 + k) % 4)
        parts.append(
            f"cute::tuple<cute::C<{m}>, cute::C<{n}>, cute::C<64>>, "
            f"cutlass::gemm::collective::StageCountAutoCarveout<{1024 * (1 + k % 8)}>, "
            f"cutlass::epilogue::fusion::LinearCombination<cutlass::bfloat16_t, float, {k}>"
        )
        k += 1
    return "<" + ", ".join(parts) + ">"


def _background_strings(n: int) -> list[str]:
    """The rest of a real StringIds: CUDA API names, NVTX and thread names, module paths."""
    apis = [
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        "cudaStreamSynchronize",
        "cudaEventRecord",
        "cudaGraphLaunch",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cudaStreamWaitEvent",
        "cudaMalloc",
        "cudaFree",
    ]
    out = [f"{a}_v{v}" for a in apis for v in (3020, 7000, 11060, 12000)]
    i = 0
    while len(out) < n:
        out.append(f"vllm.model_executor.layers.decoder_layer_{i % 64}.forward#step{i // 64}")
        out.append(f"/usr/lib/python3/dist-packages/torch/lib/libtorch_cuda.so+0x{i * 7919:x}")
        i += 1
    return out[:n]


def _sqlite_scanner_path() -> str:
    from importlib.resources import files

    import duckdb

    version = duckdb.__version__
    base = files("duckdb_extension_sqlite_scanner") / "extensions"
    for cand in (f"v{version}", *sorted(p.name for p in base.iterdir())):
        ext = base / cand / "sqlite_scanner.duckdb_extension"
        if ext.is_file():
            return str(ext)
    raise RuntimeError("sqlite_scanner extension file not found in duckdb_extension_sqlite_scanner")


def big(
    path: str | Path,
    n_kernels: int,
    *,
    seed: int = 0,
    devices: int = 2,
    streams: int = 4,
    nested_nvtx: bool = False,
    names_seed: int | None = None,
    slow_like: str = "",
    slow_factor: float = 1.0,
) -> Path:
    """A large realistic export (schema 2025.1) for benchmarks, bulk-written with DuckDB.

    ~200 distinct kernel names with Zipf-like call counts and Pareto-tailed durations;
    kernels never overlap within a (deviceId, streamId); memcpy = n/8, memset = n/25,
    NVTX push/pop ranges = n/4 (one per 4 kernel launches, on the launching thread), or with
    ``nested_nvtx`` n/3 + n/60 (a "step_N" range per 60 launches holding 20 "layer_N" ranges of 3),
    RUNTIME = one API call per kernel/memcpy/memset (~1.17x).
    ``names_seed`` (default ``seed``) picks the kernel names, so traces of one job share them;
    kernels whose short name contains ``slow_like`` run ``slow_factor`` times longer.
    """
    import duckdb

    if n_kernels < 1 or devices < 1 or streams < 1:
        raise ValueError("n_kernels, devices and streams must be positive")
    path = Path(path)
    version = "2025.1"
    names = big_names(200, seed if names_seed is None else names_seed)
    if slow_like:
        names = [(s, d, int(base * slow_factor) if slow_like in s else base) for s, d, base in names]
    api = ["cudaLaunchKernel_v7000", "cudaMemcpyAsync_v3020", "cudaMemsetAsync_v3020"]
    strings: list[str] = []
    for short, dem, _ in names:
        strings += [short, dem]
    strings += api
    strings += _background_strings(4000)
    threads = [
        {
            "nameId": f"worker_{d}_{s}",
            "priority": 0,
            "globalTid": global_tid(DEFAULT_PID, DEFAULT_PID + 1 + d * streams + s),
        }
        for d in range(devices)
        for s in range(streams)
    ]
    gpus = [_gpu(id=d, cuDevice=d, busLocation=f"0000:{0x45 + d:02x}:00.0") for d in range(devices)]
    spec = TraceSpec(
        version=version,
        gpus=gpus,
        threads=threads,
        strings=strings,
        cuda_devices=[{"gpuId": d, "cudaId": d, "pid": DEFAULT_PID} for d in range(devices)],
        analysis={"duration": 0, "startTime": 0, "stopTime": 0},
    )
    write_trace(path, spec)
    ids: dict[str, int] = {}
    for s in strings:
        ids.setdefault(s, len(ids) + 1)
    con = sqlite3.connect(path)
    try:
        from nsysq.synth.writer import KERNEL, MEMCPY, MEMSET, NVTX, RUNTIME, create_tables

        create_tables(con, version, [KERNEL, MEMCPY, MEMSET, NVTX, RUNTIME])
        con.commit()
    finally:
        con.close()

    n_names = len(names)
    gpid = global_pid(DEFAULT_PID)
    tid0 = global_tid(DEFAULT_PID, DEFAULT_PID + 1)
    db = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:  # under Jupyter DuckDB refuses any change to its bar without ipywidgets (it draws a widget then)
        db.execute("SET enable_progress_bar = false")
    except duckdb.Error:
        pass
    try:
        db.execute(f"LOAD '{_sqlite_scanner_path()}'")
        db.execute(f"ATTACH '{path}' AS t (TYPE sqlite)")
        db.execute(
            "CREATE TEMP TABLE names (idx INTEGER, short_id BIGINT, dem_id BIGINT, "
            "base BIGINT, regs INTEGER, grid INTEGER, block INTEGER)"
        )
        db.executemany(
            "INSERT INTO names VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    i,
                    ids[s],
                    ids[d],
                    base,
                    16 + 8 * (i % 12),
                    [1, 32, 132, 1024, 4096][i % 5],
                    [128, 256, 384, 1024][i % 4],
                )
                for i, (s, d, base) in enumerate(names)
            ],
        )
        lanes = devices * streams

        def u(salt: int) -> str:
            return f"((hash(i, {seed * 1000 + salt}) % 1000003) / 1000003.0)"

        # kernels: lane = (device, stream); seq = position in lane
        db.execute(f"""
            CREATE TEMP TABLE k AS
            WITH r AS (
                SELECT i, i % {devices} AS dev, (i // {devices}) % {streams} AS s,
                       i // {lanes} AS seq,
                       LEAST({n_names - 1}, CAST(floor({n_names} * pow({u(1)}, 3)) AS INTEGER))
                         AS idx,
                       {u(2)} AS u2, {u(3)} AS u3
                FROM range({n_kernels}) tbl(i)
            ), d AS (
                SELECT r.i, r.dev, r.s, r.seq, r.idx,
                       CAST(n.base * (0.5 + r.u2) AS BIGINT) AS dur,
                       CAST(1500 + r.u3 * 4000 AS BIGINT) AS gap
                FROM r JOIN names n USING (idx)
            )
            SELECT i, dev, s, seq, idx, dur,
                   {BASE_NS} + SUM(dur + gap) OVER (PARTITION BY dev, s ORDER BY seq
                       ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - dur AS st
            FROM d
        """)
        db.execute(f"""
            INSERT INTO t.CUPTI_ACTIVITY_KIND_KERNEL (start, "end", deviceId, contextId,
                greenContextId, streamId, correlationId, globalPid, demangledName, shortName,
                mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ,
                blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,
                localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted,
                graphNodeId, sharedMemoryLimitConfig)
            SELECT st, st + dur, dev, 1 + dev, 0, 7 + 2 * s, i + 1, {gpid}, n.dem_id,
                n.short_id, NULL, 1, 1, n.regs, n.grid, 1, 1, n.block, 1, 1, 0,
                CASE WHEN n.block = 384 THEN 213204 ELSE 0 END, 0, 0, i + 1,
                CASE WHEN n.block = 384 THEN 233472 ELSE 32768 END, NULL, 0
            FROM k JOIN names n USING (idx) ORDER BY i
        """)
        db.execute(f"""
            INSERT INTO t.CUPTI_ACTIVITY_KIND_RUNTIME (start, "end", eventClass, globalTid,
                correlationId, nameId, returnValue, callchainId)
            SELECT st - 2900, st - 2900 + 1500 + (i % 1300), 0, {tid0} + dev * {streams} + s,
                i + 1, {ids[api[0]]}, 0, NULL
            FROM k ORDER BY i
        """)
        # NVTX push/pop ranges on each lane's launching thread, nested as a real stack: a range opens
        # just before its first launch call and closes just after its last one (calls on a lane
        # never overlap: a kernel lasts >= 1.5 us, the next call starts >= 1.5 us after it ends).
        groups = [(60, 50, "'step'"), (3, 25, "'layer_' || ((seq // 3) % 20)")]
        for size, pad, name in groups if nested_nvtx else [(4, 25, "'layer_' || ((seq // 4) % 32)")]:
            db.execute(f"""
                INSERT INTO t.NVTX_EVENTS (start, "end", eventType, text, globalTid, domainId)
                SELECT st - 2900 - {pad}, last_st - 2900 + 1500 + (last_i % 1300) + {pad}, 59, {name},
                    {tid0} + dev * {streams} + s, 0
                FROM (SELECT *, LEAD(st, {size - 1}) OVER lane AS last_st,
                        LEAD(i, {size - 1}) OVER lane AS last_i
                      FROM k WINDOW lane AS (PARTITION BY dev, s ORDER BY seq))
                WHERE seq % {size} = 0 AND last_st IS NOT NULL ORDER BY i
            """)
        db.execute("DROP TABLE k")
        n_copy = n_kernels // 8
        n_set = n_kernels // 25
        for table, count, salt, corr0, stream, api_id in (
            ("MEMCPY", n_copy, 10, n_kernels, 3, ids[api[1]]),
            ("MEMSET", n_set, 20, n_kernels + n_copy, 5, ids[api[2]]),
        ):
            if count == 0:
                continue
            db.execute(f"""
                CREATE TEMP TABLE m AS
                WITH r AS (
                    SELECT i, i % {devices} AS dev, i // {devices} AS seq,
                        CAST(pow(2, 2 + floor({u(salt)} * 22)) AS BIGINT) AS bytes,
                        {u(salt + 1)} AS u2
                    FROM range({count}) tbl(i)
                ), d AS (
                    SELECT *, 1000 + bytes // 20000 AS dur, CAST(2000 + u2 * 30000 AS BIGINT)
                        AS gap FROM r
                )
                SELECT i, dev, seq, bytes, dur, (i % 10) AS kind_sel,
                    {BASE_NS} + SUM(dur + gap) OVER (PARTITION BY dev ORDER BY seq ROWS
                        BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - dur AS st
                FROM d
            """)
            if table == "MEMCPY":
                db.execute(f"""
                    INSERT INTO t.CUPTI_ACTIVITY_KIND_MEMCPY (start, "end", deviceId,
                        contextId, greenContextId, streamId, correlationId, globalPid, bytes,
                        copyKind, srcKind, dstKind)
                    SELECT st, st + dur, dev, 1 + dev, 0, {stream}, {corr0} + i + 1, {gpid},
                        bytes, CASE WHEN kind_sel < 5 THEN 1 WHEN kind_sel < 8 THEN 2 ELSE 8 END,
                        CASE WHEN kind_sel < 5 THEN 1 ELSE 2 END,
                        CASE WHEN kind_sel BETWEEN 5 AND 7 THEN 1 ELSE 2 END
                    FROM m ORDER BY i
                """)
            else:
                db.execute(f"""
                    INSERT INTO t.CUPTI_ACTIVITY_KIND_MEMSET (start, "end", deviceId,
                        contextId, greenContextId, streamId, correlationId, globalPid, value,
                        bytes, memKind)
                    SELECT st, st + dur, dev, 1 + dev, 0, {stream}, {corr0} + i + 1, {gpid}, 0,
                        bytes, 2
                    FROM m ORDER BY i
                """)
            db.execute(f"""
                INSERT INTO t.CUPTI_ACTIVITY_KIND_RUNTIME (start, "end", eventClass, globalTid,
                    correlationId, nameId, returnValue, callchainId)
                SELECT st - 2900, st - 2900 + 1500 + (i % 1300), 0, {tid0} + {lanes} + dev,
                    {corr0} + i + 1, {api_id}, 0, NULL
                FROM m ORDER BY i
            """)
            db.execute("DROP TABLE m")
        db.execute("DETACH t")
    finally:
        db.close()
    con = sqlite3.connect(path)
    try:
        lo, hi = con.execute('SELECT MIN(start), MAX("end") FROM CUPTI_ACTIVITY_KIND_RUNTIME').fetchone()
        con.execute(
            "UPDATE ANALYSIS_DETAILS SET duration = ?, startTime = ?, stopTime = ?",
            (hi - lo + 1_000_000, lo - 500_000, hi + 500_000),
        )
        con.commit()
    finally:
        con.close()
    return path


def rank_set(
    out_dir: str | Path,
    ranks: int = 8,
    n_kernels: int = 20_000,
    *,
    slow_rank: int | None = 3,
    slow_like: str = "nvjet",
    slow_factor: float = 3.0,
) -> list[Path]:
    """One export per rank of a generated job (``rank00.sqlite`` ...): the same kernels on every
    rank, durations reseeded per rank, and on ``slow_rank`` the kernels whose short name contains
    ``slow_like`` (nvjet: category "Persistent GEMM (nvjet)") ``slow_factor`` times longer."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank in range(ranks):
        slow = rank == slow_rank
        paths.append(
            big(
                out / f"rank{rank:02d}.sqlite",
                n_kernels,
                seed=rank,
                names_seed=0,
                slow_like=slow_like if slow else "",
                slow_factor=slow_factor if slow else 1.0,
            )
        )
    return paths
