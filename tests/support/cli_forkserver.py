"""A process that has imported the CLI once and forks one child per ``amrita-memory`` run.

Started by :func:`tests.support.cli.run_cli`. Each run is still its own process — its own
environment, working directory, stdin/stdout/stderr, exit status, embedded-server client —
as ``python -m amrita_memory_pg.cli.main`` would be, minus the ~2 s of imports every new
interpreter pays (the CLI tests start ~100 of them). Protocol, one JSON line each way on
fds 3 (requests) and 4 (replies): {args, env, cwd, stdin, stdout, stderr} →
{"pid": n} at once, then {"status": code} when the child has ended.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback

import amrita_memory_pg.cli.main as cli_main

cli_main._register_commands()  # the command modules too: most of the import time


def child(request: dict[str, object]) -> int:
    """Runs in the forked child: the CLI's main with the request's process state."""
    os.setsid()  # a timeout kills the child's whole group (its psql, its postmaster start)
    for fd, path, flags in (
        (0, request["stdin"], os.O_RDONLY),
        (1, request["stdout"], os.O_WRONLY | os.O_TRUNC),
        (2, request["stderr"], os.O_WRONLY | os.O_TRUNC),
    ):
        opened = os.open(str(path), flags)
        os.dup2(opened, fd)
        os.close(opened)
    os.closerange(3, 5)
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
    os.environ.clear()
    os.environ.update(request["env"])  # type: ignore[arg-type]
    os.chdir(str(request["cwd"]))
    args = [str(a) for a in request["args"]]  # type: ignore[attr-defined]
    sys.argv = ["amrita-memory", *args]
    status = 0
    try:
        cli_main.main(args)
    except SystemExit as exc:
        if exc.code is None:
            status = 0
        elif isinstance(exc.code, int):
            status = exc.code
        else:
            print(exc.code, file=sys.stderr)
            status = 1
    except BaseException:  # as the interpreter would: traceback, status 1
        traceback.print_exc()
        status = 1
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    return status


def serve() -> None:
    requests = os.fdopen(3, "r", encoding="utf-8")
    replies = os.fdopen(4, "w", encoding="utf-8")
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = child(request)
            finally:
                os._exit(code)
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, raw = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(raw)
        replies.write(json.dumps({"status": status}) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve()
