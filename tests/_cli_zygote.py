"""A long-lived process that has imported the command line once and forks a fresh child for each
`convoeval` call of the tests (tests/_cli.py starts it, one per test worker).

Each child is a real process of its own running the real `python -m convoeval.cli`: it takes the
call's argv, environment, working directory and stdin/stdout/stderr (the caller's pipes, passed
over a Unix socket), and exits the way the interpreter does. Only the import of the command line
is shared, so a call costs a fork instead of a Python start-up and the imports.

Protocol, one connection per call: the caller sends a length-prefixed JSON request (`argv`,
`env`, `cwd`, `module`) with its three pipe ends attached; the zygote answers `{"pid": N}` once
the child runs and `{"status": CODE}` when it ended (negative: killed by that signal).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import runpy
import selectors
import signal
import socket
import struct
import sys
from typing import Any

import convoeval.cli  # noqa: F401  (the import every child shares)

#: What most commands import on their way (the evaluation engine, the offline judge's runtime,
#: the report, the HTTP client): loaded once here, before any thread or socket of a command
#: exists, so a child starts with them. None of them starts a thread or reads a setting that a
#: call may change (tests/_cli.py starts a fresh interpreter when such a setting differs).
PRELOAD = (
    "convoeval.runner",
    "convoeval.judges",
    "convoeval.judges.offline.embedder",
    "convoeval.report",
    "convoeval.stats.trials",
    "convoeval.engines.ray.engine",
    "rich.console",
    "httpx",
    "jsonschema",
)

_HEADER = struct.Struct("!I")


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """One request and the three file descriptors that came with it."""
    data, fds, _flags, _address = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack_from(data)[0]:
        more = conn.recv(1 << 16)
        if not more:
            raise ConnectionError("the caller hung up mid-request")
        data += more
    size = _HEADER.unpack_from(data)[0]
    request: dict[str, Any] = json.loads(data[_HEADER.size : _HEADER.size + size])
    return request, fds


def _send(conn: socket.socket, message: dict[str, int]) -> None:
    with contextlib.suppress(OSError):  # the caller gave up (timeout, interrupted test)
        conn.sendall(json.dumps(message).encode() + b"\n")


def _become_the_command(request: dict[str, Any], fds: list[int], inherited: list[Any]) -> None:
    """In the child: take the call's stdio, environment, directory and argv, then run
    `python -m MODULE` as the interpreter would (its exit is the interpreter's)."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for thing in inherited:  # the zygote's sockets and pipes are none of the command's business
        if isinstance(thing, int):
            os.close(thing)
        else:
            thing.close()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    # `python -m` puts the working directory first on the path (a bot module beside the data).
    sys.path[0] = os.getcwd()
    importlib.invalidate_caches()
    sys.argv = ["convoeval", *request["argv"]]
    runpy.run_module(request["module"], run_name="__main__", alter_sys=True)


def main() -> None:
    """Serve calls until the test worker that started this process goes away."""
    for name in PRELOAD:
        importlib.import_module(name)
    listener = socket.socket(fileno=int(sys.argv[1]))
    watch = int(sys.argv[2])  # the worker holds the other end: EOF when it exits
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(watch, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    waiting: dict[int, socket.socket] = {}
    while True:
        for key, _events in selector.select():
            if key.fd == watch:
                return
            if key.fd == wake_r:
                while True:
                    try:
                        if not os.read(wake_r, 512):
                            break
                    except BlockingIOError:
                        break
                continue
            conn, _ = listener.accept()
            try:
                request, fds = _receive(conn)
            except (OSError, ValueError):
                conn.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                inherited: list[Any] = [selector, listener, conn, watch, wake_r, wake_w]
                _become_the_command(request, fds, [*inherited, *waiting.values()])
                return  # not reached: the command exits
            for fd in fds:
                os.close(fd)
            waiting[pid] = conn
            _send(conn, {"pid": pid})
        while waiting:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            done = waiting.pop(pid, None)
            if done is not None:
                _send(done, {"status": os.waitstatus_to_exitcode(status)})
                done.close()


if __name__ == "__main__":
    main()
