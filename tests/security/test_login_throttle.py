"""Password sign-in throttling (django-axes, access/throttle.py) on the self-service and the admin login forms.

Issue #18 item 4: every failed password cost a hash and nothing stopped a guesser. Issue #31 point 8: the
lock on an account from every address let a guesser lock its owner out. Now an (account, address) pair
after LOGIN_FAILURE_LIMIT failures, and an address after LOGIN_ADDRESS_FAILURE_LIMIT, wait a delay that
doubles with each further failure up to LOGIN_LOCKOUT_MINUTES; a delayed client is refused before any
password is hashed (even with the right one); another address is never delayed for an account.
"""

from __future__ import annotations

import math
import time
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
ADDRESS_LIMIT = 5
LOCKOUT = timedelta(seconds=30)  # the first delay
LONGEST = timedelta(minutes=15)


@pytest.fixture
def hasher(settings):
    settings.AXES_FAILURE_LIMIT = settings.LOGIN_FAILURE_LIMIT = LIMIT
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = ADDRESS_LIMIT
    settings.LOGIN_FIRST_DELAY_SECONDS = int(LOCKOUT.total_seconds())
    settings.LOGIN_LOCKOUT_MINUTES = int(LONGEST.total_seconds() // 60)
    settings.AXES_COOLOFF_TIME = timedelta(hours=24)
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
    # the lockout less the time since the last failure was recorded (a second or two on a busy machine)
    assert 0 < int(locked["Retry-After"]) <= LOCKOUT.total_seconds()
    assert "Too many sign-in attempts" in locked.content.decode()

    hashes = hasher.hashes
    refused = sign_in(client, url, "ana", "ana-right-password")

    assert refused.status_code == 429 and not signed_in(client)
    assert hasher.hashes == hashes  # refused before the password was checked: no work for a guesser
    assert 0 < int(refused["Retry-After"]) <= LOCKOUT.total_seconds()


@pytest.mark.parametrize("url", LOGIN_FORMS)
def test_a_guesser_cannot_lock_the_owner_out_from_another_address(client, ana, url):
    """Issue #31 point 8: however long the guesser goes on, the account's owner signs in from elsewhere."""
    lock(client, url, address="10.0.0.1")
    for _ in range(3):  # waits out each delay and fails again: the delays grow, for that address only
        AccessAttempt.objects.update(attempt_time=F("attempt_time") - LONGEST)
        assert sign_in(client, url, "ana", "wrong-again", address="10.0.0.1").status_code == 429

    assert sign_in(client, url, "ana", "ana-right-password", address="10.9.9.9").status_code == 302
    assert signed_in(client)


def test_each_failure_past_the_free_ones_doubles_the_delay_up_to_the_longest(client, ana):
    def timed(call) -> tuple[int, float]:
        """Retry-After, and the seconds the request took: the delay runs from the failure the request recorded,
        so on a busy machine the answer is that much less than the whole delay."""
        began = time.monotonic()
        answer = call()
        return int(answer["Retry-After"]), time.monotonic() - began

    waits = [timed(lambda: lock(client, "/login/"))]
    for _ in range(7):
        AccessAttempt.objects.update(attempt_time=F("attempt_time") - LONGEST)  # the delay has passed
        waits.append(timed(lambda: sign_in(client, "/login/", "ana", "wrong-again")))

    first = int(LOCKOUT.total_seconds())
    expected = [min(first * 2**n, int(LONGEST.total_seconds())) for n in range(8)]
    for (wait, took), whole in zip(waits, expected, strict=True):
        assert whole - math.ceil(took) <= wait <= whole
    assert expected[-1] == expected[-2] == LONGEST.total_seconds()


def test_after_a_delay_the_right_password_gets_in(client, ana):
    lock(client, "/login/")
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - LOCKOUT)
    assert sign_in(client, "/login/", "ana", "ana-right-password").status_code == 302


@pytest.mark.parametrize("url", LOGIN_FORMS)
def test_an_address_guessing_many_accounts_is_delayed_for_every_account(client, ana, bob, url):
    for n in range(ADDRESS_LIMIT - 1):  # under each account's own limit
        assert sign_in(client, url, f"nobody-{n}", "guess", address="10.0.0.1").status_code == 200
    assert sign_in(client, url, "ana", "guess", address="10.0.0.1").status_code == 429

    assert sign_in(client, url, "bob", "bob-right-password", address="10.0.0.1").status_code == 429
    assert not signed_in(client)
    assert sign_in(client, url, "bob", "bob-right-password", address="10.0.0.2").status_code == 302
    assert signed_in(client)


def test_one_accounts_failures_do_not_delay_other_accounts_from_the_address(client, ana, bob):
    lock(client, "/login/", "ana", address="10.0.0.1")
    assert sign_in(client, "/login/", "bob", "bob-right-password", address="10.0.0.1").status_code == 302


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
    for n in range(ADDRESS_LIMIT):  # many accounts: the address is delayed
        sign_in(client, "/login/", f"guess-{n}", "wrong", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}")

    assert (
        sign_in(client, "/login/", "bob", "bob-right-password", HTTP_X_FORWARDED_FOR="198.51.100.99").status_code == 429
    )  # the peer address 10.0.0.1 is locked, whatever the header says


def test_behind_a_trusted_proxy_the_forwarded_client_is_locked(client, settings, ana, bob):
    settings.LOGIN_TRUSTED_PROXIES = ["10.0.0.0/24"]
    for n in range(ADDRESS_LIMIT):  # the client varies the part of the header it controls; the proxy appends
        sign_in(client, "/login/", f"guess-{n}", "wrong", HTTP_X_FORWARDED_FOR=f"6.6.6.{n}, 203.0.113.5")
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


def test_the_defaults():
    from django.conf import settings as live

    assert live.AXES_FAILURE_LIMIT == live.LOGIN_FAILURE_LIMIT == 5 and live.LOGIN_ADDRESS_FAILURE_LIMIT == 20
    assert (live.LOGIN_FIRST_DELAY_SECONDS, live.LOGIN_LOCKOUT_MINUTES) == (30, 15)
    assert live.AXES_COOLOFF_TIME == timedelta(hours=live.LOGIN_FAILURE_MEMORY_HOURS) == timedelta(hours=24)
    assert live.AXES_HANDLER == "access.throttle.GrowingDelayHandler"
    assert live.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"


def test_the_admin_lists_failures_and_deleting_them_unlocks(ana, admin_client):
    client = Client()  # another browser than the admin's
    lock(client, "/login/")
    attempt = AccessAttempt.objects.get()

    listing = admin_client.get("/admin/access/loginattempt/")
    text = listing.content.decode()
    assert listing.status_code == 200 and "ana" in text
    assert "Login attempts" in text and "Axes" not in text  # the navigation names it in the users' words
    assert admin_client.post(f"/admin/access/loginattempt/{attempt.pk}/delete/", {"post": "yes"}).status_code == 302

    assert sign_in(client, "/login/", "ana", "ana-right-password").status_code == 302
