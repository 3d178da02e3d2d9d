"""The public surface of `convoeval` is exactly what DESIGN §1 promises: no accidental leaks."""

from __future__ import annotations

import subprocess
import sys

import convoeval

EXPECTED = {
    # DeepEval's names (issue 34 §2): metrics, parameter enums, evaluate()'s config objects,
    # the pytest path, and the TypeError a wrong test case raises.
    "TopicAdherenceMetric",
    "GoalAccuracyMetric",
    "TurnParams",
    "MultiTurnParams",
    "AsyncConfig",
    "DisplayConfig",
    "ErrorConfig",
    "CacheConfig",
    "assert_test",
    "CaseTypeError",
    # Migration from Ragas and DeepEval (issue 34).
    "AspectCritic",
    "TopicAdherence",
    "EvaluationDataset",
    "SingleTurnSample",
    "ScoreResult",
    "AIMessage",
    "ConversationalTestCase",
    "HumanMessage",
    "LLMTestCase",
    "ModelTestCase",
    "MultiTurnSample",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "Turn",
    "ToolCallAccuracy",
    "ToolCallF1",
    # Ragas's argument comparators for ToolCallAccuracy(arg_comparison_metric=...) (issue 34).
    "ExactMatch",
    "NonLLMStringSimilarity",
    "DistanceMeasure",
    "EvaluationResult",
    "aevaluate",
    "evaluate",
    "MetricResult",
    "Metric",
    "TopicAdherenceScore",
    "ConversationRelevancyMetric",
    # The conversation judgments of issue 13.
    "KnowledgeRetentionMetric",
    "RoleAdherenceMetric",
    "ConversationCompletenessMetric",
    "UserFrustration",
    "TurnRelevancyMetric",
    "ConversationalGEval",
    "AgentGoalAccuracyWithReference",
    "AgentGoalAccuracyWithoutReference",
    "RubricsScore",
    # Agent trajectories (issue 14): the match metric, pass^k / pass@k over repeated trials.
    "TrajectoryMatch",
    "ToolSchemaCheck",
    "ToolUseMetric",
    "TrialsSummary",
    "trials_summary",
    # Agreement with human labels (issue 15).
    "agree",
    "AgreementReport",
    # Two runs compared record by record (issue 28).
    "compare",
    "Comparison",
    # Conversations to score: a simulated user against the team's bot (issue 26).
    "simulate",
    "asimulate",
    "ConversationSimulator",
    "__version__",
    # The error tree: every "your input is wrong" error is a ConvoevalError.
    "ConvoevalError",
    "DataError",
    "ConversionError",
    "JudgeAuthError",
    "JudgeError",
    "JudgePanel",
    "MissingFieldsError",
    "ResultsFileError",
    "OfflineJudgeError",
    "RequiredFieldsError",
    # Every error a user catches (issue 33; docs/errors.md).
    "UsageError",
    "MetricFailedError",
    "JudgeUnreachableError",
    "JudgeConfigError",
    "JudgeSpecError",
    "TrialsError",
    "LabelsError",
    "CompareError",
    "DataFileError",
    "NothingToScoreError",
    # Imported lazily: `import convoeval` does not load the HTTP judge.
    "OpenAIJudge",
}


def test_all_is_exactly_the_public_names() -> None:
    assert set(convoeval.__all__) == EXPECTED
    for name in convoeval.__all__:
        assert hasattr(convoeval, name), name


