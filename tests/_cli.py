"""Run `convoeval ARGS` as a real process of its own, the way the CLI tests do, at a fork's cost.

`convoeval(*args, cwd=..., env=..., input=...)` returns what `subprocess.run([sys.executable,
"-m", "convoeval.cli", *args], capture_output=True, text=True)` returns. By default the process
is forked from a zygote (tests/_cli_zygote.py) that imported the command line once per test
worker; the child still gets its own pid, argv, environment, working directory and pipes, and
exits as the interpreter does. Its stdin is `input` (or /dev/null). `fork=False`, or an
environment that changes how Python or a preloaded library starts (PYTHON*, locale, HOME,
TMPDIR, BLAS threads), starts a fresh interpreter instead.
"""

from __future__ import annotations

import atexit
import json
import locale
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

_ZYGOTE = Path(__file__).with_name("_cli_zygote.py")
_HEADER = struct.Struct("!I")
#: Variables read when the interpreter starts or a module the zygote preloads is imported:
#: a call that changes one gets a fresh interpreter.
_STARTUP = ("PYTHON", "LC_", "LANG", "HOME", "TMPDIR", "OMP_", "OPENBLAS_", "MKL_")


class _Zygote:
    """The per-worker process the calls fork from, started at the first call."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="convoeval-zygote-")
        self.address = os.path.join(self.folder, "socket")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.address)
        listener.listen(16)
        self.env = dict(os.environ)
        watch_r, self._watch_w = os.pipe()
        fds = (listener.fileno(), watch_r)
        self.process = subprocess.Popen(
            [sys.executable, str(_ZYGOTE), *map(str, fds)],
            pass_fds=fds,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        listener.close()
        os.close(watch_r)
        atexit.register(self.close)

    def startup_differs(self, env: Mapping[str, str]) -> bool:
        """Whether `env` would start an interpreter differently from the zygote's."""
        names = {name for name in (*env, *self.env) if name.startswith(_STARTUP)}
        return any(env.get(name) != self.env.get(name) for name in names)

    def close(self) -> None:
        if self._watch_w < 0:
            return
        os.close(self._watch_w)  # the zygote sees EOF and returns
        self._watch_w = -1
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.unlink(self.address)
        os.rmdir(self.folder)


_zygote: _Zygote | None = None


def convoeval(
    *args: str | os.PathLike[str],
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 300,
    fork: bool = True,
    module: str = "convoeval.cli",
) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` (the command line by default; `convoeval` runs it too) in a
    process of its own: its returncode, stdout and stderr."""
    global _zygote
    argv = [os.fspath(arg) for arg in args]
    environment = dict(os.environ if env is None else env)
    if fork and _zygote is None:
        _zygote = _Zygote()
    command = [sys.executable, "-m", module, *argv]
    if not fork or _zygote is None or _zygote.startup_differs(environment):
        return subprocess.run(
            command, cwd=cwd, env=environment, input=input,
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    folder = os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())
    request = {"argv": argv, "env": environment, "cwd": folder, "module": module}
    return _forked(_zygote, command, json.dumps(request).encode(), input, timeout)


def _forked(
    zygote: _Zygote, argv: list[str], request: bytes, input: str | None, timeout: float
) -> subprocess.CompletedProcess[str]:
    """Ask the zygote for a child running the request; gather its output like `communicate`."""
    stdin_r, stdin_w = os.pipe() if input is not None else (os.open(os.devnull, os.O_RDONLY), -1)
    stdout_r, stdout_w = os.pipe()
    stderr_r, stderr_w = os.pipe()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(zygote.address)
    socket.send_fds(conn, [_HEADER.pack(len(request)) + request], [stdin_r, stdout_w, stderr_w])
    for fd in (stdin_r, stdout_w, stderr_w):
        os.close(fd)
    pending = input.encode() if input is not None else b""
    output: dict[int, list[bytes]] = {stdout_r: [], stderr_r: []}
    control = b""
    pid: int | None = None
    status: int | None = None
    selector = selectors.DefaultSelector()
    for fd in output:
        selector.register(fd, selectors.EVENT_READ)
    selector.register(conn, selectors.EVENT_READ)
    if stdin_w >= 0:
        os.set_blocking(stdin_w, False)
        selector.register(stdin_w, selectors.EVENT_WRITE)
    deadline = time.monotonic() + timeout
    try:
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(argv, timeout)
            for key, _events in selector.select(remaining):
                fd = key.fd
                if fd == stdin_w:
                    try:
                        sent = os.write(stdin_w, pending[:65536])
                    except BrokenPipeError:
                        sent = len(pending)  # the command stopped reading, like communicate
                    pending = pending[sent:]
                    if not pending:
                        selector.unregister(stdin_w)
                        os.close(stdin_w)
                        stdin_w = -1
                elif fd in output:
                    chunk = os.read(fd, 65536)
                    if chunk:
                        output[fd].append(chunk)
                    else:
                        selector.unregister(fd)
                else:
                    chunk = conn.recv(4096)
                    control += chunk
                    *lines, control = control.split(b"\n")
                    for line in lines:
                        message = json.loads(line)
                        pid = message.get("pid", pid)
                        status = message.get("status", status)
                    if not chunk or status is not None:
                        selector.unregister(conn)
                        if status is None:
                            raise RuntimeError("the CLI zygote died; see the test's stderr")
    finally:
        selector.close()
        conn.close()
        for fd in (stdin_w, stdout_r, stderr_r):
            if fd >= 0:
                os.close(fd)
    assert status is not None
    return subprocess.CompletedProcess(
        argv, status, _text(output[stdout_r]), _text(output[stderr_r])
    )


def _text(chunks: list[bytes]) -> str:
    """Bytes as `subprocess.run(text=True)` decodes them (locale encoding, universal newlines)."""
    data = b"".join(chunks).decode(locale.getpreferredencoding(False))
    return data.replace("\r\n", "\n").replace("\r", "\n")
