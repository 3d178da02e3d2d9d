"""How many threads the tests' llama.cpp server (SmolLM2-135M, tests/conftest.py) should use:
the CPU seconds and wall time of one fixed workload served with 1 and with 2 threads, on an idle
machine (beside whatever else runs: see the load printed) and beside a process of its own that
keeps one core busy (as the other xdist worker does).

Usage: python benchmarks/llama_threads.py [--requests N] [--tokens N]
Each configuration runs in a fresh process of its own (its server included), so the CPU seconds
printed are the server's and the client's, nothing else.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import subprocess
import sys
import time
import urllib.request

from _llama_server import smollm2_gguf
from _machine import print_machine

PROMPTS = ("Name a fruit.", "What is 2 + 2?", "Say hello to a friend.", "Name a colour.")


def _ask(base_url: str, prompt: str, tokens: int) -> int:
    """One chat completion of exactly `tokens` tokens (EOS ignored): the tokens generated."""
    body = {
        "model": "smollm2",
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": True,
    }
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        answer = json.loads(response.read())
    return int(answer["usage"]["completion_tokens"])


def _burn(seconds: float) -> None:
    """Keep one core busy, as the other test worker does."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def child(threads: int, requests: int, tokens: int) -> None:
    """Serve with `threads` threads, run the workload, print one JSON line of figures."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(smollm2_gguf())
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.n_ctx = 2048
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    server = xllamacpp.Server(params)
    base_url = str(server.listening_address).rstrip("/") + "/v1"
    _ask(base_url, "warm up", 4)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    started, cpu = time.monotonic(), usage.ru_utime + usage.ru_stime
    generated = sum(_ask(base_url, PROMPTS[i % len(PROMPTS)], tokens) for i in range(requests))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    wall, cpu = time.monotonic() - started, usage.ru_utime + usage.ru_stime - cpu
    print(json.dumps({"wall": wall, "cpu": cpu, "tokens": generated}), flush=True)
    del server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=64, help="tokens generated per request")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.requests, args.tokens)
        return
    print_machine()
    print(f"# workload: {args.requests} requests x {args.tokens} tokens, one at a time")
    for busy in (False, True):
        for threads in (1, 2):
            burner = multiprocessing.Process(target=_burn, args=(600,)) if busy else None
            if burner is not None:
                burner.start()
            command = [sys.executable, __file__, "--child", str(threads)]
            command += ["--requests", str(args.requests), "--tokens", str(args.tokens)]
            try:
                done = subprocess.run(command, capture_output=True, text=True, check=True)
            finally:
                if burner is not None:
                    burner.terminate()
                    burner.join()
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            where = "beside a busy core" if busy else "no burner"
            print(
                f"threads={threads} {where}: cpu {figures['cpu']:.1f} s, "
                f"wall {figures['wall']:.1f} s, {figures['tokens']} tokens"
            )


if __name__ == "__main__":
    main()
