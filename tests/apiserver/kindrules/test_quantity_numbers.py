"""Quantities as a typed decode leaves them (``SetDefaults_ResourceList``'s
``RoundUp(Milli)`` then ``String()``) where sign and JSON numbers matter: rounding goes away
from zero, and a JSON number is read as its text, as ``Quantity.UnmarshalJSON`` reads it."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubewerk.apiserver.kindrules.quantity import canonical, value_of


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("-1.5m", "-2m"),  # RoundUp: negative numbers are rounded away from zero
        ("-0.0001", "-1m"),  # ... so a tiny negative one stays negative
        ("-1m", "-1m"),
        ("-1.5Gi", "-1536Mi"),
        ("-0.5", "-500m"),
        ("1.0001", "1001m"),
        (-0.0015, "-2m"),
    ],
)
def test_rounding_to_milli_goes_away_from_zero(given: Any, shown: str) -> None:
    assert canonical(given) == shown


@pytest.mark.parametrize(
    ("given", "shown", "value"),
    [
        (0.1, "100m", Fraction(1, 10)),  # not the binary float 0.1000000000000000055...
        (1.1, "1100m", Fraction(11, 10)),
        (0.3, "300m", Fraction(3, 10)),
        (2.5, "2500m", Fraction(5, 2)),
        (1.0, "1", Fraction(1)),
        (1e-10, "1e-3", Fraction(1, 10**9)),  # "1e-10": DecimalExponent, one nano
        (1e3, "1k", Fraction(1000)),  # repr "1000.0": DecimalSI
        (2, "2", Fraction(2)),
        (-7, "-7", Fraction(-7)),
    ],
)
def test_json_numbers_are_read_as_their_text(given: Any, shown: str, value: Fraction) -> None:
    assert canonical(given) == shown
    assert value_of(given) == value


@pytest.mark.parametrize("given", [float("inf"), float("-inf"), float("nan")])
def test_numbers_that_are_no_quantity_are_left_as_they_are(given: float) -> None:
    """YAML can spell these (``.inf``, ``.nan``); they are no quantity and stay as given for
    the validation to refuse (reading them as a fraction raised)."""
    assert canonical(given) is given
    assert value_of(given) is None
