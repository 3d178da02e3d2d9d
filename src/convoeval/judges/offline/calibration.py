"""Calibrated constants of the offline judge, fitted on the dev files in ../shared/data.

`python benchmarks/agreement.py --fit` refits them and prints this block; the benchmark README
records the figures they give. Bump `CALIBRATION_VERSION` whenever a value or a phrase list changes.
"""

from __future__ import annotations

#: Goes into `OfflineJudge.describe()` and so into results and cache keys.
CALIBRATION_VERSION = "2026-12-01.4"

#: The kit re-centres every score so that its decision threshold maps to 0.5 (monotone, so AUROC
#: and rankings are unchanged): `score >= 0.5` is the shipped verdict for every primitive.

#: Refusal: logistic weights over `refusal.FEATURE_NAMES`, bias, and the decision threshold.
REFUSAL_WEIGHTS: tuple[float, ...] = (4.0899, 0.2927, 1.7923, 3.6105, 1.3304, 3.8515)
REFUSAL_BIAS = -3.1301
REFUSAL_THRESHOLD = 0.4079

#: Scope: softmax temperature, background-overlap cut-off, and the threshold on P(allowed) with
#: the list's prior odds divided out (see `scope.scope_probabilities`).
SCOPE_TEMPERATURE = 0.05
SCOPE_OVERLAP = 0.7
SCOPE_THRESHOLD = 0.613

#: Relevance (`relevance_features.FEATURE_NAMES`): logistic weights and bias fitted on the DBDC3
#: majority turns (features standardised for the fit, the weights given for the raw ones), and
#: the threshold on P(relevant) with the best agreement there (the kit re-centres it to 0.5).
RELEVANCE_FEATURE_WEIGHTS: tuple[float, ...] = (
    14.165, -5.7044, 1.2815, -0.1865, 1.5707, -1.6242, 2.3556, -11.9501, 0.1726, -3.8962,
    10.5266,
)  # fmt: skip
RELEVANCE_FEATURE_BIAS = -4.2964
RELEVANCE_FEATURE_THRESHOLD = 0.4747
