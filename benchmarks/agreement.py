"""Agreement of the offline judge with people, on the labelled dev files in ../shared/data.

Usage: python benchmarks/agreement.py [--xstest FILE] [--clinc FILE] [--dbdc3 FILE] [--fit]
       python benchmarks/agreement.py --judge openai/MODEL [--base-url URL] [--limit N]

Prints one `name: value` line per figure in sections under `# ` title lines; what a section holds
depends on whether each given file shares rows with the dev file the constants were fitted on.
On a file it was not fitted on, the shipped judge's figures come first (section `shipped`, names
ending `.shipped`), and the constants refitted on that file's rows follow under names that say so
(`.refit_oof`, `.refit_loso`, ...). On the dev files the headline is the grouped out-of-fold
figures (`.oof`, `.lomo`, `.lolo`, `.lolo14`, `.loso`), where whatever is fitted or chosen is
refitted without the rows it is scored on, and rows that share what leaks stay together: XSTest by
prompt and by model (leave one model out), CLINC150 by topic list (leave one list out), DBDC3 by
system (leave one system out, with plain cosine and the previous calibration beside each system)
and by dialogue. The main ones are each followed by `NAME.ci95: LOW-HIGH`, a 95% percentile
bootstrap interval (benchmarks/_stats.py `grouped_bootstrap`, seeded, 2,000 resamples) over the
out-of-fold predictions, nothing refitted: XSTest prompts drawn whole, DBDC3 dialogues drawn
whole, CLINC150 intents drawn whole within their domain. Then `.held_out` figures (rows never used
to fit or choose anything: ten more CLINC150 lists, benchmarks/refusal_styles.jsonl), then
`.in_sample` figures: the shipped constants on the rows they were fitted on. With --fit the
constants are refitted on all the given rows and printed as a block for
src/convoeval/judges/offline/calibration.py, and the all-rows figures are that refit's, named
`.refit_in_sample`. Embeddings are cached under the run's cache folder (`CONVOEVAL_CACHE_DIR`,
else the library's default cache dir; benchmarks/_embed_cache.py). With --judge SPEC the same
datasets go through the metric steps with that judge instead (benchmarks/_agreement_llm.py).
Without --fit it also prints the figures per verdict (`.per_topic.`, `.per_exchange.`), counted
through the metrics' steps as `convoeval agree` counts them (benchmarks/_agreement_metric_path.py,
benchmarks/agree_check.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agreement_clinc import FIT_LISTS, clinc  # noqa: E402
from _agreement_dbdc3 import dbdc3  # noqa: E402
from _agreement_metric_path import metric_path  # noqa: E402
from _agreement_xstest import refusal_styles, xstest  # noqa: E402
from _data import LABELLED, SHARED_DATA, add_labelled_options, missing_labelled  # noqa: E402
from _embed_cache import DiskCachedEmbedder  # noqa: E402
from _stats import (  # noqa: E402
    Figures,
    read_jsonl,
    spearman,
)

from convoeval.judges.offline.embedder import Embedder  # noqa: E402
from convoeval.judges.offline.kit import OfflineKit  # noqa: E402

#: Allowed-topic lists in plain words, and the CLINC150 domains each one covers (the lists the
#: shipped scope constants are fitted on; `_agreement_clinc.EXTRA_LISTS` has ten more to check
#: them).
TOPIC_LISTS = FIT_LISTS


# ---------------------------------------------------------------------------------------- speed
def speed(texts: list[str], out: Figures) -> None:
    """Embedding throughput on short user requests, with no cache (model already warm)."""
    emb = Embedder(cache_size=0)
    emb.embed(texts[:32])
    sample = texts[:1000]
    best = 0.0
    for _ in range(3):  # best of three: the machine is shared
        started = time.perf_counter()
        emb.embed(sample)
        best = max(best, len(sample) / (time.perf_counter() - started))
    out.put("embedder.short_sentences_per_second", best)


# ---------------------------------------------------------------------------------------- print
#: Name parts that mark a grouped out-of-fold figure, a figure on rows never used to fit or choose
#: anything, and one on all the given rows.
OUT_OF_FOLD = (".lomo", ".oof", ".lolo", ".loso")
HELD_OUT = ".held_out"
IN_SAMPLE = ".in_sample"
#: Name parts of the figures of one left-out system (its model, plain cosine and the previous
#: calibration are printed together).
PER_SYSTEM = (".loso.", ".system.")
#: Figures of an earlier calibration kept for comparison: never the shipped judge's.
PREVIOUS = ".previous_calibration."
#: The section titles, in printing order.
SHIPPED = "shipped: the shipped judge on rows it was not fitted on"
REFIT_OOF = "refit on these rows, grouped out of fold (constants refitted without the rows scored)"
HEADLINE_OOF = "headline: grouped, out of fold (constants refitted without the rows scored)"
HELD = "held out: rows never used to fit or choose anything, shipped constants"
HELD_REFIT = (
    "held out: rows never used to fit or choose anything, constants refitted on the given rows"
)
SHIPPED_IN_SAMPLE = "in sample: shipped constants on the rows they were fitted on"
REFIT_IN_SAMPLE = "refit on these rows (in-sample)"
BASELINES = "baselines, earlier calibrations, counts and time"


def fitted_files(args: argparse.Namespace) -> dict[str, bool]:
    """Per labelled dataset (`xstest`, `clinc`, `dbdc3`), whether the file given shares any row
    with the dev file the shipped constants were fitted on (in ../shared/data): then the shipped
    figures on it are in sample."""
    return {
        name: bool(_rows(getattr(args, name)) & _rows(SHARED_DATA / file))
        for name, file in LABELLED.items()
    }


def _rows(path: Path) -> set[str]:
    """The non-blank lines of a JSON Lines file, stripped (none when it is absent)."""
    if not Path(path).is_file():
        return set()
    return {
        line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()
    }


def labelled(name: str, fitted: dict[str, bool], refit: bool) -> tuple[str, str]:
    """(section title, printed name) of figure `name`: the shipped judge's figures on a file it
    was not fitted on are the headline, named `.shipped`; refits on such a file are named
    `.refit_...`; with `refit` (--fit) the all-rows figures are the refit, named so."""
    dataset = name.split(".", 1)[0]
    seen = fitted.get(dataset, True)  # figures of no given file (styles, seconds) count as seen
    if any(mark in name for mark in PER_SYSTEM):  # one left-out system: baselines stay beside
        if PREVIOUS in name:
            return (
                (HEADLINE_OOF, name)
                if seen
                else (REFIT_OOF, name.replace(IN_SAMPLE, ".not_fitted_on_these_rows"))
            )
        return (HEADLINE_OOF, name) if seen else (REFIT_OOF, name.replace(".loso", ".refit_loso"))
    if PREVIOUS in name:
        return BASELINES, name if seen else name.replace(IN_SAMPLE, ".not_fitted_on_these_rows")
    if IN_SAMPLE in name:
        if refit:
            return REFIT_IN_SAMPLE, name.replace(IN_SAMPLE, ".refit_in_sample")
        return (SHIPPED_IN_SAMPLE, name) if seen else (SHIPPED, name.replace(IN_SAMPLE, ".shipped"))
    if HELD_OUT in name:
        return (HELD_REFIT if refit else HELD), name
    mark = next((m for m in OUT_OF_FOLD if m in name), None)
    if mark and "baseline" not in name:
        return (
            (HEADLINE_OOF, name) if seen else (REFIT_OOF, name.replace(mark, f".refit_{mark[1:]}"))
        )
    return BASELINES, name


def grouped(
    values: dict[str, Any], fitted: dict[str, bool] | None = None, refit: bool = False
) -> list[tuple[str, list[tuple[str, str]]]]:
    """The sections in printing order, each with its (printed name, figure name) pairs: the
    shipped judge on unseen rows first, then the grouped out-of-fold refits, held-out rows,
    all-rows figures, then baselines and counts (each in the order made)."""
    order = (
        SHIPPED,
        HEADLINE_OOF,
        REFIT_OOF,
        HELD,
        HELD_REFIT,
        SHIPPED_IN_SAMPLE,
        REFIT_IN_SAMPLE,
        BASELINES,
    )
    sections: dict[str, list[tuple[str, str]]] = {title: [] for title in order}
    for name in values:
        title, shown = labelled(name, fitted or {}, refit)
        sections[title].append((shown, name))
    return [(title, names) for title, names in sections.items() if names]


# ---------------------------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, compute the figures, print them."""
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_labelled_options(parser)
    parser.add_argument("--fit", action="store_true", help="refit the calibrated constants")
    parser.add_argument("--speed", action="store_true", help="also time the embedder (no cache)")
    parser.add_argument("--judge", help="run through the metric steps with this judge spec")
    parser.add_argument("--base-url", help="OpenAI-compatible server (or OPENAI_BASE_URL)")
    parser.add_argument("--api-key", help="API key (or OPENAI_API_KEY); never printed")
    parser.add_argument("--concurrency", type=int, default=8, help="judge requests at once")
    parser.add_argument("--limit", type=int, help="with --judge: at most N rows per dataset")
    parser.add_argument("--timeout", type=float, help="with --judge: seconds per request")
    parser.add_argument("--max-tokens", type=int, help="with --judge openai/...: answer cap")
    args = parser.parse_args(argv)
    if missing_labelled("agreement.py", args):
        return 2
    if args.judge:
        from _agreement_llm import run

        options: dict[str, Any] = {"base_url": args.base_url, "api_key": args.api_key}
        options |= {"concurrency": args.concurrency, "timeout": args.timeout}
        options["max_tokens"] = args.max_tokens
        data = (read_jsonl(args.xstest), read_jsonl(args.clinc), read_jsonl(args.dbdc3))
        return run(args.judge, options, data, args.limit, TOPIC_LISTS, spearman)

    embedder = DiskCachedEmbedder()
    kit = OfflineKit(embedder)
    out = Figures(values={}, constants={})
    started = time.perf_counter()
    try:
        xstest(kit, read_jsonl(args.xstest), args.fit, out)
        refusal_styles(kit, out)
        clinc_rows = read_jsonl(args.clinc)
        if args.speed:
            speed([r["text"] for r in clinc_rows], out)
        clinc(kit, clinc_rows, args.fit, out)
        dbdc3(kit, read_jsonl(args.dbdc3), args.fit, out)
        if not args.fit:  # issue 15: the in-sample figures per verdict, as `convoeval agree` counts
            rows = (read_jsonl(args.xstest), clinc_rows, read_jsonl(args.dbdc3))
            metric_path(kit, rows, TOPIC_LISTS, out)
    finally:
        embedder.save()
    out.put("seconds", time.perf_counter() - started)
    for title, names in grouped(out.values, fitted_files(args), args.fit):
        print(f"# {title}")
        for shown, name in names:
            value = out.values[name]
            print(f"{shown}: {value:.3f}" if isinstance(value, float) else f"{shown}: {value}")
    if args.fit:
        print("\n# fitted constants for calibration.py")
        for name, value in out.constants.items():
            print(f"{name} = {value!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
