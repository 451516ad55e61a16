"""Lineup and danger rules: loading, strict validation, and Python/DuckDB agreement on real names."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import duckdb
import pytest

from nsysq.base.errors import RulesError, UsageError
from nsysq.catalog.rules import (
    OTHER,
    DangerRule,
    Rule,
    first_match,
    like_to_regex,
    load_danger_rules,
    load_lineup_rules,
    rules_rows,
)

CASES_PATH = Path(__file__).with_name("rules_cases.toml")
CASES: list[dict[str, Any]] = tomllib.loads(CASES_PATH.read_text(encoding="utf-8"))["case"]
CASE_IDS = [f"{i + 1}:{c['short'][:40]}" for i, c in enumerate(CASES)]

# The SQL the engine runs, with the rules table built from rules_rows().
ENGINE_SQL = """
SELECT n.i,
       (SELECT r.category FROM rules r
         WHERE lower(CASE r.field WHEN 'demangled' THEN n.demangled ELSE n.short END) LIKE r.pattern
         ORDER BY r.rule_order LIMIT 1)
FROM names n ORDER BY n.i
"""


def _duckdb_answers(rules: list[Rule] | list[DangerRule]) -> list[str | None]:
    con = duckdb.connect()
    con.execute("CREATE TABLE rules (rule_order INTEGER, category VARCHAR, field VARCHAR, pattern VARCHAR)")
    con.executemany("INSERT INTO rules VALUES (?, ?, ?, ?)", rules_rows(rules))
    con.execute("CREATE TABLE names (i INTEGER, short VARCHAR, demangled VARCHAR)")
    con.executemany(
        "INSERT INTO names VALUES (?, ?, ?)",
        [(i, c["short"], c.get("demangled")) for i, c in enumerate(CASES)],
    )
    return [row[1] for row in con.execute(ENGINE_SQL).fetchall()]


# -- packaged files ----------------------------------------------------------------------------
def test_packaged_lineup_rules_load() -> None:
    rules = load_lineup_rules()
    assert len(rules) >= 20
    assert [r.order for r in rules] == list(range(1, len(rules) + 1))
    categories = {r.category for r in rules}
    for expected in (
        "Persistent GEMM (nvjet)",
        "cuBLAS GEMM",
        "CUTLASS GEMM",
        "CUTLASS (other)",
        "torch.compile (Triton)",
        "Flash attention",
        "Normalization",
        "Elementwise",
        "NCCL / communication",
        "nvFuser",
        "OpenMP / OpenACC offload",
    ):
        assert expected in categories
    assert OTHER not in categories


def test_packaged_danger_rules_load() -> None:
    rules = load_danger_rules()
    kinds = {r.kind for r in rules}
    assert {"split_k", "split_kv", "cascade_attention", "cublas_heuristic_gemm"} <= kinds
    assert all(r.reason and "\n" not in r.reason for r in rules)


def test_packaged_path_equals_repo_file() -> None:
    repo = Path(__file__).resolve().parents[1] / "queries" / "rules"
    assert load_lineup_rules(repo / "lineup_rules.toml") == load_lineup_rules()
    assert load_danger_rules(repo / "danger_rules.toml") == load_danger_rules()


def test_device_kernel_never_means_torch_compile() -> None:
    """The seed article's rule 'device_kernel = torch.compile' is wrong (research 1.1)."""
    rules = load_lineup_rules()
    for r in rules:
        if "device_kernel" in r.like or r.like in ("kernel", "kernel2"):
            assert r.category != "torch.compile (Triton)", r


def test_rules_rows_shape() -> None:
    rows = rules_rows(load_lineup_rules())
    assert rows[0][0] == 1
    assert all(len(r) == 4 and r[2] in ("short", "demangled") for r in rows)
    danger_rows = rules_rows(load_danger_rules())
    assert {r[1] for r in danger_rows} == {r.kind for r in load_danger_rules()}


