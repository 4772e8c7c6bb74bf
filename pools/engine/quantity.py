"""Kubernetes resource quantities, parsed and printed exactly as apimachinery does (quantity.go, suffix.go).

Grammar: optional sign, digits with an optional '.', then a suffix that is one of
  binary   Ki Mi Gi Ti Pi Ei                      (2^10 .. 2^60, format BinarySI)
  decimal  n u m "" k M G T P E                   (10^-9 .. 10^18, format DecimalSI; kilo is lowercase `k`)
  exponent e|E followed by a signed integer       (format DecimalExponent; `E` alone is exa, `E3` is 10^3)
Values are exact decimals rounded UP (away from zero) to 1e-9. BinarySI values saturate at 2^63-1 and
fractional binary values in (0, 1) become DecimalSI, as upstream does.

Deliberate differences from Go's lenient parser: a number needs at least one digit (Go reads "Gi", "-" and
"." as zero), exponents are limited to int32 (Go wraps them silently), and decimal magnitudes of 1e30 or
more are rejected (no resource is that large; it keeps ints small). `str()` is always the canonical form;
Go may echo an already-canonical-looking input such as "+1k" verbatim.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, ROUND_UP, Context, Decimal

from pools.engine.errors import EngineError

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "Quantity",
    "QuantityError",
    "format_quantity",
    "human",
    "human_pair",
    "human_bytes",
    "human_cores",
    "is_byte_resource",
    "is_quantity",
    "parse_quantity",
]

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"
FORMATS = (BINARY_SI, DECIMAL_SI, DECIMAL_EXPONENT)

BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = {exp: suffix for suffix, exp in DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = {exp // 10: suffix for suffix, exp in BINARY_SUFFIXES.items()}

# Mirrors parseQuantityString: sign, digits[.digits], suffix letters, optional signed exponent digits.
_GRAMMAR = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*)([+-]?[0-9]*)")

_NANO = Decimal("1e-9")
_MAX_BINARY = Decimal(2**63 - 1)
_MAX_DECIMAL_ADJUSTED = 29  # values must stay below 1e30
_INT32 = 2**31
# Enough precision that every operation on values below 1e30 with nano resolution is exact.
_EXACT = Context(prec=200, Emax=10**6, Emin=-(10**6))


class QuantityError(EngineError):
    """A string that is not a Kubernetes quantity, or a quantity outside the supported range."""


def _unit_multiplier(unit: str) -> Decimal:
    if unit in BINARY_SUFFIXES:
        return Decimal(2 ** BINARY_SUFFIXES[unit])
    if unit in DECIMAL_SUFFIXES:
        return Decimal(1).scaleb(DECIMAL_SUFFIXES[unit])
    raise QuantityError(f"unknown unit {unit!r}", value=unit)


def _tidy(value: Decimal) -> Decimal:
    """Drop trailing zeros without switching to exponent notation (1000 stays 1000, 1.500 becomes 1.5)."""
    if value == 0:
        return Decimal(0)
    normal = value.normalize(_EXACT)
    if normal.as_tuple().exponent > 0:
        normal = normal.quantize(Decimal(1), context=_EXACT)
    return normal


def _round_up_to_nano(value: Decimal) -> Decimal:
    if value == 0 or value.as_tuple().exponent >= -9:
        return value
    if value.adjusted() < -9:  # smaller than one nano: "if you ask for something you get something"
        return _NANO.copy_sign(value)
    return value.quantize(_NANO, rounding=ROUND_UP, context=_EXACT)


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Quantity:
    """An exact amount in base units (cores, bytes, devices) plus the format family used to print it."""

    value: Decimal
    format: str = DECIMAL_SI

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value == other.value

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __str__(self) -> str:
        return _canonical(self.value, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def milli_value(self) -> int:
        """ceil(value * 1000): what the scheduler compares for cpu."""
        return int(self.value.scaleb(3, context=_EXACT).to_integral_value(rounding=ROUND_CEILING))

    def int_value(self) -> int:
        """ceil(value): what the scheduler compares for memory, storage and extended resources."""
        return int(self.value.to_integral_value(rounding=ROUND_CEILING))

    def in_unit(self, unit: str) -> Decimal:
        """The exact value expressed in `unit` (n u m "" k M G T P E Ki Mi Gi Ti Pi Ei)."""
        return _tidy(_EXACT.divide(self.value, _unit_multiplier(unit)))


def _text_of(text: object) -> str:
    if isinstance(text, bool):
        raise QuantityError("a boolean is not a quantity", value=text)
    if isinstance(text, str):
        return text
    if isinstance(text, int):
        return str(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError("quantity must be a finite number", value=text)
        return repr(text)
    if isinstance(text, Decimal):
        if not text.is_finite():
            raise QuantityError("quantity must be a finite number", value=str(text))
        return str(text)
    raise QuantityError(f"a {type(text).__name__} is not a quantity", value=repr(text))


def _interpret_suffix(suffix: str, original: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a suffix: decimal, then binary, then an e/E exponent (as suffix.go)."""
    if suffix in DECIMAL_SUFFIXES:
        return 10, DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in BINARY_SUFFIXES:
        return 2, BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        try:
            exponent = int(suffix[1:], 10)
        except ValueError:
            exponent = None
        if exponent is not None:
            if not -_INT32 <= exponent < _INT32:
                raise QuantityError("quantity exponent out of range", value=original)
            return 10, exponent, DECIMAL_EXPONENT
    hint = " (kilo is lowercase 'k'; binary kibi is 'Ki')" if suffix.startswith("K") else ""
    raise QuantityError(f"unknown quantity suffix {suffix!r}{hint}", value=original)


