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


def test_a_repeated_short_reply_is_read_once_and_a_long_one_is_never_kept() -> None:
    """Issue 35: assistants repeat their refusals word for word, so a short reply's reading
    is cached; a long reply is read afresh each time, so the cache never keeps it alive."""
    short = "Sorry, I can only help with questions about your account."
    long = "I cannot share that. " + "Here is some background on the topic. " * 60
    assert len(long) > refusal._CACHED_CHARS
    refusal._read_cached.cache_clear()
    first = refusal.phrase_features(short)
    assert refusal.phrase_features(short) == first == list(refusal._read_afresh(short)[1])
    assert refusal._read_cached.cache_info().hits == 1
    assert refusal.phrase_features(long) == list(refusal._read_afresh(long)[1])
    assert refusal._read_cached.cache_info().currsize == 1  # the short one only
