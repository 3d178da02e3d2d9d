"""benchmarks/agreement.py says what it measured: on a file the shipped constants were not fitted
on, the shipped judge's figures come first, named `shipped`, and refits are named as refits; its
embedding cache lives under the run's cache folder, never the system temp dir."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _shared_data import shared_file

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
DBDC3 = "dbdc3_breakdown_dev.jsonl"

#: Figure names as the dataset modules make them (values are not read by the labelling).
VALUES: dict[str, Any] = {
    "dbdc3.system_turns": 10,
    "dbdc3.relevancy.spearman.loso.CIC_115": 0.1,
    "dbdc3.baseline.plain_cosine.spearman.loso.CIC_115": 0.1,
    "dbdc3.previous_calibration.spearman.in_sample.system.CIC_115": 0.2,
    "dbdc3.relevancy.spearman.oof": 0.3,
    "dbdc3.relevancy.spearman.in_sample": 0.31,
    "dbdc3.previous_calibration.spearman.in_sample": 0.4,
    "dbdc3.relevancy.agreement.per_exchange.in_sample": 0.7,
    "styles.refusal.accuracy.held_out": 0.9,
    "xstest.refusal.accuracy.lomo": 0.9,
    "xstest.refusal.accuracy.in_sample": 0.95,
}


@pytest.fixture(scope="module")
def agreement() -> Iterator[Any]:
    """The module benchmarks/agreement.py (imported as its own directory's modules import it)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import agreement

        yield agreement
    finally:
        sys.path.remove(str(BENCHMARKS))


def _printed(agreement: Any, fitted: dict[str, bool], refit: bool) -> list[tuple[str, list[str]]]:
    sections = agreement.grouped(VALUES, fitted, refit)
    return [(title, [shown for shown, _ in names]) for title, names in sections]


def test_on_an_unseen_file_the_shipped_figures_are_the_headline(agreement: Any) -> None:
    printed = _printed(agreement, {"xstest": True, "clinc": True, "dbdc3": False}, refit=False)
    title, names = printed[0]
    assert title.startswith("shipped: the shipped judge on rows it was not fitted on")
    assert names == [
        "dbdc3.relevancy.spearman.shipped",
        "dbdc3.relevancy.agreement.per_exchange.shipped",
    ]
    flat = dict(printed)
    refits = flat[agreement.REFIT_OOF]
    assert refits == [
        "dbdc3.relevancy.spearman.refit_loso.CIC_115",
        "dbdc3.baseline.plain_cosine.spearman.refit_loso.CIC_115",
        "dbdc3.previous_calibration.spearman.not_fitted_on_these_rows.system.CIC_115",
        "dbdc3.relevancy.spearman.refit_oof",
    ]
    # the dev file given for xstest keeps its labels; the previous calibration is no headline
    assert flat[agreement.HEADLINE_OOF] == ["xstest.refusal.accuracy.lomo"]
    assert flat[agreement.SHIPPED_IN_SAMPLE] == ["xstest.refusal.accuracy.in_sample"]
    assert (
        "dbdc3.previous_calibration.spearman.not_fitted_on_these_rows" in flat[agreement.BASELINES]
    )
    assert not any("in_sample" in n for n in flat[agreement.SHIPPED] + refits)


def test_on_the_dev_files_shipped_figures_are_labelled_in_sample(agreement: Any) -> None:
    flat = dict(_printed(agreement, {"xstest": True, "clinc": True, "dbdc3": True}, refit=False))
    assert agreement.SHIPPED not in flat and agreement.REFIT_OOF not in flat
    assert "dbdc3.relevancy.spearman.in_sample" in flat[agreement.SHIPPED_IN_SAMPLE]
    assert next(iter(flat)) == agreement.HEADLINE_OOF
    # plain cosine and the previous calibration (in-sample, so named) beside each left-out system
    assert flat[agreement.HEADLINE_OOF][:3] == [
        "dbdc3.relevancy.spearman.loso.CIC_115",
        "dbdc3.baseline.plain_cosine.spearman.loso.CIC_115",
        "dbdc3.previous_calibration.spearman.in_sample.system.CIC_115",
    ]


def test_with_fit_the_all_rows_figures_are_named_refits(agreement: Any) -> None:
    for seen in (True, False):
        fitted = {"xstest": seen, "clinc": seen, "dbdc3": seen}
        flat = dict(_printed(agreement, fitted, refit=True))
        assert agreement.SHIPPED not in flat and agreement.SHIPPED_IN_SAMPLE not in flat
        assert flat[agreement.REFIT_IN_SAMPLE] == [
            "dbdc3.relevancy.spearman.refit_in_sample",
            "dbdc3.relevancy.agreement.per_exchange.refit_in_sample",
            "xstest.refusal.accuracy.refit_in_sample",
        ]
        assert agreement.HELD_REFIT in flat


def test_a_file_is_fitted_on_when_it_shares_a_row_with_the_dev_file(
    agreement: Any, tmp_path: Path
) -> None:
    dev_rows = shared_file(DBDC3).read_text(encoding="utf-8").splitlines()
    subset, unseen = tmp_path / "subset.jsonl", tmp_path / "unseen.jsonl"
    subset.write_text("\n".join(dev_rows[5:8]) + "\n", encoding="utf-8")
    row = json.loads(dev_rows[0])
    row["dialogue_id"] = "NEW0001"  # a row the constants never saw
    unseen.write_text(json.dumps(row) + "\n", encoding="utf-8")
    clinc, absent = shared_file("clinc150_scope_dev.jsonl"), tmp_path / "absent.jsonl"
    fitted = agreement.fitted_files(argparse.Namespace(xstest=absent, clinc=clinc, dbdc3=subset))
    assert fitted == {"xstest": False, "clinc": True, "dbdc3": True}
    other = agreement.fitted_files(argparse.Namespace(xstest=absent, clinc=clinc, dbdc3=unseen))
    assert other["dbdc3"] is False


def test_the_embedding_cache_lives_under_the_run_cache_folder(
    agreement: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import _embed_cache

    monkeypatch.setenv("CONVOEVAL_CACHE_DIR", str(tmp_path / "cache"))
    embedder = _embed_cache.DiskCachedEmbedder()
    assert embedder.path.parent == tmp_path / "cache"
    vectors = embedder.embed(["a short text to cache"])
    embedder.save()
    assert embedder.path.is_file()  # the folder is made on first save
    again = _embed_cache.DiskCachedEmbedder()
    assert (again.embed(["a short text to cache"]) == vectors).all()
    assert not again._dirty  # read from the file, not embedded again


def test_without_the_setting_the_cache_is_the_library_default(
    agreement: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import _embed_cache

    from convoeval.judges.core.cache import default_cache_dir

    monkeypatch.delenv("CONVOEVAL_CACHE_DIR", raising=False)
    assert _embed_cache.cache_file().parent == default_cache_dir()
    assert Path(tempfile.gettempdir()) not in _embed_cache.cache_file().parents


def test_each_left_out_system_is_printed_beside_plain_cosine_and_the_previous_calibration(
    agreement: Any,
) -> None:
    """The DBDC3 figures on 8 dialogues of two systems: per left-out system the shipped model,
    plain cosine (its Spearman the same: the shipped score is that cosine) and the previous
    calibration, and the shipped kit's own scores on all rows."""
    import _agreement_dbdc3
    import _stats

    from convoeval.judges.offline.kit import get_kit

    rows = _stats.read_jsonl(shared_file(DBDC3))
    dialogues = [r for r in rows if r["subset"] == "IRIS_100"][:4]
    dialogues += [r for r in rows if r["subset"] == "TKTK_100"][:4]
    out = _stats.Figures(values={}, constants={})
    _agreement_dbdc3.dbdc3(get_kit(), dialogues, False, out)
    v = out.values
    assert v["dbdc3.systems"] == 2
    for system in ("IRIS_100", "TKTK_100"):
        shipped = v[f"dbdc3.relevancy.spearman.loso.{system}"]
        assert shipped == v[f"dbdc3.baseline.plain_cosine.spearman.loso.{system}"]
        assert f"dbdc3.baseline.window_cosine.agreement.loso.{system}" in v
        assert f"dbdc3.previous_calibration.spearman.in_sample.system.{system}" in v
        assert f"dbdc3.relevancy.spearman.loso.{system}.ci95" in v
    assert v["dbdc3.relevancy.spearman.in_sample"] == pytest.approx(
        v["dbdc3.baseline.plain_cosine.spearman"], abs=1e-12
    )
    sections = dict(agreement.grouped(v, {"dbdc3": True}))
    headline = [name for _, name in sections[agreement.HEADLINE_OOF]]
    assert headline.index("dbdc3.baseline.plain_cosine.spearman.loso.IRIS_100") == (
        headline.index("dbdc3.relevancy.spearman.loso.IRIS_100") + 3  # after its ci95, agreement
    )
