"""Secrets at rest: a text field stored encrypted (Fernet: AES-128-CBC with HMAC-SHA256), read back as text.

Backend tokens and kubeconfigs are credentials to whole clusters; a database dump or backup must not hand
them out. `EncryptedTextField` encrypts on the way to the database and decrypts on the way back, so the
rest of the code (admin, config services, the Kubernetes adapter) sees plain text as before.

Keys: `FIELD_ENCRYPTION_KEYS`, comma-separated Fernet keys (`Fernet.generate_key()`); the first encrypts,
all decrypt, so a key is rotated by putting the new one first and running `manage.py backend reencrypt`.
Without it, a key is derived from `SECRET_KEY`.
A stored value that no configured key opens (the keys changed) is kept as it is, never overwritten by
a save, and the Kubernetes adapter refuses it with a message naming the setting (`is_unreadable`).
Values written before encryption existed (plain text) are read as they are and encrypted at the next save.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models

if TYPE_CHECKING:
    from cryptography.fernet import MultiFernet

PREFIX = "fernet:"


@functools.lru_cache(maxsize=4)
def _cipher(keys: tuple[str, ...], secret_key: str) -> MultiFernet:
    # imported here: every process loads this module with the models, few encrypt or decrypt anything
    from cryptography.fernet import Fernet, MultiFernet

    if not keys:  # derived from SECRET_KEY: stable for a deployment, different between deployments
        keys = (base64.urlsafe_b64encode(hashlib.sha256(f"field-encryption:{secret_key}".encode()).digest()).decode(),)
    try:
        return MultiFernet([Fernet(key.encode()) for key in keys])
    except ValueError:
        raise ImproperlyConfigured(
            "FIELD_ENCRYPTION_KEYS: each key must be a Fernet key (32 url-safe base64-encoded "
            "bytes, e.g. from cryptography.fernet.Fernet.generate_key())"
        ) from None


def cipher() -> MultiFernet:
    keys = tuple(k.strip() for k in getattr(settings, "FIELD_ENCRYPTION_KEYS", ()) if k.strip())
    return _cipher(keys, settings.SECRET_KEY)


def encrypt(text: str) -> str:
    if not text or text.startswith(PREFIX):  # empty, or ciphertext kept as it was read (unreadable)
        return text
    return PREFIX + cipher().encrypt(text.encode()).decode()


def decrypt(stored: str) -> str:
    """Plain text; the stored value unchanged when no configured key opens it (see `is_unreadable`)."""
    if not stored or not stored.startswith(PREFIX):
        return stored  # empty, or written before encryption
    from cryptography.fernet import InvalidToken

    try:
        return cipher().decrypt(stored[len(PREFIX) :].encode()).decode()
    except InvalidToken:
        return stored


def is_unreadable(value: str) -> bool:
    """A value that stayed encrypted: none of FIELD_ENCRYPTION_KEYS (or the SECRET_KEY-derived key) opens it."""
    return bool(value) and value.startswith(PREFIX)


class EncryptedTextField(models.TextField):
    """A TextField stored encrypted. Not for lookups: the stored text differs at every save."""

    def from_db_value(self, value, expression, connection):
        return decrypt(value) if isinstance(value, str) else value

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        return encrypt(value) if isinstance(value, str) else value