# -- cases -------------------------------------------------------------------------------------
def test_enough_cases() -> None:
    assert len(CASES) >= 40
    assert sum(1 for c in CASES if c.get("danger")) >= 10
    assert sum(1 for c in CASES if c["source"].startswith("real:")) >= 20


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_case_category(case: dict[str, Any]) -> None:
    got = first_match(load_lineup_rules(), case["short"], case.get("demangled"))
    assert got == case["category"], case["source"]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_case_danger(case: dict[str, Any]) -> None:
    got = first_match(load_danger_rules(), case["short"], case.get("demangled"), default="")
    assert got == case.get("danger", ""), case["source"]


def test_duckdb_agrees_with_python_lineup() -> None:
    rules = load_lineup_rules()
    sql = [a if a is not None else OTHER for a in _duckdb_answers(rules)]
    py = [first_match(rules, c["short"], c.get("demangled")) for c in CASES]
    assert sql == py
    assert sql == [c["category"] for c in CASES]


def test_duckdb_agrees_with_python_danger() -> None:
    rules = load_danger_rules()
    sql = [a or "" for a in _duckdb_answers(rules)]
    py = [first_match(rules, c["short"], c.get("demangled"), default="") for c in CASES]
    assert sql == py
    assert sql == [c.get("danger", "") for c in CASES]


# -- LIKE semantics ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pattern", "name"),
    [
        ("%gemm%", "ampere_sgemm_128x64_nn"),
        ("nvjet_%", "nvjet_tst_192x192_64x4_2x1_v_bz_coopb_tnn"),
        ("rms_norm%", "rmsxnorm_kernel"),  # _ is a wildcard: documented
        ("a.b%", "a.b"),
        ("a.b%", "axb"),
        ("x\\y%", "x\\y"),
        ("(int)%", "(int)4"),
        ("%[lambda]%", "f[lambda]"),
        ("%a%", "line\nwith a newline"),
        ("abc", "abcd"),
        ("abc", "abc"),
        ("_", ""),
    ],
)
def test_like_to_regex_matches_duckdb(pattern: str, name: str) -> None:
    expected = duckdb.sql("SELECT ? LIKE ?", params=[name, pattern]).fetchone()
    assert expected is not None
    assert (like_to_regex(pattern).fullmatch(name) is not None) is bool(expected[0])


def test_first_match_order_and_missing_names() -> None:
    rules = [
        Rule(1, "Specific", "short", "%splitkreduce%"),
        Rule(2, "Generic", "short", "%reduce%"),
        Rule(3, "By template", "demangled", "%device_kernel<flash::%"),
    ]
    assert first_match(rules, "splitKreduce_kernel", None) == "Specific"
    assert first_match(rules, "reduce_kernel", None) == "Generic"
    assert first_match(rules, "device_kernel", None) == OTHER
    assert first_match(rules, None, "void cutlass::device_kernel<flash::X>(T1)") == "By template"
    assert first_match(rules, "saxpy", "saxpy(double *)", default="") == ""


# -- validation --------------------------------------------------------------------------------
GOOD_LINEUP = 'version = 1\n[[rule]]\ncategory = "GEMM"\nfield = "short"\nlike = "%gemm%"\n'
GOOD_DANGER = (
    'version = 1\n[[rule]]\nkind = "split_k"\nfield = "short"\nlike = "%splitk%"\n'
    'reason = "Partial sums are added in a split-dependent order."\n'
)


def _write(tmp_path: Path, text: str | bytes, name: str = "rules.toml") -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def test_good_user_files_load(tmp_path: Path) -> None:
    lineup = load_lineup_rules(_write(tmp_path, GOOD_LINEUP))
    assert lineup == [Rule(1, "GEMM", "short", "%gemm%", "")]
    danger = load_danger_rules(str(_write(tmp_path, GOOD_DANGER, "d.toml")))
    assert danger[0].kind == "split_k" and danger[0].order == 1


