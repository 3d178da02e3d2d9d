"""One surface (issue 33 §1): one resolver for metric names, one spelling per concept with its
aliases, Python options checked as their CLI twins, the errors a user catches exported."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from _orders import write_orders
from convoeval import evaluate
from convoeval.errors import UsageError

# --- one resolver for metric names ---------------------------------------------------------


@pytest.mark.parametrize("name", ["tool_call_accuracy", "ToolCallAccuracy"])
@pytest.mark.parametrize("key", ["tool_call_accuracy", "ToolCallAccuracy"])
def test_a_threshold_applies_whatever_name_the_metric_and_the_limit_use(
    tmp_path: Path, name: str, key: str
) -> None:
    result = evaluate(
        write_orders(tmp_path / "d.jsonl", wrong={2}, reference=False),
        [name],
        thresholds={key: 0.9},
    )
    assert result.meta["metrics"][0]["name"] == "tool_call_accuracy"
    assert result.meta["metrics"][0]["threshold"] == 0.9
    assert result.gate({key: 0.1}) == []


@pytest.mark.parametrize("name", ["ConversationRelevancyMetric", "TurnRelevancyMetric"])
def test_a_deepeval_class_name_names_its_metric_in_a_run(tmp_path: Path, name: str) -> None:
    from convoeval.metrics import get_metric
    from convoeval.runner._plan import build_metrics

    column = get_metric(name).name
    built = build_metrics([name], {name: 0.3})
    assert [m.name for m in built] == [column]
    assert built[0].threshold == 0.3


def test_two_names_of_one_metric_in_the_limits_are_refused_naming_both() -> None:
    from convoeval.runner._plan import build_metrics

    with pytest.raises(UsageError, match=r"ToolCallAccuracy.*tool_call_accuracy"):
        build_metrics(["tool_call_accuracy"], {"ToolCallAccuracy": 0.5, "tool_call_accuracy": 0.6})


def test_a_gate_names_a_metric_by_any_of_its_names() -> None:
    from convoeval.runner._plan import check_gates

    ranges: dict[str, Any] = {"tool_call_accuracy": (0.0, 1.0)}
    assert check_gates({"ToolCallAccuracy": 0.5}, ranges) == {"tool_call_accuracy": 0.5}
    with pytest.raises(UsageError, match="not in this run"):
        check_gates({"ToolCallF1": 0.5}, ranges)


# --- one spelling per concept, the others as aliases ---------------------------------------


def test_concurrency_and_judge_samples_take_their_aliases_on_a_judge() -> None:
    from convoeval import OpenAIJudge
    from convoeval.judges import resolve_judge

    documented = OpenAIJudge("m", api_key="k", concurrency=3, judge_samples=2)
    aliased = OpenAIJudge("m", api_key="k", max_concurrency=3, samples=2)
    spec = resolve_judge("openai/m", api_key="k", max_concurrency=3, judge_samples=2)
    for judge in (documented, aliased, spec):
        assert judge.describe()["concurrency"] == 3
        assert judge.describe()["samples"] == 2


def test_two_spellings_with_different_values_are_refused_naming_both() -> None:
    from convoeval import OpenAIJudge
    from convoeval.judges import resolve_judge

    with pytest.raises(UsageError, match=r"concurrency=3.*max_concurrency=4"):
        OpenAIJudge("m", api_key="k", concurrency=3, max_concurrency=4)
    with pytest.raises(UsageError, match=r"judge_samples=3.*samples=5"):
        resolve_judge("openai/m", api_key="k", judge_samples=3, samples=5)
    # the same value twice says one thing: accepted
    assert OpenAIJudge("m", api_key="k", samples=3, judge_samples=3).samples == 3


def test_evaluate_takes_concurrency_as_an_alias_of_max_concurrency(tmp_path: Path) -> None:
    data = write_orders(tmp_path / "d.jsonl", wrong={2}, reference=False)
    result = evaluate(data, ["tool_call_accuracy"], concurrency=2)  # type: ignore[call-arg]
    assert len(result) == 3
    with pytest.raises(UsageError, match=r"max_concurrency=2.*concurrency=3"):
        evaluate(data, ["tool_call_accuracy"], max_concurrency=2, concurrency=3)  # type: ignore[call-arg]


# --- Python options checked as their CLI twins ---------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("limit", 0, "limit must be at least 1, not 0"),
        ("limit", -1, "limit must be at least 1, not -1"),
        ("max_concurrency", True, "max_concurrency must be a whole number, not True"),
        ("concurrency", 0, "max_concurrency must be at least 1, not 0"),
        ("judge_samples", 2.5, "judge_samples must be a whole number, not 2.5"),
        ("timeout", 0, "timeout must be a positive number of seconds, not 0"),
        ("thresholds", {"m": "0.5"}, "the threshold of m must be a number, not '0.5'"),
        ("max_concurency", 2, r"no option 'max_concurency' \(did you mean 'max_concurrency'\?\)"),
    ],
)  # fmt: skip
def test_evaluate_checks_its_options_as_the_cli_does(
    tmp_path: Path, option: str, value: Any, message: str
) -> None:
    data = write_orders(tmp_path / "d.jsonl", wrong={2}, reference=False)
    with pytest.raises(UsageError, match=message):
        evaluate(data, ["tool_call_accuracy"], **{option: value})
    assert not list(tmp_path.glob("*.results.jsonl"))


@pytest.mark.parametrize("threshold", [5, -0.1, float("nan"), "0.5", True])
def test_a_metric_refuses_a_threshold_the_cli_would_refuse(threshold: Any) -> None:
    from convoeval import ToolCallAccuracy

    with pytest.raises(UsageError, match="the threshold of tool_call_accuracy"):
        ToolCallAccuracy(threshold=threshold)
    assert ToolCallAccuracy(threshold=0.5).threshold == 0.5


# --- an error shows its message alone --------------------------------------------------------


def test_an_error_of_a_sync_call_carries_no_event_loop_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    data = write_orders(tmp_path / "d.jsonl", wrong={2}, reference=False)
    script = (
        "from convoeval import evaluate, OpenAIJudge\n"
        "judge = OpenAIJudge('m', api_key='k', base_url='http://127.0.0.1:9/v1')\n"
        f"evaluate({str(data)!r}, ['turn_relevancy'], judge=judge, "
        "cache=False)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert "UsageError: cache configures a judge built from a spec" in done.stderr
    assert "no running event loop" not in done.stderr
    assert "During handling" not in done.stderr


# --- the errors a user catches ---------------------------------------------------------------


def _error_classes() -> list[type[BaseException]]:
    import convoeval

    found = [getattr(convoeval, name) for name in convoeval.__all__]
    return [c for c in found if isinstance(c, type) and issubclass(c, BaseException)]


def test_every_error_a_user_catches_is_exported_under_its_public_name() -> None:
    import convoeval
    from convoeval.errors import PUBLIC_ERRORS

    assert {c.__name__ for c in _error_classes()} == PUBLIC_ERRORS
    for cls in _error_classes():
        assert cls.__module__ == "convoeval", cls
        assert issubclass(cls, convoeval.ConvoevalError)
    assert set(convoeval.__all__) <= set(dir(convoeval))


def test_an_error_pickles_with_its_message_and_attributes() -> None:
    import pickle

    import convoeval

    missing = convoeval.MissingFieldsError("m", ["reference"], "s1")
    back = pickle.loads(pickle.dumps(missing))
    assert type(back) is convoeval.MissingFieldsError
    assert (str(back), back.fields, back.sample_id) == (str(missing), ["reference"], "s1")
    usage = pickle.loads(pickle.dumps(convoeval.UsageError("limit must be at least 1")))
    assert repr(usage) == "UsageError('limit must be at least 1')"


def test_an_error_of_a_run_shows_its_public_module(tmp_path: Path) -> None:
    import subprocess
    import sys

    data = str(write_orders(tmp_path / "d.jsonl", wrong={2}, reference=False))
    script = f"from convoeval import evaluate\nevaluate({data!r}, limit=0)\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == (
        "convoeval.UsageError: limit must be at least 1, not 0"
    )


def test_a_results_object_still_pickles(tmp_path: Path) -> None:
    import pickle

    result = evaluate(
        write_orders(tmp_path / "d.jsonl", wrong={2}, reference=False),
        ["tool_call_accuracy"],
        output=tmp_path / "r.jsonl",
    )
    back = pickle.loads(pickle.dumps(result))
    assert back.summary() == result.summary()


def test_the_error_tree_in_the_docs_is_the_tree_of_the_code() -> None:
    import re

    text = (Path(__file__).parent.parent / "docs" / "errors.md").read_text()
    tree = text.split("```")[1].strip().splitlines()
    parents: dict[str, str] = {}
    stack: list[str] = []
    for line in tree:
        name = re.search(r"(\w+Error)", line)
        assert name is not None, line
        depth = (len(line) - len(line.lstrip("│├└─ "))) // 4
        stack[depth:] = [name.group(1)]
        if depth:
            parents[name.group(1)] = stack[depth - 1]
    classes = {c.__name__: c for c in _error_classes()}
    assert set(parents) | {"ConvoevalError"} == set(classes)
    for name, parent in parents.items():
        assert classes[parent] in classes[name].__mro__[1:], (name, parent)
        assert f"| `{name}` |" in text, name  # the table says what raises it and what to do


# --- which call scores what ------------------------------------------------------------------


def test_the_readme_table_says_which_call_scores_what_per_class_family() -> None:
    import inspect

    from convoeval.metrics import METRICS
    from convoeval.metrics._registry import FACADES

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    said = readme.split("On the DeepEval-named classes", 1)[1].split("Which call", 1)[0]
    assert {f.__name__ for f in FACADES.values()} == set(
        re.findall(r"`(\w+Metric|\w+GEval)`", said)
    )
    from convoeval import MultiTurnSample, ToolCallF1
    from convoeval.metrics import Metric

    for name, core in METRICS.items():
        # one `score` for every core: a sample gives the coroutine of its MetricResult (Ragas's
        # `score(**fields)` gives the float-like result; tests/compat covers that form)
        assert core.score is Metric.score, name
        assert not hasattr(core, "measure"), name
        for call in ("score_sync", "multi_turn_ascore", "multi_turn_score"):
            assert callable(getattr(core, call)), (name, call)
    sample = MultiTurnSample(user_input=[{"type": "human", "content": "hi"}])
    pending = ToolCallF1().score(sample)
    assert inspect.iscoroutine(pending)
    pending.close()
    for facade in FACADES.values():
        assert not inspect.iscoroutinefunction(getattr(facade, "score", None))
        assert inspect.iscoroutinefunction(facade.a_measure)
        for call in ("measure", "score_sync", "multi_turn_ascore", "multi_turn_score"):
            assert callable(getattr(facade, call)), (facade, call)


def test_a_judge_spec_names_its_own_endpoint_in_python_as_on_the_command_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from convoeval.judges import resolve_judge

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11/v1")
    specs = ["openai/a@http://127.0.0.1:9/v1", "openai/b", "openai/c@http://127.0.0.1:10/v1"]
    panel = resolve_judge(specs, api_key="k")
    assert [(m.model, m.base_url) for m in panel.members] == [  # type: ignore[attr-defined]
        ("a", "http://127.0.0.1:9/v1"),
        ("b", "http://127.0.0.1:11/v1"),
        ("c", "http://127.0.0.1:10/v1"),
    ]
    with pytest.raises(UsageError, match="names its endpoint, and base_url"):
        resolve_judge(specs, api_key="k", base_url="http://127.0.0.1:12/v1")
