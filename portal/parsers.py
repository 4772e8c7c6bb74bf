"""Request body parsers of the REST API (DRF's, guarded): a NUL character anywhere in a body is a 400
naming where it is, because PostgreSQL refuses NUL in text and jsonb and nothing the portal stores may
hold one; JSON nested deeper than the recursion limit is a 400 too, not a crash.

The default parsers for every view (settings.REST_FRAMEWORK); the workflow submit endpoint adds the text
parsers (a spec sent as raw YAML).
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import exceptions, parsers

from portal.errors import DomainError

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
            items = ((k, v[0] if len(v) == 1 else v) for k, v in value.lists()) if hasattr(value, "lists") \
                else value.items()
            for key, inner in items:
                child = f"{path}.{key}" if path else str(key)
                if isinstance(key, str) and NUL in key:
                    raise DomainError("a key must not contain a NUL character (\\u0000)", field=child)
                pending.append((child, inner))
        elif isinstance(value, (list, tuple)):
            pending.extend((f"{path}[{index}]", inner) for index, inner in enumerate(value))


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("the JSON body is nested too deeply") from None
        refuse_nul(data)
        return data


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

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1 if limit is not None else -1) if stream is not None else b""
        if limit is not None and len(raw) > limit:
            raise exceptions.ParseError(f"{self.what} is larger than {limit} bytes")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise exceptions.ParseError(f"{self.what} is not UTF-8 text") from None
        refuse_nul(text)
        return text