@functools.lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    match = _GRAMMAR.fullmatch(text)
    if not text or match is None:
        raise QuantityError(
            "not a quantity: expected a number with an optional suffix such as 500m, 2Gi or 1e3", value=text
        )
    sign, whole, fraction, letters, exponent_tail = match.groups()
    if not whole and not fraction:
        raise QuantityError("quantity has no digits", value=text)
    base, exponent, fmt = _interpret_suffix(letters + exponent_tail, text)
    number = Decimal(f"{sign}{whole or '0'}.{fraction or ''}")
    exact = Context(prec=len(text) + 100, Emax=10**6, Emin=-(10**6))  # wide enough for any digits given
    if base == 2:
        value = exact.multiply(number, Decimal(2**exponent))
    elif number == 0:
        value = Decimal(0)
    elif number.adjusted() + exponent > _MAX_DECIMAL_ADJUSTED:
        raise QuantityError("quantity too large (must be below 1e30)", value=text)
    elif number.adjusted() + exponent < -9:
        value = _NANO.copy_sign(number)  # below one nano: rounded up to the smallest amount
    else:
        value = exact.scaleb(number, exponent)
    value = _round_up_to_nano(value)
    if fmt == BINARY_SI:
        if abs(value) > _MAX_BINARY:
            value = _MAX_BINARY.copy_sign(value)
        if 0 < abs(value) < 1:
            fmt = DECIMAL_SI
    return Quantity(_tidy(value), fmt)


def parse_quantity(text: str | int | float | Decimal) -> Quantity:
    """Parse a Kubernetes quantity; ints are exact, floats go through repr(). Raises QuantityError."""
    if isinstance(text, Quantity):
        return text
    return _parse_text(_text_of(text))


def is_quantity(text: object) -> bool:
    try:
        parse_quantity(text)  # type: ignore[arg-type]
    except QuantityError:
        return False
    return True


def format_quantity(value: Decimal | int, fmt: str = DECIMAL_SI) -> str:
    """Canonical Kubernetes text for `value` (rounded up to nano) in the given format family."""
    if fmt not in FORMATS:
        raise QuantityError(f"unknown quantity format {fmt!r}", value=fmt)
    return _canonical(_round_up_to_nano(Decimal(value)), fmt)


def _canonical(value: Decimal, fmt: str) -> str:
    """CanonicalizeBytes: the largest exact suffix in the value's format family."""
    if value == 0:
        return "0"
    if fmt == BINARY_SI and abs(value) >= 1024 and value == value.to_integral_value():
        return _canonical_binary(int(value))
    return _canonical_decimal(value, DECIMAL_EXPONENT if fmt == DECIMAL_EXPONENT else DECIMAL_SI)


def _canonical_binary(amount: int) -> str:
    power = 0
    while power < 6 and amount % 1024 == 0:
        amount //= 1024
        power += 1
    return f"{amount}{_BINARY_BY_POWER.get(power, '')}"


