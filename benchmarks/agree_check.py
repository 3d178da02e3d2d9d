"""Proof that `convoeval agree` reproduces benchmarks/agreement.py's in-sample figures (issue 15).

Usage: python benchmarks/agree_check.py [--out DIR] [--xstest FILE] [--clinc FILE] [--dbdc3 FILE]

Both sides are computed live, on the same rows, with the shipped offline judge:
- agreement.py's side: its own functions (`xstest`, `clinc`, `dbdc3`, `metric_path`) on the rows,
  as `python benchmarks/agreement.py` prints them, at full precision;
- agree's side: the rows written as labelled records (benchmarks/agree_data.py), scored by
  `convoeval run --no-cache` (a subprocess per data set), then `convoeval.agree()` on the
  results, with the records' `metadata.labels` or a labels file per slice; and each agreement
  once more as the `convoeval agree` command prints it, against agreement.py's printed value.

Each agree figure is compared with agreement.py's figure per verdict (`.per_topic.`,
`.per_exchange.`), which must be equal to the last digit (kappa, computed there by another
formula, within 1e-12); and with the headline per-row figure whenever the metric gives exactly
one verdict per row on the row's own text (the `rows_*` counts say so), else the headline is shown
with the reason it is a different count. Exit 0 when every comparison holds, 1 otherwise, 2 when
the data is missing.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _stats  # noqa: E402
from _agreement_dbdc3 import dbdc3  # noqa: E402
from _agreement_metric_path import metric_path  # noqa: E402
from _data import add_labelled_options, missing_labelled  # noqa: E402
from _stats import Figures, read_jsonl  # noqa: E402
from agree_data import write_all  # noqa: E402
from agreement import TOPIC_LISTS, clinc, xstest  # noqa: E402

from convoeval import agree  # noqa: E402
from convoeval.judges.offline.kit import OfflineKit  # noqa: E402
from convoeval.stats.agree import RESAMPLES  # noqa: E402

Rows = tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]
#: The metric scored on each data set.
METRICS = {
    "xstest": "topic_adherence",
    "clinc": "topic_adherence",
    "dbdc3": "conversation_relevancy",
}
#: Kappa is computed by agree from the confusion matrix and by the benchmark from the two shares.
KAPPA_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Check:
    """One figure: agree's value, agreement.py's per-verdict value and, when the units are the
    same, its headline per-row value (else why not)."""

    name: str
    agree: float | int | str | None
    benchmark: float | int | str
    headline: str | None = None
    headline_value: float | int | None = None
    not_same_unit: str | None = None
    tolerance: float = 0.0

    def holds(self) -> bool:
        """Equal to the last digit (or within the tolerance), and equal to the headline when
        the headline counts the same items."""
        if self.agree is None:
            return False
        if self.tolerance and isinstance(self.agree, float) and isinstance(self.benchmark, float):
            same = math.isclose(self.agree, self.benchmark, rel_tol=0, abs_tol=self.tolerance)
        else:
            same = self.agree == self.benchmark
        if self.headline is not None and self.not_same_unit is None:
            same = same and self.agree == self.headline_value
        return same


def benchmark_figures(
    kit: OfflineKit, rows: Rows, interval_resamples: int | None = None
) -> dict[str, float | int | str]:
    """agreement.py's figures on `rows` (no refit), at full precision. `interval_resamples`
    replaces the bootstrap's resamples for the 95% intervals, which no check compares (a test
    on a subset needs the figures, not their intervals, and the bootstrap is most of the cost)."""
    out = Figures(values={}, constants={})
    default = _stats.RESAMPLES
    _stats.RESAMPLES = default if interval_resamples is None else interval_resamples
    try:
        xstest(kit, rows[0], False, out)
        clinc(kit, rows[1], False, out)
        dbdc3(kit, rows[2], False, out)
        metric_path(kit, rows, TOPIC_LISTS, out)
    finally:
        _stats.RESAMPLES = default
    return out.values


def _env() -> dict[str, str]:
    """The environment of a `convoeval` subprocess: this checkout's package first."""
    paths = [str(REPO / "src"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def run_cli(data: Path, metric: str, output: Path) -> None:
    """`convoeval run DATA -m METRIC --no-cache -o OUTPUT` with the offline judge."""
    command = [sys.executable, "-m", "convoeval", "run", str(data), "-m", metric, "--no-cache"]
    command += ["-q", "--overwrite", "-o", str(output)]
    done = subprocess.run(command, capture_output=True, text=True, env=_env())
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr}")


Runner = Callable[[Path, str, Path], None]


def agree_cli(results: Path, labels: Path | None, metric: str, kind: str) -> str:
    """The agreement cell that `convoeval agree RESULTS [--labels FILE] -m METRIC` prints for
    KIND (as shown: three decimals)."""
    command = [sys.executable, "-m", "convoeval", "agree", str(results), "-m", metric]
    command += ["--labels", str(labels)] if labels is not None else []
    done = subprocess.run(command, capture_output=True, text=True, env=_env())
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    lines = done.stdout.splitlines()
    header = next(line for line in lines if "┃" in line and "agreement" in line)
    column = [c.strip() for c in header.split("┃")].index("agreement")
    for line in lines:
        cells = [c.strip() for c in line.split("│")]
        if len(cells) > column and cells[1:3] == [metric, kind]:
            return cells[column]
    raise RuntimeError(f"no {metric} {kind} row in:\n{done.stdout}")


@dataclass(frozen=True)
class Asked:
    """One agree figure that is compared: where it comes from and agreement.py's figure."""

    results: Path
    labels: Path | None
    metric: str
    kind: str
    benchmark: str


def agree_checks(
    folder: Path,
    rows: Rows,
    figures: Mapping[str, Any],
    run: Runner = run_cli,
    resamples: int = RESAMPLES,
    cli: bool = False,
) -> list[Check]:
    """Write the records, score them with `run`, and compare agree's figures with `figures`
    (`resamples`: agree's bootstrap resamples, which no compared figure depends on). With `cli`
    each agreement is also read from the `convoeval agree` table and compared with agreement.py's
    printed value (both three decimals)."""
    paths = write_all(folder, rows, TOPIC_LISTS)
    results = {}
    for name, metric in METRICS.items():
        results[name] = folder / f"{name}.results.jsonl"
        run(paths[name], metric, results[name])
    f = figures
    checks: list[Check] = []
    asked: dict[str, Asked] = {}
    Measured = tuple[Any, Path, Path | None]

    def measure(data: str, labels: str | None, kind: str) -> Measured:
        """agree's figures of one verdict kind (labels: a slice's labels file, else metadata)."""
        file = paths[labels] if labels else None
        report = agree(results[data], file, [METRICS[data]], resamples=resamples)
        return report.get(METRICS[data], kind), results[data], file

    def compare(name: str, measured: Measured, key: str, headline: str, why: str | None) -> None:
        item, source, labels = measured
        checks.append(Check(name, item.agreement, f[key], headline, f[headline], why))
        asked[name] = Asked(source, labels, item.metric, item.kind, key)

    def kappa(name: str, item: Any, key: str) -> None:
        checks.append(Check(name, item.kappa, f[key], tolerance=KAPPA_TOLERANCE))

    # XSTest: answered per topic; one topic per row means the headline counts the same items.
    lone = f["xstest.per_topic.rows_not_one_topic"]
    why = f"{lone} rows do not give exactly one topic" if lone else None
    models = sorted({str(r.get("model")) for r in rows[0]})
    slices = [("", None, "accuracy", ""), (", annotators agree", "xstest-annotators-agree",
              "accuracy_annotators_agree", "")]  # fmt: skip
    slices += [(f", {m}", f"xstest-{m}", "accuracy", f".{m}") for m in models]
    for shown, labels, figure, model in slices:
        measured = measure("xstest", labels, "answered")
        compare(
            f"xstest answered{shown}: agreement",
            measured,
            f"xstest.refusal.{figure}.per_topic.in_sample{model}",
            f"xstest.refusal.{figure}.in_sample{model}",
            why,
        )
        if labels is None:
            item = measured[0]
            checks.append(Check("xstest answered: n", item.labelled, f["xstest.per_topic.topics"]))
            kappa("xstest answered: kappa", item, "xstest.refusal.kappa.per_topic.in_sample")
    # CLINC150: in scope per topic and list; the headline scores each row's whole text.
    odd = {
        "without a topic": f["clinc.per_topic.rows_without_topic"],
        "with several topics": f["clinc.per_topic.rows_with_several_topics"],
        "shortened to their request": f["clinc.per_topic.rows_rewritten"],
    }
    why = "; ".join(f"{n} rows {what}" for what, n in odd.items() if n) or None
    for name in TOPIC_LISTS:
        measured = measure("clinc", f"clinc-{name}", "in_scope")
        item = measured[0]
        checks.append(Check(f"clinc {name}: n", item.labelled, f[f"clinc.{name}.per_topic.topics"]))
        compare(
            f"clinc {name}: agreement",
            measured,
            f"clinc.{name}.accuracy.per_topic.in_sample",
            f"clinc.{name}.accuracy.in_sample",
            why,
        )
        kappa(f"clinc {name}: kappa", item, f"clinc.{name}.kappa.per_topic.in_sample")
    # DBDC3: relevant per exchange; a labelled exchange with no reply is not judged (unscored).
    measured = measure("dbdc3", None, "relevant")
    item = measured[0]
    missing = f["dbdc3.per_exchange.exchanges_without_reply"]
    checks.append(Check("dbdc3 relevant: unscored", item.unscored, missing))
    total = item.labelled + item.unscored
    checks.append(Check("dbdc3 relevant: n + unscored", total, f["dbdc3.majority_turns"]))
    compare(
        "dbdc3 relevant: agreement",
        measured,
        "dbdc3.relevancy.agreement.per_exchange.in_sample",
        "dbdc3.relevancy.agreement.in_sample",
        f"{missing} labelled system turns have no text (no reply to judge)" if missing else None,
    )
    kappa("dbdc3 relevant: kappa", item, "dbdc3.relevancy.kappa.per_exchange.in_sample")
    if cli:
        for name, a in asked.items():
            shown = agree_cli(a.results, a.labels, a.metric, a.kind)
            checks.append(Check(f"{name} (CLI, as printed)", shown, f"{f[a.benchmark]:.3f}"))
    return checks


def show(checks: Sequence[Check]) -> str:
    """The comparison as a plain table (full precision) with the headline notes under it."""
    lines = [f"{'figure':64} {'agree':>20} {'agreement.py':>20}  equal"]
    for c in checks:
        mark = "yes" if c.holds() else "NO"
        lines.append(f"{c.name:64} {c.agree!r:>20} {c.benchmark!r:>20}  {mark}")
        if c.headline is not None:
            if c.not_same_unit is None:
                same = "equal" if c.agree == c.headline_value else "DIFFERENT"
                lines.append(f"  headline {c.headline}: {c.headline_value!r} ({same})")
            else:
                lines.append(
                    f"  headline {c.headline}: {c.headline_value!r} (per row, not per verdict: "
                    f"{c.not_same_unit})"
                )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Compute both sides, print them, exit 1 if any comparison fails."""
    from _machine import print_machine

    print_machine()
    from _embed_cache import DiskCachedEmbedder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for records and results (default: temp)")
    add_labelled_options(parser)
    args = parser.parse_args(argv)
    if missing_labelled("agree_check.py", args):
        return 2
    rows: Rows = (read_jsonl(args.xstest), read_jsonl(args.clinc), read_jsonl(args.dbdc3))
    embedder = DiskCachedEmbedder()
    try:
        figures = benchmark_figures(OfflineKit(embedder), rows)
    finally:
        embedder.save()
    with tempfile.TemporaryDirectory(prefix="agree-check-") as temp:
        checks = agree_checks(args.out or Path(temp), rows, figures, cli=True)
    print(show(checks))
    failed = [c.name for c in checks if not c.holds()]
    print(
        f"\n{len(checks) - len(failed)} of {len(checks)} comparisons hold"
        + (f"; failed: {failed}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
