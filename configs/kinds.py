"""Value kinds of config fields: how a value is read from OSMO JSON (checked, with field/value/reason
errors), shown again, found on a model object or a parsed Doc, and taken from an admin form."""

from __future__ import annotations

import hashlib
import hmac
import re

from django.core.validators import MaxValueValidator, MinValueValidator

from configs.errors import ConfigError
from configs.validators import (
    check_name,
    expect_bool,
    expect_list,
    expect_mapping,
    expect_str,
    normalize_exit_actions,
    parse_timeout,
)

VARIABLE_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SECRET_MARKER_RE = re.compile(r"^<set(?: [0-9a-f]{8})?>$")
KEEP_SECRET = type("KeepSecret", (), {"__repr__": lambda self: "KEEP_SECRET"})()


class Kind:
    nullable = False  # null reads as the field's default
    on_row = True  # stored in a column of the object's own row
    on_form = False  # on the admin form although not a column (a foreign key chosen by name)

    def parse(self, value: object, where: str) -> object:
        return value

    def parse_noting(self, value: object, where: str, warnings: list[str]) -> object:
        """`parse`, for kinds that also have something to say about an accepted value (`warnings`)."""
        return self.parse(value, where)

    def show(self, value: object) -> object:
        return value

    def read(self, source, attr: str) -> object:
        return getattr(source, attr)

    def from_form(self, value: object) -> object:
        return value

    def form_messages(self, label: str) -> dict[str, str]:
        """The admin form field's error messages in the form's words (naming the field and what it allows),
        keyed like Django's (`invalid`, `invalid_choice`, …); configs.admin.FormWordsMixin applies them."""
        return {}

    def form_validators(self, label: str) -> list:
        return []


class Text(Kind):
    def __init__(
        self,
        *,
        strip: bool = False,
        pattern: str = "",
        message: str = "",
        max_length: int = 0,
        shown_empty_as_null: bool = False,
    ) -> None:
        self.strip, self.pattern, self.message = strip, re.compile(pattern) if pattern else None, message
        self.max_length, self.shown_empty_as_null = max_length, shown_empty_as_null

    def parse(self, value, where):
        text = expect_str(value, where)
        text = text.strip() if self.strip else text
        if (self.pattern and not self.pattern.fullmatch(text)) or (self.max_length and len(text) > self.max_length):
            raise ConfigError(self.message, field=where, value=text)
        return text

    def show(self, value):
        return (value or None) if self.shown_empty_as_null else value


class CollectionKind(Kind):
    """A JSON list or object (`empty`: list or dict); null reads as the default, a snapshot gets a copy."""

    nullable = True
    empty: type = list
    example = '["a", "b"]'

    def form_messages(self, label):
        shape = "list" if self.empty is list else "object"
        return {"invalid": f"{label} must be a JSON {shape}, e.g. {self.example}"}

    def show(self, value):
        return self.empty(value)


class ListKind(CollectionKind):
    empty = list


class MappingKind(CollectionKind):
    empty = dict
    example = '{"KEY": "value"}'


class Bool(Kind):
    def parse(self, value, where):
        return expect_bool(value, where)


# The most any Int field takes unless it says less: an IntegerField column's (PostgreSQL `integer`), so no
# value reaches the database to fail there without a field (docs/limits.md).
INT_MAX = 2**31 - 1


