"""``kubewerk.core.quantity``: ParseQuantity's value — rounded up to nanos, capped at
2**63 - 1 — at a bounded cost whatever the exponent or the number of digits."""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from kubewerk.core.quantity import MAX_MAGNITUDE, go_exponent, scaled_value


@pytest.mark.parametrize(
    ("number", "exp10", "power", "value"),
    [
        ("1", 0, 0, Fraction(1)),
        ("1.5", -3, 0, Fraction(3, 2000)),
        ("+2", 0, 1, Fraction(2048)),
        ("-0.5", 0, 0, Fraction(-1, 2)),
        (".5", 3, 0, Fraction(500)),
        ("5.", 0, 0, Fraction(5)),
        ("0", 0, 0, Fraction(0)),
        ("000.000", 9, 0, Fraction(0)),
        ("1.5", -9, 0, Fraction(2, 10**9)),  # 1.5n rounds up to 2n
        ("-1.5", -9, 0, Fraction(-2, 10**9)),  # away from zero
        ("0.1", -9, 0, Fraction(1, 10**9)),
        ("1", -999999999, 0, Fraction(1, 10**9)),  # tiny, not zero: one nano
        ("9223372036854775807", 0, 0, Fraction(MAX_MAGNITUDE)),
        ("9223372036854775808", 0, 0, Fraction(MAX_MAGNITUDE)),  # capped
        ("1", 999999999, 0, Fraction(MAX_MAGNITUDE)),
        ("-1", 10000, 0, Fraction(-MAX_MAGNITUDE)),
        ("8", 0, 6, Fraction(MAX_MAGNITUDE)),  # 8Ei = 2**63
        ("7", 0, 6, Fraction(7 * 2**60)),
        ("123456789012345678901234567890123456789012345678901234567890123456789", -60, 0,
         Fraction(123456789012345679, 10**9)),
        ("1" + "0" * 70 + "1", -71, 0, Fraction(1_000_000_001, 10**9)),  # digit 72 rounds up
    ],
)  # fmt: skip
def test_values_as_parse_quantity_keeps_them(
    number: str, exp10: int, power: int, value: Fraction
) -> None:
    assert scaled_value(number, exp10, power) == value


@pytest.mark.parametrize("bad", ["", ".", "+", "1.2.3", "1e3", "\u0661", " 1", "0x1"])
def test_what_is_not_a_number(bad: str) -> None:
    with pytest.raises(ValueError):
        scaled_value(bad)


def test_go_reads_exponents_into_int64_then_int32() -> None:
    assert go_exponent("3") == 3
    assert go_exponent("-3") == -3
    assert go_exponent("+12") == 12
    assert go_exponent("4294967296") == 0  # int32(1 << 32) wraps to 0
    assert go_exponent("2147483648") == -(2**31)
    assert go_exponent("9223372036854775807") == -1
    assert go_exponent("9223372036854775808") is None  # not an int64
    assert go_exponent("1" * 10_000) is None
    assert go_exponent("") is None and go_exponent("e") is None and go_exponent("1.5") is None


def test_hostile_texts_cost_little() -> None:
    """A billion-digit power, or a body-sized digit string, never turns into arithmetic on
    numbers of that size (before: minutes of CPU for ``1e999999999``)."""
    texts = [
        ("1", 999_999_999),
        ("1", -999_999_999),
        ("1" * 3_000_000, 0),
        ("1." + "0" * 3_000_000 + "1", 0),
        ("0." + "0" * 3_000_000 + "1", 0),
    ]
    for number, exp10 in texts:
        started = time.perf_counter()
        scaled_value(number, exp10)
        assert time.perf_counter() - started < 0.5, number[:20]
    assert scaled_value("1." + "0" * 3_000_000 + "1") == Fraction(1_000_000_001, 10**9)
