"""Production settings are secure by default (issue #18 item 6), checked in fresh processes.

Each case imports portal.settings (or runs `manage.py check --deploy`) in a subprocess with a chosen
environment: the suite's own settings are the development ones (`make test` sets DEBUG=true).
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres"  # parsed only: these checks open no connection
STRONG_KEY = secrets.token_urlsafe(50)  # fresh each run: a key written here would be a published one
SETTINGS = [
    "DEBUG",
    "SECRET_KEY",
    "SECURE_SSL_REDIRECT",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_PROXY_SSL_HEADER",
    "AXES_FAILURE_LIMIT",
    "LOGIN_LOCKOUT_MINUTES",
    "LOGIN_TRUSTED_PROXIES",
]
READ_SETTINGS = (
    "import json; from django.conf import settings; "
    f"print(json.dumps({{name: getattr(settings, name) for name in {SETTINGS!r}}}))"
)


def run(args: list[str], var_dir: Path, **env: str) -> subprocess.CompletedProcess:
    """`args` run from the repository root with a clean portal environment plus `env`."""
    base = {
        key: value
        for key, value in os.environ.items()
        if key in {"PATH", "HOME", "LANG", "LC_ALL", "SYSTEMROOT", "TMPDIR"}
    }
    environment = {**base, "DJANGO_SETTINGS_MODULE": "portal.settings", "PORTAL_VAR_DIR": str(var_dir), **env}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )


def settings_in(var_dir: Path, **env: str) -> dict:
    process = run(["-c", f"import django; django.setup(); {READ_SETTINGS}"], var_dir, **env)
    assert process.returncode == 0, process.stderr[-2000:]
    return json.loads(process.stdout.strip().splitlines()[-1])


def production(**extra: str) -> dict[str, str]:
    return {"DEBUG": "false", "DATABASE_URL": DATABASE_URL, "SECRET_KEY": STRONG_KEY, **extra}


# --------------------------------------------------------------------------- the secret key


def test_production_without_a_secret_key_refuses_to_start(tmp_path):
    env = production()
    del env["SECRET_KEY"]
    for args in (["manage.py", "check"], ["-c", "import django; django.setup()"]):
        process = run(args, tmp_path, **env)
        assert process.returncode != 0
        assert "ImproperlyConfigured: SECRET_KEY is not set" in process.stderr
        assert "token_urlsafe" in process.stderr  # says how to make one
    assert not (tmp_path / "secret_key").exists()


def test_a_blank_secret_key_is_no_key(tmp_path):
    process = run(["manage.py", "check"], tmp_path, **production(SECRET_KEY="   "))
    assert process.returncode != 0 and "SECRET_KEY is not set" in process.stderr


def test_development_generates_a_private_key_once_and_reuses_it(tmp_path):
    var_dir = tmp_path / "var"  # created when missing
    first = settings_in(var_dir, DEBUG="true", DATABASE_URL=DATABASE_URL)
    key_file = var_dir / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert first["SECRET_KEY"] == key_file.read_text().strip() and len(first["SECRET_KEY"]) >= 50

    embedded = settings_in(var_dir)  # the embedded default (no DATABASE_URL), DEBUG unset: same key
    assert embedded["SECRET_KEY"] == first["SECRET_KEY"]
    sqlite = settings_in(var_dir, DEBUG="false", DATABASE_URL=f"sqlite:///{tmp_path / 'other.sqlite3'}")
    assert sqlite["SECRET_KEY"] == first["SECRET_KEY"]  # SQLite is one machine: the key file serves
    assert settings_in(tmp_path / "elsewhere", DEBUG="true")["SECRET_KEY"] != first["SECRET_KEY"]


def test_a_key_from_the_environment_wins_and_writes_nothing(tmp_path):
    assert settings_in(tmp_path, DEBUG="true", SECRET_KEY=STRONG_KEY)["SECRET_KEY"] == STRONG_KEY
    assert not (tmp_path / "secret_key").exists()


# --------------------------------------------------------------------------- HTTPS settings


def test_production_turns_the_https_settings_on(tmp_path):
    values = settings_in(tmp_path, **production())
    assert values["DEBUG"] is False
    assert values["SECURE_SSL_REDIRECT"] is True
    assert values["SECURE_HSTS_SECONDS"] >= 31_536_000
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True and values["SECURE_HSTS_PRELOAD"] is True
    assert values["SESSION_COOKIE_SECURE"] is True and values["CSRF_COOKIE_SECURE"] is True
    assert values["SECURE_PROXY_SSL_HEADER"] is None


def test_development_leaves_them_off(tmp_path):
    values = settings_in(tmp_path, DEBUG="true")
    assert values["SECURE_SSL_REDIRECT"] is False and values["SECURE_HSTS_SECONDS"] == 0
    assert values["SESSION_COOKIE_SECURE"] is False and values["CSRF_COOKIE_SECURE"] is False


def test_each_https_setting_can_be_overridden(tmp_path):
    values = settings_in(
        tmp_path,
        **production(
            SECURE_SSL_REDIRECT="false",
            SECURE_HSTS_SECONDS="3600",
            SECURE_HSTS_PRELOAD="false",
            SECURE_HSTS_INCLUDE_SUBDOMAINS="no",
            SESSION_COOKIE_SECURE="0",
            CSRF_COOKIE_SECURE="off",
            SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO",
            LOGIN_FAILURE_LIMIT="7",
            LOGIN_LOCKOUT_MINUTES="30",
            LOGIN_TRUSTED_PROXIES="10.0.0.0/8, 192.168.1.7",
        ),
    )
    assert values["SECURE_SSL_REDIRECT"] is False and values["SECURE_HSTS_SECONDS"] == 3600
    assert values["SECURE_HSTS_PRELOAD"] is False and values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is False
    assert values["SESSION_COOKIE_SECURE"] is False and values["CSRF_COOKIE_SECURE"] is False
    assert values["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert values["AXES_FAILURE_LIMIT"] == 7 and values["LOGIN_LOCKOUT_MINUTES"] == 30
    assert values["LOGIN_TRUSTED_PROXIES"] == ["10.0.0.0/8", "192.168.1.7/32"]


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto", "expected a request.META header name"),
        ("SECURE_HSTS_SECONDS", "-1", "expected 0 (off) or a number of seconds"),
        ("SECURE_SSL_REDIRECT", "maybe", "expected one of true/false"),
        ("LOGIN_TRUSTED_PROXIES", "10.0.0.0/8,proxy.example", "'proxy.example' is not an IP address or network"),
        ("LOGIN_FAILURE_LIMIT", "0", "must be between 1 and 1000"),
        ("LOGIN_FIRST_DELAY_SECONDS", "99999", "must be between 1 and 3600"),
    ],
)
def test_bad_values_are_refused_by_name(tmp_path, name, value, message):
    process = run(["manage.py", "check"], tmp_path, **production(**{name: value}))
    assert process.returncode != 0
    assert name in process.stderr and message in process.stderr


# --------------------------------------------------------------------------- check --deploy


def test_check_deploy_is_clean_in_production(tmp_path):
    process = run(
        ["manage.py", "check", "--deploy", "--fail-level", "DEBUG"],
        tmp_path,
        **production(ALLOWED_HOSTS="portal.example.com"),
    )
    assert process.returncode == 0, process.stdout + process.stderr
    assert "System check identified no issues (0 silenced)." in process.stdout


def test_check_deploy_reports_production_settings_turned_off(tmp_path):
    process = run(
        ["manage.py", "check", "--deploy"],
        tmp_path,
        **production(SECURE_SSL_REDIRECT="false", SESSION_COOKIE_SECURE="false", SECURE_HSTS_SECONDS="0"),
    )
    for code in ("security.W004", "security.W008", "security.W012"):  # HSTS, SSL redirect, session cookie
        assert f"({code})" in process.stderr


# --------------------------------------------------------------------------- refusals (issue #15)


def test_declared_production_refuses_debug_by_name(tmp_path):
    for env in (
        production(DEBUG="true", PORTAL_ENVIRONMENT="production"),
        {"DEBUG": "1", "PORTAL_ENVIRONMENT": "production"},
    ):
        process = run(["manage.py", "check"], tmp_path, **env)
        assert process.returncode != 0
        assert "ImproperlyConfigured: DEBUG=true with PORTAL_ENVIRONMENT=production: refused" in process.stderr


@pytest.mark.parametrize(
    "key",
    [
        "django-insecure-" + "k3y" * 20,  # what `startproject` writes
        "short-but-random-Zq8",  # under 50 characters
        "ab" * 30,  # under 5 distinct characters
    ],
)
def test_production_refuses_a_development_key(tmp_path, key):
    process = run(["manage.py", "check"], tmp_path, **production(SECRET_KEY=key))
    assert process.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is a development key" in process.stderr
    assert key not in process.stderr  # the refusal never prints the key


def test_declared_production_needs_a_key_even_on_sqlite(tmp_path):
    env = {"DEBUG": "false", "PORTAL_ENVIRONMENT": "production", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    process = run(["manage.py", "check"], tmp_path, **env)
    assert process.returncode != 0 and "SECRET_KEY is not set" in process.stderr
    assert not (tmp_path / "secret_key").exists()


def test_an_unknown_environment_is_refused_by_name(tmp_path):
    process = run(["manage.py", "check"], tmp_path, **production(PORTAL_ENVIRONMENT="prod"))
    assert process.returncode != 0 and "PORTAL_ENVIRONMENT='prod': expected production or development" in process.stderr


def test_development_keeps_working_with_debug(tmp_path):
    assert settings_in(tmp_path, DEBUG="true", PORTAL_ENVIRONMENT="development")["DEBUG"] is True


def test_check_deploy_is_clean_when_production_is_declared(tmp_path):
    process = run(
        ["manage.py", "check", "--deploy", "--fail-level", "DEBUG"],
        tmp_path,
        **production(ALLOWED_HOSTS="portal.example.com", PORTAL_ENVIRONMENT="production", LOG_FORMAT="json"),
    )
    assert process.returncode == 0, process.stdout + process.stderr
    assert "System check identified no issues (0 silenced)." in process.stdout


def test_whitenoise_serves_collected_static_files_compressed(tmp_path):
    """Production's static files: `collectstatic` writes them (with .gz copies), whitenoise serves them with
    DEBUG off, before the HTTPS redirect would matter (a request marked secure by the proxy header)."""
    env = production(ALLOWED_HOSTS="portal.example.com", SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO")
    collected = run(["manage.py", "collectstatic", "--noinput"], tmp_path, **env)
    assert collected.returncode == 0, collected.stderr
    assert (tmp_path / "static" / "portal" / "favicon.svg.gz").exists()
    fetch = (
        "import django; django.setup(); from django.test import Client; "
        "r = Client().get('/static/portal/favicon.svg', HTTP_HOST='portal.example.com', "
        "HTTP_X_FORWARDED_PROTO='https', HTTP_ACCEPT_ENCODING='gzip'); "
        "print(r.status_code, r['Content-Type'], r.get('Content-Encoding'))"
    )
    served = run(["-c", fetch], tmp_path, **env)
    assert served.returncode == 0, served.stderr
    assert served.stdout.strip().splitlines()[-1] == "200 image/svg+xml gzip"