LINEUP_ERRORS = [
    ("not toml", "[[rule]\ncategory = ", "is not a valid TOML file"),
    ("no version", GOOD_LINEUP.replace("version = 1\n", ""), "put 'version = 1'"),
    ("bad version", GOOD_LINEUP.replace("version = 1", "version = 2"), "version = 2"),
    ("top-level key", "title = 'x'\n" + GOOD_LINEUP, "unknown top-level key 'title'"),
    ("no rules", "version = 1\n", "no [[rule]] tables"),
    ("rule not a table list", "version = 1\nrule = 3\n", "no [[rule]] tables"),
    ("unknown key", GOOD_LINEUP + 'pattern = "%x%"\n', "rule 1 has unknown key 'pattern'"),
    ("missing key", GOOD_LINEUP.replace('category = "GEMM"\n', ""), "rule 1 is missing 'category'"),
    ("bad field", GOOD_LINEUP.replace('"short"', '"mangled"'), "rule 1 has field 'mangled'"),
    ("empty pattern", GOOD_LINEUP.replace('"%gemm%"', '""'), "rule 1 has an empty or non-string"),
    ("non-string pattern", GOOD_LINEUP.replace('"%gemm%"', "3"), "rule 1 has an empty or non-string"),
    ("upper case", GOOD_LINEUP.replace("%gemm%", "%GEMM%"), "write like = '%gemm%'"),
    ("empty category", GOOD_LINEUP.replace('"GEMM"', '"  "'), "rule 1 has an empty category"),
    ("non-string note", GOOD_LINEUP + "note = 5\n", "rule 1 has a non-string note"),
    (
        "repeated pattern",
        GOOD_LINEUP + GOOD_LINEUP.replace("version = 1\n", "").replace("GEMM", "Other GEMM"),
        "rule 2 repeats field 'short' and pattern '%gemm%' of rule 1",
    ),
]


@pytest.mark.parametrize(
    ("text", "needle"), [e[1:] for e in LINEUP_ERRORS], ids=[e[0] for e in LINEUP_ERRORS]
)
def test_lineup_validation_errors(tmp_path: Path, text: str, needle: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(RulesError) as info:
        load_lineup_rules(path)
    message = str(info.value)
    assert needle in message
    assert str(path) in message  # names the file
    assert message.endswith(".") and "\n" not in message  # one sentence
    assert ";" in message  # ... and the fix after the semicolon
    assert isinstance(info.value, UsageError) and info.value.exit_code == 2


DANGER_ERRORS = [
    ("unknown key", GOOD_DANGER.replace("reason", "why"), "rule 1 has unknown key 'why'"),
    ("missing reason", GOOD_DANGER.split("reason")[0], "rule 1 is missing 'reason'"),
    ("kind not snake", GOOD_DANGER.replace('"split_k"', '"SplitK"'), "not snake_case"),
    ("multi-line reason", GOOD_DANGER.split("reason")[0] + 'reason = """a\nb"""\n', "several lines"),
    (
        "duplicate kind, other reason",
        GOOD_DANGER
        + GOOD_DANGER.replace("version = 1\n", "")
        .replace("%splitk%", "%splitkreduce%")
        .replace("Partial sums", "Other words"),
        "rule 2 repeats kind 'split_k' from rule 1 with a different reason",
    ),
    (
        "repeated pattern",
        GOOD_DANGER + GOOD_DANGER.replace("version = 1\n", "").replace("split_k", "split_k2"),
        "rule 2 repeats field 'short' and pattern '%splitk%' of rule 1",
    ),
]


@pytest.mark.parametrize(
    ("text", "needle"), [e[1:] for e in DANGER_ERRORS], ids=[e[0] for e in DANGER_ERRORS]
)
def test_danger_validation_errors(tmp_path: Path, text: str, needle: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(RulesError) as info:
        load_danger_rules(path)
    message = str(info.value)
    assert needle in message and str(path) in message
    assert message.endswith(".") and "\n" not in message


def test_same_kind_same_reason_is_fine(tmp_path: Path) -> None:
    text = GOOD_DANGER + GOOD_DANGER.replace("version = 1\n", "").replace("%splitk%", "%split_k%")
    rules = load_danger_rules(_write(tmp_path, text))
    assert [r.kind for r in rules] == ["split_k", "split_k"]


def test_missing_file_directory_and_binary(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="does not exist; pass the path of a .toml rules file"):
        load_lineup_rules(tmp_path / "nope.toml")
    with pytest.raises(RulesError, match="is a directory"):
        load_danger_rules(tmp_path)
    with pytest.raises(RulesError, match="cannot be read as UTF-8 text"):
        load_lineup_rules(_write(tmp_path, b"\xff\xfe\x00binary"))
