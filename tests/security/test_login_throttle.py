"""Password sign-in throttling (django-axes, access/throttle.py) on the self-service and the admin login forms.

Issue #18 item 4: every failed password cost a hash and nothing stopped a guesser. Now an account and an
address are locked after LOGIN_FAILURE_LIMIT failures, a locked client is refused before any password is
hashed (even with the right one), and the lockout ends LOGIN_LOCKOUT_MINUTES after the failures.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.db.models import F
from django.test import Client

from access.models import AuditEvent
from access.throttle import client_address
from tests.factories import UserFactory
from tests.security.passwords import LOGIN_FORMS, sign_in, signed_in, use_counting_hasher

pytestmark = pytest.mark.django_db
LIMIT = 3
LOCKOUT = timedelta(minutes=15)


@pytest.fixture
def hasher(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = LOCKOUT
    settings.LOGIN_TRUSTED_PROXIES = []
    return use_counting_hasher(settings)


@pytest.fixture
def ana(hasher):
    return UserFactory(username="ana", password="ana-right-password")


@pytest.fixture
def bob(hasher):
    return UserFactory(username="bob", password="bob-right-password")


def lock(client, url: str, username: str = "ana", address: str = "10.0.0.1"):
    """LIMIT wrong passwords; the last one is answered with the lockout."""
    responses = [sign_in(client, url, username, f"wrong-{n}", address) for n in range(LIMIT)]
    assert [r.status_code for r in responses] == [200] * (LIMIT - 1) + [429]
    return responses[-1]


@pytest.mark.parametrize("url", LOGIN_FORMS)
def test_failures_lock_the_account_and_the_right_password_is_then_refused_unhashed(client, ana, hasher, url):
    locked = lock(client, url)
    assert locked["Retry-After"] == str(int(LOCKOUT.total_seconds()))
    assert "Too many sign-in attempts" in locked.content.decode()

    hashes = hasher.hashes
    refused = sign_in(client, url, "ana", "ana-right-password")

    assert refused.status_code == 429 and not signed_in(client)
    assert hasher.hashes == hashes  # refused before the password was checked: no work for a guesser
    assert 0 < int(refused["Retry-After"]) <= LOCKOUT.total_seconds()


@pytest.mark.parametrize("url", LOGIN_FORMS)
def test_the_account_is_locked_from_every_address(client, ana, url):
    lock(client, url, address="10.0.0.1")

    assert sign_in(client, url, "ana", "ana-right-password", address="10.9.9.9").status_code == 429
    assert not signed_in(client)


@pytest.mark.parametrize("url", LOGIN_FORMS)
def test_the_address_is_locked_for_every_account(client, ana, bob, url):
    lock(client, url, "ana", address="10.0.0.1")

    assert sign_in(client, url, "bob", "bob-right-password", address="10.0.0.1").status_code == 429
    assert not signed_in(client)
    assert sign_in(client, url, "bob", "bob-right-password", address="10.0.0.2").status_code == 302
    assert signed_in(client)


def test_guessing_many_accounts_from_one_address_is_locked_too(client, hasher):
    for n in range(LIMIT - 1):
        assert sign_in(client, "/login/", f"nobody-{n}", "guess").status_code == 200
    assert sign_in(client, "/login/", "nobody-last", "guess").status_code == 429
    hashes = hasher.hashes
    assert sign_in(client, "/login/", "yet-another", "guess").status_code == 429
    assert hasher.hashes == hashes


def test_refusals_during_the_lockout_do_not_extend_it(client, ana):
    lock(client, "/login/")
    attempts = list(AccessAttempt.objects.values_list("attempt_time", "failures_since_start"))

    for _ in range(3):
        assert sign_in(client, "/login/", "ana", "ana-right-password").status_code == 429

    assert list(AccessAttempt.objects.values_list("attempt_time", "failures_since_start")) == attempts


@pytest.mark.parametrize("url", LOGIN_FORMS)
def test_the_lockout_ends_after_the_lockout_time(client, ana, url):
    lock(client, url)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - LOCKOUT + timedelta(seconds=30))
    assert sign_in(client, url, "ana", "ana-right-password").status_code == 429  # 30 s to go

    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=31))

    assert sign_in(client, url, "ana", "ana-right-password").status_code == 302
    assert signed_in(client)


def test_failures_below_the_limit_do_not_lock(client, ana):
    for n in range(LIMIT - 1):
        assert sign_in(client, "/login/", "ana", f"wrong-{n}").status_code == 200
    assert sign_in(client, "/login/", "ana", "ana-right-password").status_code == 302


def test_a_json_client_gets_the_error_envelope_with_the_retry_time(client, ana):
    lock(client, "/login/")

    response = sign_in(client, "/login/", "ana", "ana-right-password", HTTP_ACCEPT="application/json")

    assert response.status_code == 429 and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["code"] == "locked_out" and body["field"] == "" and body["value"] is None
    assert "too many failed sign-ins" in body["reason"] and body["locked_until"] in body["reason"]
    assert body["retry_after"] == int(response["Retry-After"]) > 0


def test_the_lockout_page_says_until_when(client, ana):
    page = lock(client, "/login/").content.decode()
    attempt = AccessAttempt.objects.get()
    until = attempt.attempt_time + LOCKOUT
    assert until.strftime("%Y-%m-%d %H:%M") in page and "even the right password is refused" in page


def test_the_lockout_is_audited_once(client, ana):
    lock(client, "/admin/login/")
    sign_in(client, "/admin/login/", "ana", "ana-right-password")

    event = AuditEvent.objects.get(action="auth.lockout")
    assert (event.actor_name, event.target, event.outcome, event.source, event.remote_addr) == (
        "ana",
        "user/ana",
        "denied",
        "admin",
        "10.0.0.1",
    )
    assert event.detail["failures"] == LIMIT


# --------------------------------------------------------------------------- the client address


def test_forwarded_for_is_ignored_without_trusted_proxies(client, ana, bob):
    for n in range(LIMIT):
        sign_in(client, "/login/", "ana", "wrong", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")

    assert (
        sign_in(client, "/login/", "bob", "bob-right-password", HTTP_X_FORWARDED_FOR="198.51.100.99").status_code == 429
    )  # the peer address 10.0.0.1 is locked, whatever the header says


def test_behind_a_trusted_proxy_the_forwarded_client_is_locked(client, settings, ana, bob):
    settings.LOGIN_TRUSTED_PROXIES = ["10.0.0.0/24"]
    for n in range(LIMIT):  # the client varies the part of the header it controls; the proxy appends its peer
        sign_in(client, "/login/", "ana", "wrong", HTTP_X_FORWARDED_FOR=f"6.6.6.{n}, 203.0.113.5")
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.5"}

    assert (
        sign_in(client, "/login/", "bob", "bob-right-password", HTTP_X_FORWARDED_FOR="1.1.1.1, 203.0.113.5").status_code
        == 429
    )
    assert (
        sign_in(client, "/login/", "bob", "bob-right-password", HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 302
    )  # another client of the proxy


@pytest.mark.parametrize(
    ("remote", "forwarded", "expected"),
    [
        ("10.0.0.1", "", "10.0.0.1"),
        ("10.0.0.1", "203.0.113.5", "203.0.113.5"),
        ("10.0.0.1", "6.6.6.6, 203.0.113.5, 10.0.0.2", "203.0.113.5"),  # two trusted hops
        ("10.0.0.1", "10.0.0.3, 10.0.0.2", "10.0.0.3"),  # every hop trusted: the farthest one
        ("10.0.0.1", "203.0.113.5, not-an-address", "10.0.0.1"),  # garbage: the last address a proxy saw
        ("192.0.2.1", "203.0.113.5", "192.0.2.1"),  # not a trusted proxy: its header means nothing
        ("unix-socket", "203.0.113.5", None),
        ("::1", "2001:db8::7", "2001:db8::7"),
    ],
)
def test_client_address(rf, settings, remote, forwarded, expected):
    settings.LOGIN_TRUSTED_PROXIES = ["10.0.0.0/24", "::1/128"]
    request = rf.get("/", REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected


def test_the_defaults_are_five_failures_and_fifteen_minutes():
    from django.conf import settings as live

    assert live.AXES_FAILURE_LIMIT == live.LOGIN_FAILURE_LIMIT == 5
    assert live.AXES_COOLOFF_TIME == timedelta(minutes=live.LOGIN_LOCKOUT_MINUTES) == timedelta(minutes=15)
    assert live.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"


def test_the_admin_lists_failures_and_deleting_them_unlocks(ana, admin_client):
    client = Client()  # another browser than the admin's
    lock(client, "/login/")
    attempt = AccessAttempt.objects.get()

    listing = admin_client.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200 and "ana" in listing.content.decode()
    assert admin_client.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"}).status_code == 302

    assert sign_in(client, "/login/", "ana", "ana-right-password").status_code == 302
