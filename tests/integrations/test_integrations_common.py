"""What every converter shares: importable without its framework, one error class, clear hints."""

from __future__ import annotations

import subprocess
import sys

import pytest

from convoeval import HumanMessage, MultiTurnSample
from convoeval.integrations._errors import ConversionError
from convoeval.integrations.langchain import from_langchain_messages, to_langchain_messages
from convoeval.integrations.llama_index import from_llama_index_events, to_llama_index_messages
from convoeval.integrations.ragas import to_ragas_sample

MODULES = ["langchain", "openai_agents", "swarm", "llama_index", "ragas", "deepeval"]

_BLOCKED = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('langchain_core', 'llama_index', 'agents', 'ragas', 'deepeval'):
            raise ImportError(f'blocked: {name}')
        return None
sys.meta_path.insert(0, Block())
"""


def test_every_module_imports_without_its_framework() -> None:
    code = _BLOCKED + "".join(f"import convoeval.integrations.{m}\n" for m in MODULES)
    code += "import convoeval.io\nprint('ok')\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_dict_forms_convert_without_the_framework() -> None:
    code = _BLOCKED + (
        "from convoeval.integrations.langchain import from_langchain_messages\n"
        "s = from_langchain_messages([{'type': 'human', 'data': {'content': 'hi'}}])\n"
        "print(s.user_input[0].content)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hi"


@pytest.mark.parametrize(
    ("blocked", "call", "message"),
    [
        (
            "langchain_core.messages",
            lambda s: to_langchain_messages(s),
            "this converter needs langchain-core, which is not installed: "
            "pip install 'convoeval[langchain]'",
        ),
        (
            "llama_index.core.llms",
            lambda s: to_llama_index_messages(s),
            "this converter needs llama-index-core, which is not installed: "
            "pip install 'convoeval[llamaindex]'",
        ),
        (
            "llama_index.core.agent.workflow",
            lambda s: from_llama_index_events([]),
            "this converter needs llama-index-core, which is not installed: "
            "pip install 'convoeval[llamaindex]'",
        ),
        (
            "ragas",
            lambda s: to_ragas_sample(s),
            "this converter needs ragas, which is not installed: pip install 'convoeval[ragas]'",
        ),
    ],
)
def test_missing_framework_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, blocked: str, call: object, message: str
) -> None:
    monkeypatch.setitem(sys.modules, blocked, None)  # makes `import blocked` fail
    sample = MultiTurnSample(user_input=[HumanMessage(content="hi")])
    with pytest.raises(ImportError) as caught:
        call(sample)  # type: ignore[operator]
    assert str(caught.value) == message


def test_one_error_class_for_every_converter() -> None:
    from convoeval.integrations.deepeval import from_deepeval
    from convoeval.integrations.llama_index import from_llama_index_messages
    from convoeval.integrations.openai_agents import from_agents_items
    from convoeval.integrations.ragas import from_ragas
    from convoeval.integrations.swarm import from_swarm_messages

    converters = [
        from_langchain_messages,
        from_agents_items,
        from_swarm_messages,
        from_ragas,
        from_deepeval,
        from_llama_index_messages,
    ]
    for convert in converters:
        with pytest.raises(ConversionError) as caught:
            convert(42)
        assert isinstance(caught.value, ValueError)
        assert caught.value.problems and all(isinstance(p, str) for p in caught.value.problems)


def test_user_input_cannot_be_given_twice() -> None:
    with pytest.raises(ConversionError) as caught:
        from_langchain_messages([{"type": "human", "data": {"content": "hi"}}], user_input=[])
    assert caught.value.problems == [
        "user_input: the conversation comes from the converted input; do not also give it"
    ]
