"""The numeric part of ``resource.ParseQuantity``: a quantity's value, bounded as
Kubernetes bounds it, at a cost bounded whatever the text.

``ParseQuantity`` keeps a value that is not a whole number of nanos rounded up (away from
zero) to the next nano, and caps the magnitude at ``2**63 - 1``. Exponents are read as
Go does (``strconv.ParseInt`` into int64, then ``int32(...)``, which wraps). Done naively
(``Fraction(10) ** exponent``), ``1e999999999`` would build a billion-digit integer and
block the event loop; here the magnitude is decided from the digit count first, and at
most :data:`SIGNIFICANT` digits take part in any arithmetic.

Every parser of quantities in kubewerk (typed defaults and validation, the QoS class, the
CEL ``quantity()`` library, the printers) reads the number through :func:`scaled_value`,
and every writer of one (the typed decode's canonical form, the printers' cells) spells it
through :func:`canonical_string`, ``Quantity.String()``'s canonical form.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Final, Literal

MAX_MAGNITUDE: Final = 2**63 - 1
"""``maxAllowed``: a larger quantity is capped here (its sign kept)."""
NANOS: Final = 10**9
SIGNIFICANT: Final = 64
"""Leading digits that take part in the arithmetic; the rest only say "not zero"."""

Format = Literal["BinarySI", "DecimalSI", "DecimalExponent"]

BINARY_SUFFIXES: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
"""Binary suffixes: the power of 1024 each stands for."""
DECIMAL_SUFFIXES: Final = {
    "n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}  # fmt: skip
"""Decimal suffixes: the power of 10 each stands for."""

_INT64 = 2**63
_NUMBER = re.compile(r"[0-9]*\.?[0-9]*")
_NONZERO = re.compile(r"[1-9]")


def go_exponent(text: str) -> int | None:
    """An ``e``/``E`` suffix's exponent as ``quantitySuffixer.interpret`` reads it
    (``int32(strconv.ParseInt(text, 10, 64))``), None when it is not an int64."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    # a long digit string is out of int64 range before it is converted
    if len(body.lstrip("0")) > 19:
        return None
    value = int(text)
    if not -_INT64 <= value < _INT64:
        return None
    return (value + 2**31) % 2**32 - 2**31


def scaled_value(number: str, exp10: int = 0, binary_power: int = 0) -> Fraction:
    """``number * 10**exp10 * 1024**binary_power`` as ``ParseQuantity`` leaves it: rounded
    up (away from zero) to a whole number of nanos, magnitude capped at ``2**63 - 1``.

    ``number`` is the quantity's numeric text (``[+-]?digits[.digits]``, either side
    possibly empty but not both); ``ValueError`` if it is not one. ``binary_power`` is at
    most 6 (``Ei``).
    """
    sign = 1
    body = number
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body in ("", ".") or _NUMBER.fullmatch(body) is None:
        raise ValueError(f"not a quantity number: {number[:40]!r}")
    point = body.find(".")
    if point < 0:
        point = len(body)
    first = _NONZERO.search(body)
    if first is None:
        return Fraction(0)
    # the leading digit stands for 10**(top - 1) in number * 10**exp10
    lead = first.start()
    top = (point - lead if lead < point else point - lead + 1) + exp10
    kept = body[lead : lead + SIGNIFICANT + 1].replace(".", "")[:SIGNIFICANT]
    rest = lead + SIGNIFICANT + (1 if lead < point <= lead + SIGNIFICANT else 0)
    sticky = _NONZERO.search(body, rest) is not None
    # 10**(top-1) ≤ |number * 10**exp10| < 10**top, and 1024**p lies in [10**(3p), 10**(3.02p))
    if top - 1 + 3 * binary_power >= 19:  # ≥ 10**19 > 2**63 - 1
        return Fraction(sign * MAX_MAGNITUDE)
    if top + 4 * binary_power < -9:  # < 10**-9 whatever the digits: one nano
        return Fraction(sign, NANOS)
    shift = top - len(kept)  # value = int(kept) * 10**shift * 1024**p (+ sticky)
    nanos = Fraction(int(kept)) * Fraction(10) ** (shift + 9) * 1024**binary_power
    whole_nanos = nanos.numerator // nanos.denominator
    if whole_nanos != nanos or sticky:
        whole_nanos += 1
    if whole_nanos > MAX_MAGNITUDE * NANOS:
        return Fraction(sign * MAX_MAGNITUDE)
    return Fraction(sign * whole_nanos, NANOS)


def suffixed_value(number: str, suffix: str) -> tuple[Fraction, Format] | None:
    """The value and format of ``number`` followed by ``suffix`` (a binary or decimal
    suffix, or ``e``/``E`` and an exponent) as :func:`scaled_value` gives it; None when
    ``suffix`` is none of those. ``ValueError`` when ``number`` is not a number."""
    if suffix in BINARY_SUFFIXES:
        return scaled_value(number, 0, BINARY_SUFFIXES[suffix]), "BinarySI"
    if suffix in DECIMAL_SUFFIXES:
        return scaled_value(number, DECIMAL_SUFFIXES[suffix]), "DecimalSI"
    exponent = go_exponent(suffix[1:]) if suffix[:1] in ("e", "E") else None
    if exponent is None:
        return None
    return scaled_value(number, exponent), "DecimalExponent"


_DECIMAL_BY_EXPONENT: Final = {v: k for k, v in DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER: Final = {v: k for k, v in BINARY_SUFFIXES.items()} | {0: ""}


def round_up(value: Fraction, scale: int) -> Fraction:
    """``value`` rounded away from zero to a whole multiple of ``10**scale``, as
    ``Quantity.RoundUp(scale)`` rounds (``-9`` at scale 1 is ``-10``)."""
    units = value / Fraction(10) ** scale
    whole = -(-abs(units).numerator // abs(units).denominator)  # ceil of |units|
    return (whole if units >= 0 else -whole) * Fraction(10) ** scale


def canonical_string(value: Fraction, fmt: Format) -> str:
    """``Quantity.String()`` of ``value`` held in format ``fmt``, as ``CanonicalizeBytes``
    spells it: ``0``; a BinarySI value of at least 1024 in magnitude that is whole, as a
    number and the largest binary suffix it divides by (``1536Mi``); any other value as a
    number and the largest power of 1000 it divides by (``1500m``, ``2k``), with its SI
    suffix, or as ``e`` and the exponent in DecimalExponent (``12e6``) and where no SI
    suffix stands for the power (beyond ``E``).

    A quantity holds nanos at most: a finer ``value`` is rounded up (away from zero) to a
    whole number of nanos first, as ``ParseQuantity`` leaves every parsed value. This is the
    computed form only: ``String()`` answers the text a quantity was parsed from instead
    when ``ParseQuantity`` judged that text canonical already (see ``ParseQuantity``).
    """
    nanos = round_up(value, -9) * NANOS
    if nanos == 0:
        return "0"
    whole = int(nanos)
    if fmt == "BinarySI" and abs(whole) >= 1024 * NANOS and whole % NANOS == 0:
        number, power = whole // NANOS, 0
        while power < 6 and number % 1024 == 0:
            number //= 1024
            power += 1
        return f"{number}{_BINARY_BY_POWER[power]}"
    number, exponent = whole, -9
    while number % 1000 == 0:
        number //= 1000
        exponent += 3
    suffix = _DECIMAL_BY_EXPONENT.get(exponent)
    if fmt == "DecimalExponent" or suffix is None:
        return f"{number}e{exponent}" if exponent else str(number)
    return f"{number}{suffix}"
