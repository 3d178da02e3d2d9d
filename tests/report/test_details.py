"""Argument differences as the report shows them: the path to each differing leaf and both
values, with the metrics' typed equality; and metric details without the conversation."""

from __future__ import annotations

from convoeval.report.details import _MISSING, arg_differences, metric_details


def test_paths_reach_the_differing_leaf_in_objects_and_lists() -> None:
    made = {"address": {"zip": "10002", "city": "NY"}, "items": [{"sku": "A", "qty": 1}]}
    expected = {"address": {"zip": "10001", "city": "NY"}, "items": [{"sku": "A", "qty": 2}]}
    assert arg_differences(made, expected) == [
        ("address.zip", "10002", "10001"),
        ("items[0].qty", 1, 2),
    ]


def test_types_missing_keys_and_lists_of_another_length() -> None:
    assert arg_differences({"n": 1}, {"n": "1"}) == [("n", 1, "1")]
    assert arg_differences({"n": 1}, {"n": 1.0}) == []  # numbers compare by value
    assert arg_differences({"a": {"x": 1}}, {"a": {}}) == [("a.x", 1, _MISSING)]
    assert arg_differences({}, {"b": True}) == [("b", _MISSING, True)]
    assert arg_differences({"l": [1, 2]}, {"l": [1]}) == [("l", [1, 2], [1])]
    assert arg_differences({"k": {"z": 1}}, {"k": [1]}) == [("k", {"z": 1}, [1])]


def test_deep_nesting_stops_at_a_bound_and_shows_the_rest_whole() -> None:
    made: dict[str, object] = {"v": 1}
    expected: dict[str, object] = {"v": 2}
    for _ in range(100):
        made, expected = {"d": made}, {"d": expected}
    [(path, left, right)] = arg_differences(made, expected)
    assert path.count(".") < 40 and isinstance(left, dict) and isinstance(right, dict)


def test_alignment_without_the_conversation_names_the_top_level_arguments() -> None:
    row = {
        "scores": {"tool_call_accuracy": 0.5},
        "details": {
            "tool_call_accuracy": {
                "matches": [
                    {
                        "predicted": 0,
                        "reference": 0,
                        "name": "ship",
                        "score": 0.5,
                        "differing_args": ["address"],
                    }
                ]
            }
        },
    }
    html = metric_details("tool_call_accuracy", row)
    assert "<td><bdi>address</bdi></td>" in html and "<bdi>ship</bdi>" in html
