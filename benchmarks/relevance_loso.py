"""Which relevance features hold across DBDC3's systems: each candidate set refitted leaving one
system out, its Spearman with (O - X) / votes in the left-out system beside plain cosine (reply vs
the user's last turn), and the paired 95% interval of the difference (dialogues drawn whole).

Usage: python benchmarks/relevance_loso.py [--dbdc3 FILE]

A set is kept only when the interval is above zero in every left-out system; the features are
those of the 2026-12-02.1 model (`_relevance_previous.FEATURE_NAMES`). Embeddings come from the
cache of benchmarks/_embed_cache.py.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _agreement_dbdc3 import Turns  # noqa: E402
from _data import LABELLED, SHARED_DATA, missing_data  # noqa: E402
from _embed_cache import DiskCachedEmbedder  # noqa: E402
from _relevance_previous import FEATURE_NAMES  # noqa: E402
from _stats import F64, Index, fit_standardised, grouped_bootstrap, read_jsonl, spearman  # noqa: E402

from convoeval.judges.offline.kit import OfflineKit  # noqa: E402

#: Features that encode a corpus's length or chit-chat style rather than relevance.
STYLE = ("reply_words", "generic", "reply_is_question", "question_for_question")
BASE = "cos_input"


def candidate_sets() -> dict[str, list[str]]:
    """The sets measured: every feature, the corpus-independent ones, the window and topic
    cosines, and the plain cosine with each other feature added alone."""
    neutral = [f for f in FEATURE_NAMES if f not in STYLE]
    sets = {
        "all 11 (the 2026-12-02.1 model)": list(FEATURE_NAMES),
        "without length and style (7)": neutral,
        "input + window + earlier turns": ["cos_input", "cos_context", "cos_history"],
        "input + exact repeat + yes/no answer": ["cos_input", "exact_repeat", "yes_no_answer"],
    }
    sets |= {f"input + {f}": [BASE, f] for f in FEATURE_NAMES if f != BASE}
    return sets


def loso_scores(t: Turns, columns: Sequence[int]) -> F64:
    """Scores of the set `columns`, each system's rows scored by the fit on the other systems."""
    score = np.zeros(len(t.windows))
    x = t.previous[:, list(columns)]
    for name in sorted(set(t.system)):
        test, train = t.system == name, t.system != name
        w, b = fit_standardised(
            x[train], t.relevant[train & t.majority].astype(np.float64), t.majority[train]
        )
        score[test] = x[test] @ w + b
    return score


def main(argv: Sequence[str] | None = None) -> int:
    """Print one line per candidate set: per left-out system, the gain over plain cosine and its
    paired interval, then whether the set is kept."""
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dbdc3", type=Path, default=SHARED_DATA / LABELLED["dbdc3"])
    args = parser.parse_args(argv)
    if missing_data("relevance_loso.py", [args.dbdc3], "labelled data", "--dbdc3"):
        return 2
    embedder = DiskCachedEmbedder()
    try:
        t = Turns.read(OfflineKit(embedder), read_jsonl(args.dbdc3))
    finally:
        embedder.save()
    systems = sorted(set(t.system))
    plain = {s: spearman(t.cosine[t.system == s], t.target[t.system == s]) for s in systems}
    print("# plain cosine (reply vs the user's last turn), Spearman per left-out system")
    print(" | ".join(f"{s} {plain[s]:.3f}" for s in systems))
    print(
        "# candidate set: per left-out system, Spearman, gain over plain cosine [paired 95%]; kept"
    )
    for label, names in candidate_sets().items():
        score = loso_scores(t, [FEATURE_NAMES.index(n) for n in names])
        cells, kept = [], True
        for s in systems:
            rows = np.flatnonzero(t.system == s)

            def gain(i: Index, rows: Index = rows, score: F64 = score) -> float:
                y = t.target[rows][i]
                return spearman(score[rows][i], y) - spearman(t.cosine[rows][i], y)

            low, high = grouped_bootstrap(gain, t.dialogue[rows])
            point = gain(np.arange(len(rows)))
            kept &= low > 0
            cells.append(f"{s} {point + plain[s]:.3f} {point:+.3f} [{low:+.3f}, {high:+.3f}]")
        print(f"{label}: {' | '.join(cells)}; kept: {'yes' if kept else 'no'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
