"""Incoming-webhook URLs (Slack's, or anything that takes a JSON POST): the one check and the one way to show
one. A webhook URL is a credential (whoever has it may post to the channel): it is stored encrypted
(`portal.secrets.EncryptedTextField`) and never shown back in full, only its host and last characters."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from portal.errors import DomainError

MAX_LENGTH = 2000
_VALID = URLValidator(schemes=["http", "https"])


def checked(value: object, field: str = "slack_webhook") -> str:
    """The URL stripped, "" to clear; a DomainError naming `field` for anything else than an http(s) URL."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DomainError("must be a webhook URL (text)", field=field, value=value)
    url = value.strip()
    if not url:
        return ""
    if len(url) > MAX_LENGTH:
        raise DomainError(f"is longer than {MAX_LENGTH} characters", field=field, value=redacted(url))
    try:
        _VALID(url)
    except ValidationError:
        raise DomainError(
            "must be an http:// or https:// URL (the incoming-webhook URL Slack gives)", field=field, value=url[:80]
        ) from None
    return url


def redacted(url: str) -> str:
    """`https://hooks.slack.com/…Xy12`: enough to recognise it, not enough to use it; "" when unset."""
    if not url:
        return ""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}/…{url[-4:]}"
