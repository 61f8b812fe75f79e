"""``Quantity.String()``'s computed canonical form (``CanonicalizeBytes``) and
``RoundUp``, the one copy both the typed decode and the printers spell quantities with."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubewerk.apiserver.kindrules.quantity import canonical, parse
from kubewerk.apiserver.printers.format import quantity_string
from kubewerk.core.quantity import Format, canonical_string, round_up

F = Fraction


@pytest.mark.parametrize(
    ("value", "fmt", "shown"),
    [
        (F(0), "BinarySI", "0"),
        (F(0), "DecimalExponent", "0"),
        (F(1536 * 2**20), "BinarySI", "1536Mi"),
        (F(2**30), "BinarySI", "1Gi"),
        (F(8 * 2**60), "BinarySI", "8Ei"),
        (F(2**70), "BinarySI", "1024Ei"),  # no suffix past Ei: the number grows
        (F(1024), "BinarySI", "1Ki"),
        (F(-1024), "BinarySI", "-1Ki"),
        (F(-1536 * 1024), "BinarySI", "-1536Ki"),
        (F(1023), "BinarySI", "1023"),  # below 1024: DecimalSI
        (F(-1023), "BinarySI", "-1023"),
        (F(2000), "BinarySI", "2000"),  # whole and past 1024: stays BinarySI
        (F(1), "BinarySI", "1"),
        (F(1, 2), "BinarySI", "500m"),
        (F(2049, 2), "BinarySI", "1024500m"),  # not whole: DecimalSI
        (F(1500, 1000), "DecimalSI", "1500m"),
        (F(2000), "DecimalSI", "2k"),
        (F(1500), "DecimalSI", "1500"),
        (F(1, 10**9), "DecimalSI", "1n"),
        (F(-1, 10**6), "DecimalSI", "-1u"),
        (F(10**18), "DecimalSI", "1E"),
        (F(10**20), "DecimalSI", "100E"),
        (F(10**21), "DecimalSI", "1e21"),  # past E: the exponent form
        (F(-(10**24)), "DecimalSI", "-1e24"),
        (F(2**63 - 1), "DecimalSI", "9223372036854775807"),
        (F(12 * 10**6), "DecimalExponent", "12e6"),
        (F(1000), "DecimalExponent", "1e3"),
        (F(1, 1000), "DecimalExponent", "1e-3"),
        (F(5), "DecimalExponent", "5"),
        (F(1, 10**10), "DecimalSI", "1n"),  # finer than a nano: rounded up first
        (F(-1, 10**10), "DecimalSI", "-1n"),  # ... away from zero
        (F(15, 10**10), "DecimalExponent", "2e-9"),
    ],
)
def test_canonical_string(value: Fraction, fmt: Format, shown: str) -> None:
    assert canonical_string(value, fmt) == shown


@pytest.mark.parametrize(
    ("value", "scale", "rounded"),
    [
        (F(-9), 1, F(-10)),  # RoundUp's own example
        (F(9), 1, F(10)),
        (F(10), 1, F(10)),
        (F(15, 10000), -3, F(2, 1000)),
        (F(-15, 10000), -3, F(-2, 1000)),
        (F(-1, 10**12), -3, F(-1, 1000)),
        (F(0), -3, F(0)),
        (F(7, 1000), -3, F(7, 1000)),
        (F(1, 3), -9, F(333333334, 10**9)),
    ],
)
def test_round_up_goes_away_from_zero(value: Fraction, scale: int, rounded: Fraction) -> None:
    assert round_up(value, scale) == rounded


HOSTILE = [
    "1.5Gi", "0.5Ki", ".001Ki", "1024Ki", "1048576", "-1.5Gi", "0.0000000001", "-0.0000000001",
    "1e-10", "12e6", "1000e3", "1E", "1000E", "8Ei", "9Ei", "9223372036854775808", "1.0001",
    "-1m", "+5", "007", "1.500", "0.1", "5.", ".5", "1e+3", "1E-3", "0e9", "-0",
    "123456789.123456789",
]  # fmt: skip


@pytest.mark.parametrize("text", HOSTILE)
def test_the_decode_and_the_printers_spell_alike(text: str) -> None:
    """The printers spell a stored quantity as parsed; the typed decode spells it after
    rounding up to milli units. Both are the one canonical form of their value."""
    value, fmt = parse(text)
    assert quantity_string(text) == canonical_string(value, fmt)
    assert canonical(text) == canonical_string(round_up(value, -3), fmt)
