"""Every phrase of the refusal step's lists is found wherever it stands in a text (the lists are
matched as one regular expression each), and a text with none of them sets no phrase feature."""

from __future__ import annotations

import pytest

from convoeval.judges.offline import refusal


@pytest.mark.parametrize(
    ("phrases", "feature"),
    [
        (refusal.STRONG_PHRASES, 0),
        (refusal.SOFT_PHRASES, 2),
        (refusal.PUSHBACK_PHRASES, 3),
    ],
    ids=["strong", "soft", "pushback"],
)
def test_each_listed_phrase_sets_its_feature(phrases: tuple[str, ...], feature: int) -> None:
    for phrase in phrases:
        features = refusal.phrase_features(f"well, {phrase} (for now)")
        assert features[feature] == 1.0, phrase


def test_a_text_without_any_phrase_sets_none() -> None:
    features = refusal.phrase_features("The museum opens at nine and closes at five.")
    assert features[:5] == [0.0, 0.0, 0.0, 0.0, 0.0]
