"""`agreement.py --judge` of one source tree, with per-step counts (used by local_model.py).

Usage: python benchmarks/_local_agreement.py BENCH_DIR [--reason-first] -- AGREEMENT_ARGS...

Imports BENCH_DIR/agreement.py (which puts BENCH_DIR/../src first on sys.path, so the judge code
is that tree's: the working tree or an older commit's worktree), wraps `LLMJudge.run` and
`LLMJudge._ask` to count, per step name, the steps asked, answered, failed (JudgeError after the
re-ask) and re-asked, and the requests sent, then runs agreement's `main` with AGREEMENT_ARGS and
prints `steps.<step>.<count>: N` lines after its own figures. With --reason-first the OpenAI
judge is built with `reason_first=True` (a tree without that option refuses it). Nothing in the
benchmarked code is changed: the wrappers only count and call through.
"""

from __future__ import annotations

import contextvars
import functools
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

_CURRENT: contextvars.ContextVar[dict[str, bool] | None] = contextvars.ContextVar(
    "step_flags", default=None
)
COUNTS: defaultdict[str, Counter[str]] = defaultdict(Counter)


def _instrument() -> None:
    from convoeval.judges import JudgeError
    from convoeval.judges.core.llm import LLMJudge

    run, ask = LLMJudge.run, LLMJudge._ask

    @functools.wraps(run)
    async def counted_run(self: Any, step: Any, inputs: Any, **kw: Any) -> Any:
        flags = {"reasked": False}
        token = _CURRENT.set(flags)
        counts = COUNTS[step.name]
        counts["steps"] += 1
        try:
            answer = await run(self, step, inputs, **kw)
        except JudgeError:
            counts["failed"] += 1
            raise
        else:
            counts["answered"] += 1
            return answer
        finally:
            counts["reasked"] += flags["reasked"]
            _CURRENT.reset(token)

    @functools.wraps(ask)
    async def counted_ask(self: Any, step: Any, *args: Any, **kw: Any) -> Any:
        flags = _CURRENT.get()
        COUNTS[step.name]["requests"] += 1
        if flags is not None and any(type(a).__name__ == "Reask" for a in args):
            flags["reasked"] = True
        return await ask(self, step, *args, **kw)

    LLMJudge.run = counted_run  # type: ignore[method-assign]
    LLMJudge._ask = counted_ask  # type: ignore[method-assign]


def _reason_first() -> None:
    import convoeval.judges as judges

    base = judges.OpenAIJudge

    class ReasonFirstJudge(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kw: Any) -> None:
            kw.setdefault("reason_first", True)
            super().__init__(*args, **kw)

    judges.OpenAIJudge = ReasonFirstJudge  # type: ignore[misc]


def main(argv: list[str]) -> int:
    """Run agreement.py's main under the counters; print the counts."""
    if "--" not in argv or not argv:
        raise SystemExit(__doc__)
    split = argv.index("--")
    own, rest = argv[:split], argv[split + 1 :]
    bench = Path(own[0]).resolve()
    sys.path.insert(0, str(bench))
    import agreement

    import convoeval

    print(f"convoeval.source: {Path(convoeval.__file__).parent}", flush=True)
    _instrument()
    if "--reason-first" in own:
        _reason_first()
    code = int(agreement.main(rest))
    for name, counts in sorted(COUNTS.items()):
        for key in ("steps", "answered", "failed", "reasked", "requests"):
            print(f"steps.{name}.{key}: {counts[key]}")
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
