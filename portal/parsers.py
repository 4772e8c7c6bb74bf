"""Request body parsers of the REST API (DRF's, guarded): a NUL character anywhere in a body is a 400
naming where it is, because PostgreSQL refuses NUL in text and jsonb and nothing the portal stores may
hold one; JSON nested deeper than the recursion limit is a 400 too, not a crash.

The default parsers for every view (settings.REST_FRAMEWORK); the workflow submit endpoint adds the text
parsers (a spec sent as raw YAML).
"""

from __future__ import annotations

from dataclasses import replace

from django.conf import settings
from rest_framework import exceptions, parsers

from portal.errors import DomainError
from portal.safe_yaml import Limits, SafeYAMLError, config_limits, load_json

NUL = "\x00"


def refuse_nul(data: object, where: str = "") -> None:
    """DomainError (400) naming the first place in a parsed body whose key or text holds a NUL.
    Iterative: a deeply nested document must not exhaust the stack here either."""
    pending: list[tuple[str, object]] = [(where, data)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            if NUL in value:
                raise DomainError("must not contain a NUL character (\\u0000)", field=path or "body")
        elif isinstance(value, dict) or hasattr(value, "lists"):
            # a form's field sent once is named as itself, not as a one-element list
            items = (
                ((k, v[0] if len(v) == 1 else v) for k, v in value.lists())
                if hasattr(value, "lists")
                else value.items()
            )
            for key, inner in items:
                child = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and NUL in key:
                    raise DomainError("a key must not contain a NUL character (\\u0000)", field=child)
                pending.append((child, inner))
        elif isinstance(value, (list, tuple)):
            pending.extend((f"{path}[{index}]", inner) for index, inner in enumerate(value))


def read_text(stream, limit: int | None, what: str, too_large=None) -> tuple[str, int]:
    """(the body as UTF-8 text, its size in bytes); a body over `limit` is refused before reading on, let
    alone parsing (`too_large(limit)` says how, a ParseError by default)."""
    raw = stream.read(limit + 1 if limit is not None else -1) if stream is not None else b""
    if limit is not None and len(raw) > limit:
        raise too_large(limit) if too_large else exceptions.ParseError(f"{what} is larger than {limit} bytes")
    try:
        return raw.decode("utf-8"), len(raw)
    except UnicodeDecodeError:
        raise exceptions.ParseError(f"{what} is not UTF-8 text") from None


class JSONParser(parsers.JSONParser):
    """JSON bodies read by `portal.safe_yaml.load_json` within `limits()` (the request size is Django's
    DATA_UPLOAD_MAX_MEMORY_SIZE): duplicate keys, NaN/Infinity, integers over 4300 digits, nesting beyond
    the limit and NUL characters are a 400 naming the problem, never a 500."""

    def limits(self) -> Limits:
        return config_limits()

    def parse(self, stream, media_type=None, parser_context=None):
        size_limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 2_621_440
        text, size = read_text(stream, size_limit, "the request body")
        try:
            document = load_json(text, replace(self.limits(), max_bytes=size_limit), "request body")
        except SafeYAMLError as error:
            raise exceptions.ParseError(error.reason) if error.syntax else self.refused(error) from None
        refuse_nul(document)
        self.check_size(document, size)
        return document

    def refused(self, error: SafeYAMLError) -> Exception:
        """Hook: what a well-formed body beyond a limit raises (a duplicate key, NaN, too deep)."""
        return exceptions.ParseError(error.reason)

    def check_size(self, document: object, size: int) -> None:
        """Hook: limits that depend on what the body holds."""


class FormParser(parsers.FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        refuse_nul(data)
        return data


class MultiPartParser(parsers.MultiPartParser):
    """Form fields are checked; uploaded files are the reader's business (a spec upload is decoded and
    parsed as YAML, which refuses NUL itself)."""

    def parse(self, stream, media_type=None, parser_context=None):
        result = super().parse(stream, media_type, parser_context)
        refuse_nul(result.data)
        return result


class TextParser(parsers.BaseParser):
    """A body that is UTF-8 text (a spec sent as raw YAML or JSON); request.data is then a str."""

    media_type = "text/*"
    what = "the body"  # in messages

    def size_limit(self) -> int | None:
        return settings.DATA_UPLOAD_MAX_MEMORY_SIZE

    def too_large(self, limit: int) -> Exception:
        return exceptions.ParseError(f"{self.what} is larger than {limit} bytes")

    def parse(self, stream, media_type=None, parser_context=None):
        text, _ = read_text(stream, self.size_limit(), self.what, self.too_large)
        refuse_nul(text)
        return text