def test_import_loads_no_model_and_opens_no_connection() -> None:
    code = (
        "import sys, socket\n"
        "def refuse(*a, **k): raise AssertionError('network at import time')\n"
        "socket.socket.connect = refuse\n"
        "import convoeval\n"
        "assert 'onnxruntime' not in sys.modules, 'the offline model was loaded at import'\n"
        "assert 'convoeval.judges.openai.judge' not in sys.modules, 'OpenAIJudge loaded early'\n"
        "assert 'openai' not in sys.modules, 'the openai SDK was imported at import'\n"
        "from convoeval import OpenAIJudge\n"
        "assert OpenAIJudge.__name__ == 'OpenAIJudge'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


#: Packages that `import convoeval` and the command line's start must not load (issue 35 §4):
#: each is imported where it is used.
_HEAVY = ("numpy", "pydantic", "rich", "onnxruntime", "httpx", "openai", "ray", "pandas", "pyarrow")


def test_import_and_the_command_lines_start_load_no_heavy_package() -> None:
    code = (
        "import sys\n"
        "import convoeval\n"
        f"heavy = [m for m in {_HEAVY!r} if m in sys.modules]\n"
        "assert not heavy, f'import convoeval loaded {heavy}'\n"
        "assert set(dir(convoeval)) == {*convoeval.__all__, '__version__'}\n"
        "from convoeval.cli import main\n"
        f"heavy = [m for m in {_HEAVY[2:]!r} if m in sys.modules]\n"
        "assert not heavy, f'the command line loaded {heavy}'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_run_name_wires_in_the_notebook_view() -> None:
    """`from convoeval import evaluate` loads the report's notebook view (ARCHITECTURE.md §2)."""
    code = (
        "from convoeval import EvaluationResult\n"
        "assert EvaluationResult.html_view is not None\n"
        "from convoeval.runner.engines import choose_engine\n"
        "assert type(choose_engine({'engine': 'ray'})).__module__ == 'convoeval.engines.ray'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_every_exported_error_is_a_convoeval_error() -> None:
    for name in EXPECTED:
        if name.endswith("Error"):
            assert issubclass(getattr(convoeval, name), convoeval.ConvoevalError), name


def test_the_runner_exports_only_what_users_need() -> None:
    import convoeval.runner

    assert set(convoeval.runner.__all__) == {
        "EvaluationResult",
        "JudgeDescription",
        "JudgeUnreachableError",
        "MetricRecord",
        "MetricStats",
        "NoProgress",
        "NothingToScoreError",
        "OfflineJudgeError",
        "PRICES",
        "PlainProgress",
        "Progress",
        "RequiredFieldsError",
        "ResultRow",
        "ResultsFileError",
        "RunMeta",
        "RunOptions",
        "UsageError",
        "aevaluate",
        "estimate_cost",
        "evaluate",
        "make_progress",
        "meta_path",
        "read_meta",
    }


def test_the_schema_exports_the_conversation_types() -> None:
    import convoeval.schema

    assert set(convoeval.schema.__all__) == {
        "AIMessage",
        "CaseTypeError",
        "MultiTurnParams",
        "TurnParams",
        "ConversationalTestCase",
        "EvaluationDataset",
        "Exchange",
        "FunctionSpec",
        "HumanMessage",
        "LLMTestCase",
        "Message",
        "ModelTestCase",
        "MultiTurnSample",
        "SingleTurnSample",
        "Scenario",  # what the simulator plays (issue 26)
        "SystemMessage",
        "ToolCall",
        "ToolMessage",
        "ToolSpec",
        "Turn",
        "split_exchanges",
    }


def test_the_report_exports_the_table_the_page_and_their_helpers() -> None:
    import convoeval.report

    assert set(convoeval.report.__all__) == {
        "judge_label",
        "render_report",
        "safe_json",
        "summary_table",
        "usage_text",
        "write_report",
    }


def test_the_integrations_export_only_their_error() -> None:
    import convoeval.integrations

    assert set(convoeval.integrations.__all__) == {"ConversionError"}


def test_the_offline_judge_exports_the_judge_and_its_kit() -> None:
    import convoeval.judges.offline

    assert set(convoeval.judges.offline.__all__) == {
        "Embedder",
        "ModelIntegrityError",
        "OfflineJudge",
        "OfflineKit",
        "Request",
        "Window",
        "get_embedder",
        "get_kit",
    }


def test_the_version_comes_from_the_package_metadata() -> None:
    from importlib.metadata import version

    assert convoeval.__version__ == version("convoeval")


def test_the_runner_does_not_import_the_package_face() -> None:
    from pathlib import Path

    runner = Path(convoeval.__file__).parent / "runner"
    for module in runner.glob("*.py"):
        text = module.read_text(encoding="utf-8")
        assert "from convoeval import" not in text and "import convoeval\n" not in text, module
