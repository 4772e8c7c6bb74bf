"""Helpers for the sign-in tests: a password hasher that counts its work, and form sign-ins."""

from __future__ import annotations

from django.contrib.auth import SESSION_KEY
from django.contrib.auth.hashers import MD5PasswordHasher

LOGIN_FORMS = ["/login/", "/admin/login/"]  # the self-service sign-in page and the admin's


class CountingHasher(MD5PasswordHasher):
    """Fast, and counts every hash computed (checking a password, or the dummy hash for an unknown user)."""

    algorithm = "counting_md5"
    hashes = 0

    def encode(self, password, salt):
        CountingHasher.hashes += 1
        return super().encode(password, salt)


def use_counting_hasher(settings) -> type[CountingHasher]:
    settings.PASSWORD_HASHERS = ["tests.security.passwords.CountingHasher"]
    CountingHasher.hashes = 0
    return CountingHasher


def sign_in(client, url: str, username: str, password: str, address: str = "10.0.0.1", **headers):
    return client.post(url, {"username": username, "password": password}, REMOTE_ADDR=address, **headers)


def signed_in(client) -> bool:
    return SESSION_KEY in client.session