class Int(Kind):
    """A whole number from `minimum` to `maximum` (INT_MAX unless the field is bounded tighter; docs/limits.md
    lists every bound); `lowest` says what the minimum means (Int(-1, "none"): −1 for none). A bounded quantity
    says its whole range in one sentence: `unit` (GiB, seconds), `why` (where the bounds come from) and `null`
    (what null means, for a field that may be null)."""

    def __init__(
        self, minimum: int, lowest: str = "", *, maximum: int = INT_MAX, unit: str = "", why: str = "", null: str = ""
    ) -> None:
        self.minimum, self.lowest, self.maximum = minimum, lowest, maximum
        self.unit, self.why, self.null = unit, why, null
        if null:
            self.nullable = True

    def _ranged(self) -> bool:
        return bool(self.unit or self.null)

    def _range(self, empty: str) -> str:
        null = f"{empty} ({self.null}) or " if self.null else ""
        unit = f" of {self.unit}" if self.unit else ""
        return f"must be {null}a whole number{unit} from {self.minimum} to {self.maximum}"

    def form_messages(self, label):
        if self._ranged():
            text = f"{label} {self._range('empty')}"
            return {"invalid": text, "min_value": text, "max_value": text}
        lowest = str(self.minimum).replace("-", "\u2212")  # a minus sign, not a hyphen
        allowed = f"{lowest} for {self.lowest}" if self.lowest else f"{lowest} or more"
        text = f"{label} must be a whole number, {allowed}"
        return {
            "invalid": text,
            "min_value": text,
            "max_value": f"{label} must be a whole number, at most {self.maximum}",
        }

    def form_validators(self, label):
        messages = self.form_messages(label)
        return [
            MinValueValidator(self.minimum, message=messages["min_value"]),
            MaxValueValidator(self.maximum, message=messages["max_value"]),
        ]

    def parse(self, value, where):
        if value is None and self.null:
            return None
        whole = not isinstance(value, bool) and isinstance(value, int)
        if self._ranged():
            if not whole or not self.minimum <= value <= self.maximum:
                why = f" ({self.why})" if self.why else ""
                raise ConfigError(f"{self._range('null')}{why}", field=where, value=value)
            return value
        if not whole or value < self.minimum:
            raise ConfigError(f"must be an integer ≥ {self.minimum}", field=where, value=value)
        if value > self.maximum:
            raise ConfigError(f"must be an integer from {self.minimum} to {self.maximum}", field=where, value=value)
        return value


class Choice(Kind):
    def __init__(self, values, reason: str) -> None:
        self.values, self.reason = tuple(values), reason

    def parse(self, value, where):
        if value not in self.values:
            raise ConfigError(self.reason, field=where, value=value)
        return value

    def form_messages(self, label):
        return {"invalid_choice": f"{label} must be one of {', '.join(self.values)}, not “%(value)s”"}


class Timeout(Kind):
    """A duration as OSMO writes it ('2h', 'PT2H'); stored as written, checked here."""

    def parse(self, value, where):
        parse_timeout(expect_str(value, where), where)
        return value


class ExitActions(MappingKind):
    def parse(self, value, where):
        return normalize_exit_actions(value, where)


class Variables(MappingKind):
    """Default variables: `{NAME: value}`, names like identifiers, values scalars or lists."""

    def parse(self, value, where):
        variables = expect_mapping(value, where)
        for key, item in variables.items():
            if not VARIABLE_NAME_RE.match(str(key)):
                raise ConfigError(
                    "variable names are letters, digits and '_', not starting with a digit",
                    field=f"{where}.{key}",
                    value=key,
                )
            if item is not None and not isinstance(item, (str, int, float, bool, list)):
                raise ConfigError(
                    "a variable value is a string, number, boolean or list", field=f"{where}.{key}", value=item
                )
        return variables


class Names(ListKind):
    """An ordered list of config object names, each at most once."""

    def parse(self, value, where):
        names = expect_list(value, where)
        for index, item in enumerate(names):
            check_name(item, f"{where}[{index}]")
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError("lists the same name twice", field=where, value=duplicates[0])
        return names


class OrderedRefs(Names):
    """Names of other config objects, kept in order through a relation of (position, target) rows.
    `config_type` and `label` name the referred type in errors ("unknown pod template …")."""

    on_row = False

    def __init__(self, relation: str, target: str, config_type: str, label: str) -> None:
        self.relation, self.target, self.config_type, self.label = relation, target, config_type, label

    def read(self, source, attr):
        if not hasattr(source, self.relation):  # a Doc: the names themselves
            return getattr(source, attr)
        rows = sorted(getattr(source, self.relation).all(), key=lambda ref: (ref.position, ref.id))
        return [getattr(ref, self.target).name for ref in rows]


class Reference(Kind):
    """Another config object, by name (a foreign key on the model)."""

    on_row, on_form = False, True

    def parse(self, value, where):
        return expect_str(value, where)

    def read(self, source, attr):
        value = getattr(source, attr)
        return value if value is None or isinstance(value, str) else value.name

    def from_form(self, value):
        return getattr(value, "name", value)


class Mounts(ListKind):
    def parse(self, value, where):
        mounts = expect_list(value, where)
        for index, mount in enumerate(mounts):
            if not isinstance(mount, str) or not mount.startswith("/"):
                raise ConfigError("must be an absolute host path such as /data", field=f"{where}[{index}]", value=mount)
        return mounts