def _canonical_decimal(value: Decimal, fmt: str) -> str:
    sign, digits, exponent = value.normalize(_EXACT).as_tuple()
    mantissa = int("".join(map(str, digits)))
    shift = exponent % 3  # floor the exponent to a multiple of three by growing the mantissa
    mantissa *= 10**shift
    exponent -= shift
    if fmt == DECIMAL_SI and exponent > 18:  # no suffix above exa: keep "E" and a bigger mantissa
        mantissa *= 10 ** (exponent - 18)
        exponent = 18
    exponent_suffix = f"e{exponent}" if exponent else ""
    suffix = exponent_suffix if fmt == DECIMAL_EXPONENT else _DECIMAL_BY_EXPONENT[exponent]
    return f"{'-' if sign else ''}{mantissa}{suffix}"


# --- Quantities for people -------------------------------------------------------------------------------
# Every page, error and CLI table prints a resource amount through `human`: bytes in the largest binary unit
# they reach with at most one decimal ("449Gi", "1.5Ti"), cpu in cores with at most one decimal ("66.5"),
# counts as they are. The result is itself a Kubernetes quantity, so a reader can paste it back.

_HUMAN_BYTE_UNITS = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_TENTH = Decimal("0.1")


def is_byte_resource(name: str) -> bool:
    """Resources counted in bytes: memory and storage of every kind, hugepages."""
    return name in ("memory", "ephemeral-storage", "storage") or name.startswith(("hugepages-", "requests.storage"))


def _one_decimal(value: Decimal) -> str:
    rounded = value.quantize(_TENTH, rounding=ROUND_HALF_UP, context=_EXACT)
    text = format(rounded, "f")
    return text[:-2] if text.endswith(".0") else text


def human_bytes(amount: int | Decimal, decimals: int = 1) -> str:
    """A byte count in the largest binary unit it reaches, at most `decimals` decimals (482098327716 ->
    "449Gi"); below 1Ki the plain number of bytes. A value that rounds up to 1024 of a unit moves up a unit."""
    value = Decimal(amount)
    sign, value = ("-", -value) if value < 0 else ("", value)
    if value < 1024:
        return f"{sign}{_places(value, decimals)}"
    power = 1
    while power < len(_HUMAN_BYTE_UNITS) and value >= Decimal(1024) ** (power + 1):
        power += 1
    scaled = _EXACT.divide(value, Decimal(1024) ** power)
    shown = _places(scaled, decimals)
    if Decimal(shown) >= 1024 and power < len(_HUMAN_BYTE_UNITS):
        power, shown = power + 1, _places(_EXACT.divide(value, Decimal(1024) ** (power + 1)), decimals)
    return f"{sign}{shown}{_HUMAN_BYTE_UNITS[power - 1]}"


def human_cores(millicores: int | Decimal, decimals: int = 1) -> str:
    """Millicores as cores with at most `decimals` decimals (66500 -> "66.5", 143000 -> "143"). An amount
    that would round to 0 cores keeps its millicores ("30m"), so a small request never reads as nothing."""
    value = Decimal(millicores)
    shown = _places(value.scaleb(-3), decimals)
    if value and Decimal(shown) == 0:
        return f"{value.to_integral_value(rounding=ROUND_CEILING)}m"
    return shown


def _places(value: Decimal, decimals: int) -> str:
    if decimals == 1:
        return _one_decimal(value)
    rounded = value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP, context=_EXACT)
    text = format(rounded, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


@functools.lru_cache(maxsize=8192)  # pages print the same few amounts thousands of times (a fleet's quota panels)
def human(resource: str, amount: int | Decimal | None, decimals: int = 1) -> str:
    """The one human form of an amount in scheduler units (cpu in millicores, bytes, device counts), for
    pages, errors and CLI tables alike; None (no limit, no figure) is "-"."""
    if amount is None:
        return "-"
    if resource == "cpu":
        return human_cores(amount, decimals)
    if is_byte_resource(resource):
        return human_bytes(amount, decimals)
    return _places(Decimal(amount), decimals)


def human_pair(resource: str, first: int, second: int) -> tuple[str, str]:
    """Both amounts in human form, with as many more decimals as it takes for two different amounts to read
    differently (an error "requested 449Gi, free 449Gi" would contradict itself)."""
    for decimals in (1, 2, 3):
        a, b = human(resource, first, decimals), human(resource, second, decimals)
        if a != b or first == second:
            return a, b
    return str(first), str(second)
