"""OIDC sign-in is not throttled by failed password sign-ins (a real provider: tests/oidc/provider.js).

The identity provider checks those credentials; a guesser hammering the password form, for this user or
for others from the same address, must not lock the user out of SSO, and SSO sign-ins do not count.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import SESSION_KEY, get_user_model

from tests.oidc.idp import LoginDriver
from tests.security.passwords import sign_in, signed_in, use_counting_hasher

pytest_plugins = ["tests.oidc.fixtures"]  # the test IdP: oidc_idp, oidc, login_driver
pytestmark = pytest.mark.django_db
User = get_user_model()
LIMIT = 3
ADDRESS = "127.0.0.1"  # the test client's address, for the password form and the OIDC callback alike


@pytest.fixture(autouse=True)
def throttle(settings):
    settings.AXES_FAILURE_LIMIT = settings.LOGIN_FAILURE_LIMIT = LIMIT
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = LIMIT  # one account's failures delay the whole address too
    settings.AXES_COOLOFF_TIME = timedelta(hours=24)
    settings.LOGIN_TRUSTED_PROXIES = []
    return use_counting_hasher(settings)


def lock_password_sign_in(client, username: str) -> None:
    codes = [sign_in(client, "/login/", username, f"wrong-{n}", ADDRESS).status_code for n in range(LIMIT)]
    assert codes == [200] * (LIMIT - 1) + [429]


def test_oidc_sign_in_works_while_password_sign_in_of_that_user_is_locked(client, login_driver, oidc):
    oidc.set_account("olga")
    assert login_driver.login("olga").status_code == 302  # the first SSO sign-in creates the user
    olga = User.objects.get(username="olga")
    olga.set_password("olga-local-password")  # a local password too (a break-glass account)
    olga.save()
    client.logout()

    lock_password_sign_in(client, "olga")
    assert sign_in(client, "/login/", "olga", "olga-local-password", ADDRESS).status_code == 429
    assert not signed_in(client)

    again = LoginDriver(client, oidc)
    response = again.login("olga")

    assert response.status_code == 302 and response["Location"] != "/oidc/failed/"
    assert client.session[SESSION_KEY] == str(olga.pk)
    client.logout()  # SSO does not lift the password lockout
    assert sign_in(client, "/login/", "olga", "olga-local-password", ADDRESS).status_code == 429


def test_other_accounts_failures_from_the_address_do_not_block_oidc(client, login_driver, oidc):
    lock_password_sign_in(client, "admin")  # someone guesses another account's password from this address

    oidc.set_account("pia")
    response = login_driver.login("pia")

    assert response.status_code == 302 and response["Location"] != "/oidc/failed/"
    assert User.objects.get(username="pia").pk == int(client.session[SESSION_KEY])


def test_oidc_sign_ins_are_not_counted_as_failures(client, login_driver, oidc):
    oidc.set_account("rita")
    for _ in range(LIMIT + 1):
        assert LoginDriver(client, oidc).login("rita").status_code == 302
    for _ in range(LIMIT + 1):  # callbacks with a forged code: the provider refuses, authenticate fails
        driver = LoginDriver(client, oidc)
        back = driver.at_idp(driver.start(), "rita")
        forged = re.sub(r"code=[^&]+", "code=forged", back)
        assert driver.callback(forged)["Location"] == "/oidc/failed/"

    assert not AccessAttempt.objects.exists()
    assert LoginDriver(client, oidc).login("rita")["Location"] != "/oidc/failed/"