class Records(ListKind):
    """A list of mappings with exactly these keys, each a non-empty string."""

    def __init__(self, *keys: str) -> None:
        self.keys = keys

    def parse(self, value, where):
        records = expect_list(value, where)
        for index, item in enumerate(records):
            at = f"{where}[{index}]"
            item = expect_mapping(item, at)
            reject_unknown(item, set(self.keys), at)
            for part in self.keys:
                if not isinstance(item.get(part), str) or not item[part]:
                    raise ConfigError("is required (a non-empty string)", field=f"{at}.{part}", value=item.get(part))
        return records


class Secret(Text):
    """Never shown: a `<set xxxxxxxx>` marker (a keyed hash, so a changed secret is a changed snapshot);
    the marker read back means "keep the stored value" (KEEP_SECRET, resolved by the type's handler)."""

    def __init__(self) -> None:
        super().__init__(strip=True)

    def parse(self, value, where):
        text = super().parse(value, where)
        return KEEP_SECRET if SECRET_MARKER_RE.match(text) else text

    def show(self, value):
        return secret_marker(value)


def secret_marker(value: str) -> str:
    from django.conf import settings

    if not value:
        return ""
    digest = hmac.new(settings.SECRET_KEY.encode(), value.encode(), hashlib.sha256).hexdigest()
    return f"<set {digest[:8]}>"


class Unsupported(Kind):
    """A key OSMO has that the portal does not support yet: only its empty value is accepted."""

    nullable, on_row = True, False

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def parse(self, value, where):
        if value:
            raise ConfigError(self.reason, field=where, value=value)
        return value


class Group(Kind):
    """A nested mapping whose fields are columns of the row (`resources.gpu.guarantee` → gpu_guarantee).
    A nullable group is null when all its columns are."""

    on_row = False

    def __init__(self, fields, *, nullable: bool = False, checks=()) -> None:
        self.fields, self.nullable, self.checks = tuple(fields), nullable, tuple(checks)

    def parse(self, value, where):
        if value in (None, {}):
            return None
        mapping = expect_mapping(value, where)
        reject_unknown(mapping, {sub.name for sub in self.fields}, where)
        parsed = {sub.name: sub.read_body(mapping, where) for sub in self.fields}
        for check in self.checks:
            check(parsed, where)
        return parsed

    def values_of(self, parsed: dict | None) -> dict:
        values = {}
        for sub in self.fields:
            inner = parsed.get(sub.name) if parsed else None
            values.update(sub.kind.values_of(inner) if isinstance(sub.kind, Group) else {sub.target: inner})
        return values

    def show_from(self, source):
        if self.nullable and all(getattr(source, attr) is None for attr in self.values_of(None)):
            return None
        return {
            sub.name: sub.kind.show_from(source)
            if isinstance(sub.kind, Group)
            else sub.kind.show(_or(getattr(source, sub.target), sub.default))
            for sub in self.fields
        }

    def from_form_values(self, cleaned: dict):
        return self.show_from(_Values(cleaned))


class Children(Kind):
    """Named child objects (a pool's platforms): `{name: body}` in OSMO JSON, a list of Docs once parsed,
    a related manager on the model. `schema` describes one child."""

    nullable, on_row = True, False

    def __init__(self, schema) -> None:
        self.schema = schema

    def parse(self, value, where):
        children = expect_mapping(value, where)
        return [self.schema.parse(name, body, f"{where}.{name}") for name, body in children.items()]

    def read(self, source, attr):
        value = getattr(source, attr)
        return list(value.all()) if hasattr(value, "all") else value

    def show(self, value):
        return {child.name: self.schema.snapshot(child) for child in sorted(value, key=lambda child: child.name)}


def reject_unknown(body: dict, allowed: set[str], where: str) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        prefix = f"{where}." if where else ""
        raise ConfigError(
            f"unknown field; allowed fields are {', '.join(sorted(allowed))}",
            field=f"{prefix}{unknown[0]}",
            value=unknown[0],
        )


class _Values:
    def __init__(self, values: dict) -> None:
        self.__dict__.update(values)

    def __getattr__(self, name):
        return None


def _or(value, default):
    return default if value is None else value
