"""Quantity parsing and printing follow apimachinery's quantity.go."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pools.engine.errors import EngineError
from pools.engine.quantity import (
    Quantity,
    QuantityError,
    format_quantity,
    is_quantity,
    parse_quantity,
)

# (text, exact value, format, canonical print)
VALID = [
    # OSMO's conformance cases (test_resource_spec.py), with Kubernetes meaning for every suffix
    ("10Gi", Decimal(10 * 2**30), "BinarySI", "10Gi"),
    ("10Mi", Decimal(10 * 2**20), "BinarySI", "10Mi"),
    ("10.5Gi", Decimal(21 * 2**29), "BinarySI", "10752Mi"),
    # G is 10^9, not OSMO's 2^30
    ("1G", Decimal(10**9), "DecimalSI", "1G"),
    ("1000M", Decimal(10**9), "DecimalSI", "1G"),
    ("1024Mi", Decimal(2**30), "BinarySI", "1Gi"),
    ("1500m", Decimal("1.5"), "DecimalSI", "1500m"),
    ("0.5", Decimal("0.5"), "DecimalSI", "500m"),
    (".5", Decimal("0.5"), "DecimalSI", "500m"),
    ("1.", Decimal(1), "DecimalSI", "1"),
    ("0", Decimal(0), "DecimalSI", "0"),
    ("0Ki", Decimal(0), "BinarySI", "0"),
    ("-0", Decimal(0), "DecimalSI", "0"),
    ("+1k", Decimal(1000), "DecimalSI", "1k"),
    ("1.0k", Decimal(1000), "DecimalSI", "1k"),
    ("001k", Decimal(1000), "DecimalSI", "1k"),
    ("-1.5", Decimal("-1.5"), "DecimalSI", "-1500m"),
    ("1n", Decimal("1e-9"), "DecimalSI", "1n"),
    ("1u", Decimal("1e-6"), "DecimalSI", "1u"),
    ("1000u", Decimal("1e-3"), "DecimalSI", "1m"),
    ("1T", Decimal(10**12), "DecimalSI", "1T"),
    ("1P", Decimal(10**15), "DecimalSI", "1P"),
    ("1E", Decimal(10**18), "DecimalSI", "1E"),  # E alone is exa
    ("1000E", Decimal(10**21), "DecimalSI", "1000E"),
    ("1E3", Decimal(1000), "DecimalExponent", "1e3"),  # E followed by digits is an exponent
    ("1e3", Decimal(1000), "DecimalExponent", "1e3"),
    ("1e+3", Decimal(1000), "DecimalExponent", "1e3"),
    ("1e-3", Decimal("0.001"), "DecimalExponent", "1e-3"),
    ("1.5e3", Decimal(1500), "DecimalExponent", "1500"),
    ("12e0", Decimal(12), "DecimalExponent", "12"),
    ("100Ki", Decimal(102400), "BinarySI", "100Ki"),
    ("1Ei", Decimal(2**60), "BinarySI", "1Ei"),
    ("1024Pi", Decimal(2**60), "BinarySI", "1Ei"),
    ("0.5Ki", Decimal(512), "BinarySI", "512"),  # binary below 1024 prints as decimal
    (".001Ki", Decimal("1.024"), "BinarySI", "1024m"),  # non-integral binary prints as decimal
    ("0.0001Ki", Decimal("0.1024"), "DecimalSI", "102400u"),  # binary in (0, 1) becomes DecimalSI
    ("9Ei", Decimal(2**63 - 1), "BinarySI", "9223372036854775807"),  # saturates at int64 max
    ("-9Ei", Decimal(-(2**63 - 1)), "BinarySI", "-9223372036854775807"),
    ("1536Ki", Decimal(1536 * 1024), "BinarySI", "1536Ki"),
]


@pytest.mark.parametrize(("text", "value", "fmt", "printed"), VALID)
def test_valid_quantities_parse_exactly_and_print_canonically(text, value, fmt, printed):
    quantity = parse_quantity(text)
    assert quantity.value == value
    assert quantity.format == fmt
    assert str(quantity) == printed
    assert parse_quantity(printed) == quantity
    assert is_quantity(text)


INVALID = [
    "10A",  # OSMO conformance
    "Gi",  # suffix without a number (Go reads it as 0; we refuse)
    "1K",  # kilo is lowercase
    "1k ",
    " 1k",
    "",
    "-",
    ".",
    "1e",  # lone lowercase e is not a suffix
    "1ee3",
    "1.5.5",
    "1Ki3",
    "0.1mi",
    "1i",
    "-3.01e-",
    "aoeu",
    "1gi",  # case-sensitive
    "1 Gi",
    "1e3.5",
    "1e99999999999",  # exponent beyond int32
    "1e30",  # beyond the supported decimal range
]


@pytest.mark.parametrize("text", INVALID)
def test_invalid_quantities_raise_an_error_naming_the_value(text):
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)
    assert caught.value.value == text
    assert caught.value.field == ""
    assert isinstance(caught.value, EngineError)
    assert not is_quantity(text)


def test_kilo_error_explains_the_lowercase_rule():
    with pytest.raises(QuantityError, match="lowercase 'k'"):
        parse_quantity("1K")


@pytest.mark.parametrize(
    ("given", "printed"),
    [
        (1, "1"),
        (0, "0"),
        (2048, "2048"),
        (0.1, "100m"),
        (1.5, "1500m"),
        (1e20, "100e18"),
        (-2, "-2"),
        (Decimal("0.25"), "250m"),
        (Decimal("1E+3"), "1e3"),
    ],
)
def test_numbers_are_accepted(given, printed):
    assert str(parse_quantity(given)) == printed


@pytest.mark.parametrize("bad", [True, False, float("nan"), float("inf"), Decimal("NaN"), None, [1], {"a": 1}])
def test_non_quantity_types_are_rejected(bad):
    with pytest.raises(QuantityError):
        parse_quantity(bad)
    assert not is_quantity(bad)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0.1n", Decimal("1e-9")),
        ("1e-20", Decimal("1e-9")),
        ("-1e-20", Decimal("-1e-9")),
        ("1.0000000001", Decimal("1.000000001")),
        ("-1.0000000001", Decimal("-1.000000001")),
        ("1.0000000001Ki", Decimal("1024.000000103")),
        ("0.000000000000000000000000001m", Decimal("1e-9")),
    ],
)
def test_values_round_up_away_from_zero_to_nano(text, value):
    assert parse_quantity(text).value == value


@pytest.mark.parametrize(
    ("text", "milli", "whole"),
    [
        ("1", 1000, 1),
        ("0.1m", 1, 1),
        ("100m", 100, 1),
        ("1500m", 1500, 2),
        ("1.0001", 1001, 2),
        ("1Gi", 2**30 * 1000, 2**30),
        ("1n", 1, 1),
        ("0", 0, 0),
        ("-1.5", -1500, -1),
        ("2.5m", 3, 1),
    ],
)
def test_milli_and_int_values_are_ceilings(text, milli, whole):
    quantity = parse_quantity(text)
    assert quantity.milli_value() == milli
    assert quantity.int_value() == whole


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [
        ("1Gi", "Mi", Decimal(1024)),
        ("1Gi", "", Decimal(2**30)),
        ("1500m", "", Decimal("1.5")),
        ("1500m", "m", Decimal(1500)),
        ("1", "Ki", Decimal("0.0009765625")),
        ("2G", "M", Decimal(2000)),
        ("1Ei", "Pi", Decimal(1024)),
        ("1n", "n", Decimal(1)),
        ("3k", "k", Decimal(3)),
    ],
)
def test_in_unit_is_exact(text, unit, expected):
    assert parse_quantity(text).in_unit(unit) == expected


def test_in_unit_rejects_unknown_units():
    with pytest.raises(QuantityError):
        parse_quantity("1").in_unit("K")


def test_equality_ordering_and_hash_go_by_value():
    assert parse_quantity("1Gi") == parse_quantity("1024Mi") == parse_quantity("1073741824")
    assert parse_quantity("1G") < parse_quantity("1Gi")
    assert parse_quantity("1500m") > parse_quantity("1")
    assert parse_quantity("1k") >= parse_quantity("1000")
    assert len({parse_quantity("1k"), parse_quantity("1000"), parse_quantity("1e3")}) == 1
    assert sorted([parse_quantity("2"), parse_quantity("1500m"), parse_quantity("1Ki")]) == [
        parse_quantity("1500m"),
        parse_quantity("2"),
        parse_quantity("1Ki"),
    ]
    assert parse_quantity("1") != "1"


def test_quantity_is_immutable():
    quantity = parse_quantity("1")
    with pytest.raises(AttributeError):
        quantity.value = Decimal(2)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("value", "fmt", "printed"),
    [
        (Decimal(2**30), "BinarySI", "1Gi"),
        (Decimal(10**9), "DecimalSI", "1G"),
        (Decimal(1000), "DecimalExponent", "1e3"),
        (Decimal("0.5"), "BinarySI", "500m"),
        (Decimal(100), "BinarySI", "100"),
        (Decimal("1e-12"), "DecimalSI", "1n"),
        (Decimal(0), "BinarySI", "0"),
        (1536, "DecimalSI", "1536"),
    ],
)
def test_format_quantity(value, fmt, printed):
    assert format_quantity(value, fmt) == printed


def test_format_quantity_rejects_unknown_format():
    with pytest.raises(QuantityError):
        format_quantity(Decimal(1), "Binary")


INT64_MAX = Decimal(2**63 - 1)
_SUFFIXES = [
    "",
    "n",
    "u",
    "m",
    "k",
    "M",
    "G",
    "T",
    "P",
    "E",
    "Ki",
    "Mi",
    "Gi",
    "Ti",
    "Pi",
    "Ei",
    "e3",
    "e-2",
    "E6",
]


@given(
    sign=st.sampled_from(["", "-", "+"]),
    whole=st.integers(min_value=0, max_value=10**9),
    fraction=st.one_of(st.none(), st.integers(min_value=0, max_value=10**12).map(str)),
    suffix=st.sampled_from(_SUFFIXES),
)
def test_round_trip_through_canonical_text(sign, whole, fraction, suffix):
    text = f"{sign}{whole}" + (f".{fraction}" if fraction is not None else "") + suffix
    quantity = parse_quantity(text)
    again = parse_quantity(str(quantity))
    assert again == quantity
    assert str(again) == str(quantity)
    # nano-exact and never smaller in magnitude than what was asked for
    assert quantity.value.as_tuple().exponent >= -9
    exact = Decimal(f"{sign}{whole}.{fraction or 0}")
    assert abs(quantity.value) >= min(abs(exact) * _multiplier(suffix), Decimal(2**63 - 1))


def _multiplier(suffix: str) -> Decimal:
    binary = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
    decimal = {
        "": 0,
        "n": -9,
        "u": -6,
        "m": -3,
        "k": 3,
        "M": 6,
        "G": 9,
        "T": 12,
        "P": 15,
        "E": 18,
        "e3": 3,
        "e-2": -2,
        "E6": 6,
    }
    return Decimal(2 ** binary[suffix]) if suffix in binary else Decimal(1).scaleb(decimal[suffix])


@given(
    # BinarySI text saturates at 2^63-1 when parsed back, so stay inside the int64 range
    st.decimals(min_value=-INT64_MAX, max_value=INT64_MAX, allow_nan=False, allow_infinity=False),
    st.sampled_from(["BinarySI", "DecimalSI", "DecimalExponent"]),
)
def test_format_quantity_round_trips(value, fmt):
    printed = format_quantity(value, fmt)
    assert parse_quantity(printed).value == parse_quantity(str(value)).value


def test_binary_text_beyond_int64_saturates_when_parsed():
    printed = format_quantity(Decimal(2**64), "BinarySI")
    assert printed == "16Ei"
    assert parse_quantity(printed).value == INT64_MAX


def test_quantity_constructed_directly_prints():
    assert str(Quantity(Decimal(2**20), "BinarySI")) == "1Mi"
    assert repr(parse_quantity("2Gi")) == "Quantity('2Gi')"
