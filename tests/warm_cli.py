"""`python manage.py …` in the docs test without paying Python's and Django's start-up each time (seconds on a
busy machine, times some 130 commands).

A server process imports Django once (django.setup(), no database connection) and waits on a UNIX socket. The
`python` that the docs shell finds first on its PATH is `client`: for `python manage.py ARGS` it hands the server
its working directory, its arguments and its stdin, stdout and stderr (the file descriptors themselves), and
the server forks a child that runs `manage.py ARGS` as the real process would (django's
execute_from_command_line, the same commands, the same output on the same descriptors, the exit code given
back). Anything else (`python -c …`, python with an environment that changes a setting) runs the real
interpreter. The server's settings are the shell's: a command whose environment differs in a variable that
portal/settings.py reads runs the real interpreter too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_VARIABLES = set(re.findall(r'env_\w+\(\s*"([A-Z0-9_]+)"', (ROOT / "portal" / "settings.py").read_text()))


def settings_environment(env: dict[str, str]) -> dict[str, str]:
    return {key: value for key, value in env.items() if key in SETTINGS_VARIABLES or key.startswith("DJANGO_")}


def serve(path: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connections

    connections.close_all()  # a child opens its own: none is shared across a fork
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    while True:
        connection, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            _child(connection)
        connection.close()
        while _reap():
            pass


def _reap() -> bool:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return pid != 0


def _child(connection: socket.socket) -> None:
    """Run one command on the client's descriptors; send its exit code."""
    message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    request = json.loads(message)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin, sys.stdout, sys.stderr = (
        os.fdopen(0, "r", closefd=False),
        os.fdopen(1, "w", closefd=False),
        os.fdopen(2, "w", closefd=False),
    )
    os.chdir(request["cwd"])
    os.environ.update(request["env"])
    code = 0
    try:
        from django.core.management import execute_from_command_line

        execute_from_command_line(["manage.py", *request["args"]])
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    connection.sendall(struct.pack("!i", code))
    os._exit(0)


def client(path: str, real_python: str, server_env: dict[str, str]) -> None:
    args = sys.argv[1:]
    env = {key: value for key, value in os.environ.items()}
    if not args or args[0] != "manage.py" or settings_environment(env) != server_env:
        os.execv(real_python, [real_python, *args])
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    request = json.dumps({"cwd": os.getcwd(), "args": args[1:], "env": env}).encode()
    socket.send_fds(connection, [request], [0, 1, 2])
    answer = b""
    while len(answer) < 4:
        chunk = connection.recv(4 - len(answer))
        if not chunk:
            sys.exit(1)
        answer += chunk
    sys.exit(struct.unpack("!i", answer)[0])


@contextlib.contextmanager
def warm(env: dict[str, str]) -> Iterator[dict[str, str]]:
    """A server for `env` (the docs shell's); yields `env` with the client first on PATH as `python`."""
    real = str(ROOT / ".venv" / "bin" / "python")
    with tempfile.TemporaryDirectory(prefix="warm-cli-") as directory:
        path = os.path.join(directory, "socket")
        server = subprocess.Popen(
            [real, str(Path(__file__)), path], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
        )
        try:
            assert server.stdout is not None and server.stdout.readline() == "ready\n", "the warm CLI did not start"
            shim = Path(directory) / "bin" / "python"
            shim.parent.mkdir()
            shim.write_text(
                f"#!{real}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom tests.warm_cli import client\n"
                f"client({path!r}, {real!r}, {settings_environment(env)!r})\n"
            )
            shim.chmod(0o755)
            yield {**env, "PATH": f"{shim.parent}{os.pathsep}{env['PATH']}"}
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    serve(sys.argv[1])
