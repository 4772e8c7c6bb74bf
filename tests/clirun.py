"""Running a management command as `python manage.py NAME ARGS` would, inside a test's transaction."""

from __future__ import annotations

from django.core.management import load_command_class


def run_as_cli(capsys, app: str, name: str, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr): errors become one stderr line and exit code 1, as in a shell.
    The caller keeps the test's connection open (monkeypatch `connections.close_all`)."""
    try:
        load_command_class(app, name).run_from_argv(["manage.py", name, *args])
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err
