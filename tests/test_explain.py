"""nsysq explain: every decoder family on real names (the real exports' StringIds and the research),
the checks against real launches, unknown names, and the CLI's JSON keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nsysq.analyses.explain import explain
from nsysq.catalog import kernel_names
from nsysq.session import Session
from nsysq.synth.scenarios import CUTLASS_GEMM, FA3_FWD
from tests import oracle
from tests.conftest import REAL_DIR, ROOT

# (family, name, expected fields) — names from the real exports (marked R) and the research notes.
CASES = [
    (
        "nvjet",
        "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN",  # R: H200 and the article
        {"types": "tst", "tile": "192x192", "tile_k": "64", "stages": "4", "cluster": "2x1", "layout": "TNN"},
    ),
    (
        "nvjet",
        "nvjet_qqtst_128x256_128x6_2x2_2cta_h_bz_Avec32UE8M0_Bvec32UE8M0_TNT",
        {"types": "qqtst", "tile": "128x256", "tile_k": "128", "stages": "6", "cluster": "2x2"},
    ),
    (
        "nvjet",
        "nvjet_sm90_hss_64x8_64x16_1x1_h_bz_splitK_NNT",
        {"arch": "90", "tile": "64x8", "stages": "16"},
    ),
    (
        "cublas_legacy",
        "ampere_sgemm_128x64_nn",  # R: RTX 4060 Ti
        {"arch": "ampere", "precision": "s", "tile": "128x64", "layout": "nn"},
    ),
    (
        "cublas_legacy",
        "ampere_h16816gemm_128x64_ldg8_stages_64x3_nn",
        {"mma": "16816", "tile_k": "64", "stages": "3"},
    ),
    (
        "xmma",  # R: RTX 3090
        "sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1"
        "_g1_tensor16x8x16_t1r3s3_aACCESS_execute_kernel_trt",
        {
            "op": "fprop",
            "tile": "128x128x32",
            "stages": "4",
            "warps": "2x2x1",
            "filter": "1x3x3",
            "owner": "trt",
        },
    ),
    (
        "xmma",
        "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
        "_kernel__5x_cublas",
        {"op": "gemm", "warpgroups": "1x1x1", "segment_k": "off", "owner": "cublas"},
    ),
    (
        "tensorrt",
        "trt_ampere_h16816gemm_64x64_ldg8_relu_stages_64x5_tn_v1",  # R
        {"tile": "64x64", "epilogue": "relu", "tile_k": "64", "stages": "5"},
    ),
    (
        "tensorrt",
        "sm50_xmma_pooling_fw_4d_FP16FP32NHWC_Average_FastDiv_CAlign8_execute_kernel_trt",  # R
        {"pool_arch": "50"},
    ),
    (
        "tensorrt",
        "void genericReformat::copyVectorizedKernel<double, __half, __half, (bool)1, (bool)0, (int)1>"
        "(unsigned int, const void *)",
        {"reformat": "copyVectorizedKernel"},
    ),  # R
    (
        "cutlass2",
        "void cutlass::Kernel2<cutlass_80_tensorop_s16816gemm_bf16_64x64_64x6_tn_align8>(T1::Params)",
        {
            "arch": "80",
            "opclass": "tensorop",
            "tile": "64x64x64",
            "stages": "6",
            "layout": "tn",
            "align": "8",
        },
    ),
    (
        "cutlass2",
        "cutlass_tensorop_s16816gemm_f16_256x128_32x3_nn_align8",  # CUTLASS profiler.md example
        {"tile": "256x128x32", "stages": "3", "extended": "s16816gemm_f16"},
    ),
    (
        "cutlass3",
        "cutlass3x_sm90_tensorop_gemm_f16_f16_f32_f16_f32_128x128x64_2x1x1_0_ntn_align8",  # profiler.md
        {"tile": "128x128x64", "cluster": "2x1x1", "stages": "0", "layout": "ntn"},
    ),
    (
        "cutlass3",
        CUTLASS_GEMM,  # the examples' device_kernel
        {
            "tile": "128x256x64",
            "cluster": "2x1x1",
            "stages": "4",
            "mainloop": "Sm90TmaGmmaWarpSpecializedCooperative",
        },
    ),
    (
        "cudnn",
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0",
        {"arch": "90", "direction": "fprop", "mma": "wgmma", "knob": "7", "triple_1": "64x128x128"},
    ),
    (
        "cudnn",
        "void cudnn::engines_precompiled::nchwToNhwcKernel<float>(int)",
        {"kernel": "nchwToNhwcKernel"},
    ),
    (
        "flash_attention_3",
        FA3_FWD,
        {"direction": "Fwd", "stages": "2", "block": "128x176", "head_dim": "128"},
    ),
    (
        "flash_attention_2",
        "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 4, cutlass::bfloat16_t>>, false, false>"
        "(flash::Flash_fwd_params)",
        {"kind": "splitkv_kernel", "head_dim": "128", "block": "64x128", "warps": "4"},
    ),
    (
        "vllm",
        "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, __nv_bfloat16, "
        "(vllm::Fp8KVCacheDataType)0>(const T1 *, const T1 *)",
        {"kernel": "reshape_and_cache_flash_kernel", "scalar": "__nv_bfloat16"},
    ),
    (
        "vllm",
        "void vllm::merge_attn_states_kernel<float, 4>(float *)",
        {"kernel": "merge_attn_states_kernel"},
    ),
    (
        "triton_inductor",
        "triton_red_fused_add_mean_mul_pow_2",
        {"category": "red", "fused": "fused_add_mean_mul_pow", "counter": "2"},
    ),
    ("triton_inductor", "triton_tem_fused_mm_0", {"category": "tem"}),
    (
        "nvfuser",
        "<unnamed>::nvfuser_pointwise_f0_c1_r0_g4(<unnamed>::Tensor<<unnamed>::__bfloat, (int)3, (int)3>)",
        {"scheduler": "pointwise", "g": "4"},
    ),  # R: H200
    ("nvfuser", "nvfuser_inner_persistent_f1_c1_r0_g2", {"scheduler": "inner_persistent"}),  # R
    (
        "nccl",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        {"collective": "AllReduce", "dtype": "bf16", "algorithm": "RING", "protocol": "LL"},
    ),
    ("nccl", "ncclKernel_AllReduce_RING_LL_Sum_float", {"collective": "AllReduce", "dtype": "float"}),
    ("nvhpc", "nvkernel_solve_F1L204_2", {"function": "solve", "line": "204"}),  # R: T4
]


@pytest.mark.parametrize(
    ("family", "name", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_decoders(family: str, name: str, expected: dict[str, str]) -> None:
    decoded = kernel_names.decode(name)
    assert decoded.family is not None and decoded.family.id == family
    got = {f.field: f.value for f in decoded.fields}
    assert {k: got.get(k) for k in expected} == expected
    for f in decoded.fields:
        assert f.confidence in kernel_names.CONFIDENCES and f.meaning and f.evidence


def test_every_family_has_a_case() -> None:
    assert {f.id for f in kernel_names.rules()[1]} == {c[0] for c in CASES}


def test_nvjet_flags_and_unknown_tokens_are_raw() -> None:
    decoded = kernel_names.decode("nvjet_sss_tf32_128x64_32x4_2x2f_v_algo2_NNT")
    flags = {f.value: f.confidence for f in decoded.fields if f.field == "flag"}
    assert flags == {"v": "inferred", "algo2": "unknown"}
    assert decoded.field_value("cluster_flag") == "f"
    layout = [f for f in decoded.fields if f.field == "layout"][0]
    assert layout.confidence == "unknown"  # the article's "A^T x B" is not repeated


def test_unknown_family_splits_template_arguments() -> None:
    name = (
        "void at::native::vectorized_elementwise_kernel<(int)8, at::native::bfloat16_copy_kernel_cuda("
        "at::TensorIteratorBase &)::[lambda(float) (instance 1)], "
        "std::array<char *, (unsigned long)2>>(int, T2, T3)"
    )
    data = explain(name)
    assert data["family"] is None and data["decoder"] == "no decoder for this family"
    assert data["template_arguments"] == [
        "(int)8",
        "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda(float) (instance 1)]",
        "std::array<char *, (unsigned long)2>",
    ]
    assert kernel_names.template_arguments("<unnamed>::k<<unnamed>::T, 3>(int)")[1] == ("<unnamed>::T", "3")


def _real(stem: str) -> Path:
    path = REAL_DIR / f"{stem}.sqlite"
    if not path.exists():
        pytest.skip("real exports not present")
    return path


def test_xmma_checks_on_the_tensorrt_export() -> None:
    """Research §1.2.3: tile x stages predicts the dynamic shared memory of the 7 non-indexed
    sm80_xmma kernels exactly, and warps the block of all 9; the indexed variants disagree."""
    path = _real("nsys2023.1_tensorrt-resnet_nvtx_RTX3090")
    names = [n for n in oracle.per_short_name(path) if n.startswith("sm80_xmma")]
    assert len(names) == 9
    with Session(path, cache=False) as trace:
        results = {n: explain(n, trace) for n in names}
        trt = explain("trt_ampere_h16816gemm_64x64_ldg8_relu_stages_64x5_tn_v1", trace)
    for name, data in results.items():
        by = {c["check"]: c["agrees"] for c in data["checks"]}
        assert by["block threads vs warp layout"] is True
        assert by["shared memory vs tile x stages"] is ("indexed" not in name), name
    assert [c["agrees"] for c in trt["checks"]] == [True]
    assert trt["checks"][0]["expected"] == 81920


def test_nvjet_checks_on_the_h200_export() -> None:
    path = _real("nsys2025.1_pytorch-nvfuser_cublas_nvtx_H200")
    with Session(path, cache=False) as trace:
        data = explain("nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT", trace)
    assert data["disagreements"] == 0 and len(data["checks"]) == 2
    assert data["launch_configs"][0]["threads_per_block"] == 384 and data["launch_configs"][0]["sms"] == 132


def test_short_name_decodes_the_demangled_name_in_a_trace() -> None:
    with Session(ROOT / "examples" / "bs1.sqlite", cache=False) as trace:
        data = explain("device_kernel", trace)
    assert data["launcher"] == "cutlass::device_kernel" and data["family"] == "cutlass3"
    assert data["launch_configs"] and sum(c["launches"] for c in data["launch_configs"]) == 748


def test_cli_json_keys() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "nsysq",
            "explain",
            "nvjet_tst_128x64_64x8_1x1_v_bz_TNT",
            "-f",
            "json",
            "--trace",
            str(ROOT / "examples" / "bs16.sqlite"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert list(data) == [
        "name",
        "demangled_name",
        "other_demangled_names",
        "decoded_from",
        "launcher",
        "family",
        "family_name",
        "library",
        "source",
        "decoder",
        "fields",
        "template_arguments",
        "trace",
        "launch_configs",
        "checks",
        "disagreements",
        "queries",
    ]
    assert data["queries"] and all("@" in q for q in data["queries"])


def test_field_changes_name_a_variant_swap() -> None:
    old = kernel_names.decode("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN")
    new = kernel_names.decode("nvjet_tst_128x64_64x8_2x1_v_bz_coopB_TNN")
    assert old.family_key == new.family_key
    assert kernel_names.field_changes(old, new) == ["tile 192x192 → 128x64", "stages 4 → 8"]


def test_example_board_explains_the_nvjet_swap_and_the_fill() -> None:
    import nsysq

    result = nsysq.diff(ROOT / "examples" / "bs1.sqlite", ROOT / "examples" / "bs16.sqlite")
    assert result.a.sms == result.b.sms == 132
    variants = [f for f in result.findings if f.kind == "new_variants" and "nvjet" in f.subject]
    assert len(variants) == 1
    swaps = variants[0].numbers["decoded_swaps"]
    assert {
        "removed": "nvjet_tst_64x8_64x16_1x1_v_bz_TNT",
        "new": "nvjet_tst_128x64_64x8_1x1_v_bz_TNT",
        "changes": ["tile 64x8 → 128x64", "stages 16 → 8"],
    } in swaps
    assert "decoded: tile 64x8 → 128x64, stages 16 → 8" in variants[0].evidence
    launch = [f for f in result.findings if f.kind == "launch_config"][0]
    assert "act_and_mul_kernel grid 8x1x1 → 128x1x1 on 132 SMs: fill 6% → 97%" in launch.evidence
    change = [c for c in launch.numbers["changes"] if c["kernel"] == "act_and_mul_kernel"][0]
    assert change["fill_a_pct"] == pytest.approx(100 * 8 / 132) and change["fill_b_pct"] == pytest.approx(
        100 * 128 / 132
    )


def test_cluster_check_against_launched_clusters(fixture_dir: Path) -> None:
    """nsys 2025.5 exports the launched cluster: the name's cluster field (inferred for nvjet) is
    confirmed by a launch with that cluster and flagged on one launched without a cluster."""
    import shutil
    import sqlite3

    name = "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN"
    path = fixture_dir / "clusters.sqlite"
    shutil.copy(fixture_dir / "v2025_5.sqlite", path)
    con = sqlite3.connect(path)
    sid = con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
    con.execute("INSERT INTO StringIds VALUES (?, ?)", (sid, name))
    rowids = [
        r[0] for r in con.execute("SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid LIMIT 3")
    ]
    for rowid, cluster in zip(rowids, [(1, 2, 1), (1, 2, 1), (0, 0, 0)], strict=True):
        con.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = ?, demangledName = ?, gridX = 2, gridY = 66, "
            "gridZ = 1, clusterX = ?, clusterY = ?, clusterZ = ? WHERE rowid = ?",
            (sid, sid, *cluster, rowid),
        )
    con.commit()
    con.close()
    with Session(path, cache=False) as trace:
        data = explain(name, trace)
    clusters = [c for c in data["checks"] if c["check"] == "cluster shape vs launch"]
    by_launch = {
        tuple(data["launch_configs"][c["config"]][f"cluster_{a}"] for a in "xyz"): c["agrees"]
        for c in clusters
    }
    assert by_launch == {(1, 2, 1): True, (0, 0, 0): False}
    assert data["disagreements"] >= 1
    before_2025_5 = {"cluster_x": None, "cluster_y": None, "cluster_z": None}
    assert kernel_names.checks(kernel_names.decode(name), before_2025_5) == []
