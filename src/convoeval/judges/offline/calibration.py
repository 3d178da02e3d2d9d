"""Calibrated constants of the offline judge, fitted on the dev files in ../shared/data.

`python benchmarks/agreement.py --fit` refits them and prints this block; the benchmark README
records the figures they give. Bump `CALIBRATION_VERSION` whenever a value or a phrase list changes.
"""

from __future__ import annotations

#: Goes into `OfflineJudge.describe()` and so into results and cache keys. 2026-12-06.1: the
#: same constants as 2026-12-03.1 over the vectors of a cheaper graph (`quantize.py`,
#: `attention.py`, issue 35); a refit moved only flat optima (benchmarks/README.md, "Blocked
#: QuantizeLinear and one attention node per layer").
CALIBRATION_VERSION = "2026-12-06.1"

#: The kit re-centres every score so that its decision threshold maps to 0.5 (monotone, so AUROC
#: and rankings are unchanged): `score >= 0.5` is the shipped verdict for every primitive.

#: Refusal: logistic weights over `refusal.FEATURE_NAMES`, bias, and the decision threshold.
REFUSAL_WEIGHTS: tuple[float, ...] = (4.0787, 0.2988, 1.7966, 3.6061, 1.3357, 3.8451)
REFUSAL_BIAS = -3.1389
REFUSAL_THRESHOLD = 0.5082

#: Scope: softmax temperature, background-overlap cut-off, and the threshold on P(allowed) with
#: the list's prior odds divided out (see `scope.scope_probabilities`); whether broad topics
#: compete through their IAB tier-2 categories too (since 2026-12-03.1, issue 36).
SCOPE_TEMPERATURE = 0.05
SCOPE_OVERLAP = 0.7
SCOPE_EXPAND = True
SCOPE_THRESHOLD = 0.6218

#: Relevance (`relevance_features.py`): the logistic slope on cos(reply, the user's last turn),
#: fitted on the DBDC3 majority turns, and the cosine threshold with the best agreement there,
#: each DBDC3 system counted alike (the kit's score is 0.5 at the threshold).
RELEVANCE_COSINE_SLOPE = 6.2068
RELEVANCE_COSINE_THRESHOLD = 0.1567
