"""Resource quantities (``resource.Quantity``): parsing and the canonical form a typed
decode writes back (``1000m`` -> ``1``, ``0.5`` -> ``500m``, ``1.5Gi`` -> ``1536Mi``),
with ``SetDefaults_ResourceList``'s rounding up to milli units.

The same few quantities come back in body after body (``500m``, ``128Mi``), so what a
quantity text parses and canonicalises to is remembered: the last ``CACHE_SIZE`` distinct
texts of at most ``CACHED_TEXT`` characters (of type ``str`` exactly), so the memory held
stays bounded whatever the bodies carry. Remembering changes no answer: ``parse`` of a
malformed text raises again on every call, and ``canonical`` gives the same string.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache
from typing import Any, Final

from kubewerk.apiserver.kindrules.common import JSON, NON_NEGATIVE, Errs
from kubewerk.core.errors import FieldError
from kubewerk.core.quantity import Format, canonical_string, round_up, suffixed_value

PARSE_ERROR: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
"""``resource.ErrFormatWrong``'s text: what a typed decode answers for a bad quantity."""

_QUANTITY_RE: Final = re.compile(r"([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)")
_NUMBER_RE: Final = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")


CACHED_TEXT: Final = 64
"""The longest quantity text whose parse and canonical form are remembered."""
CACHE_SIZE: Final = 2048
"""How many distinct quantity texts are remembered (least recently used dropped)."""


def parse(text: str) -> tuple[Fraction, Format]:
    """The value and format of a quantity; ``ValueError(PARSE_ERROR)`` when malformed
    (or ``ValueError("unable to parse quantity's suffix")``)."""
    if type(text) is str and len(text) <= CACHED_TEXT:
        return _parse_remembered(text)
    return _parse(text)


def _parse(text: str) -> tuple[Fraction, Format]:
    m = _QUANTITY_RE.fullmatch(text.strip()) if text == text.strip() else None
    if not m or not _NUMBER_RE.fullmatch(m.group(1)):
        raise ValueError(PARSE_ERROR)
    found = suffixed_value(m.group(1), m.group(2))
    if found is None:
        raise ValueError("unable to parse quantity's suffix")
    return found


_parse_remembered = lru_cache(maxsize=CACHE_SIZE)(_parse)


def number_text(value: int | float) -> str:
    """The text of a JSON number as ``Quantity.UnmarshalJSON`` reads it (the raw number):
    an integer's digits, a float's shortest round-trip form (``0.1``, ``1e+21``), which is
    the number's text as written for any float a person or ``json.dumps`` writes."""
    return str(value) if isinstance(value, int) else repr(value)


def value_of(text: Any) -> Fraction | None:
    """The value of a quantity given as a string or a JSON number (read as its text, so
    ``0.1`` is exactly a tenth), None when malformed."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        return None
    try:
        return parse(text if isinstance(text, str) else number_text(text))[0]
    except ValueError:
        return None


def canonical(text: Any) -> Any:
    """The quantity as kube-apiserver serializes it after ``SetDefaults_ResourceList``
    (rounded up to milli units); a value that does not parse is returned unchanged."""
    if type(text) is str and len(text) <= CACHED_TEXT:
        return _canonical_remembered(text)
    return _canonical(text)


def _canonical(text: Any) -> Any:
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        return text
    try:
        value, fmt = parse(text if isinstance(text, str) else number_text(text))
    except ValueError:
        return text
    return format_value(value, fmt)


_canonical_remembered = lru_cache(maxsize=CACHE_SIZE)(_canonical)


def format_value(value: Fraction, fmt: Format) -> str:
    """``Quantity.String()`` of ``value`` in ``fmt`` after ``RoundUp(Milli)``: rounded to a
    whole number of milli units away from zero (``-1.5m`` is ``-2m``), as ``RoundUp`` does."""
    return canonical_string(round_up(value, -3), fmt)


def canonicalize_list(resources: Any) -> None:
    """``SetDefaults_ResourceList`` on a ``ResourceList`` map, in place."""
    if isinstance(resources, dict):
        for key, val in list(resources.items()):
            resources[key] = canonical(val)


def canonicalize_requirements(owner: JSON, key: str = "resources") -> None:
    """The ``limits`` and ``requests`` of ``owner[key]`` (ResourceRequirements)."""
    req = owner.get(key)
    if isinstance(req, dict):
        canonicalize_list(req.get("limits"))
        canonicalize_list(req.get("requests"))


def check_nonnegative_list(errs: Errs, resources: Any, path: str) -> None:
    """``ValidateResourceQuantityValue``'s sign check over a ``ResourceList`` map at
    ``path``: one ``Invalid`` error per negative quantity, at ``path[NAME]``, showing the
    quantity's canonical form, with ``isNegativeErrorMsg``, in the map's order. A value
    that is not a map, and a quantity that does not parse, add nothing here."""
    if not isinstance(resources, dict):
        return
    for name, value in resources.items():
        amount = value_of(value)
        if amount is not None and amount < 0:
            errs.append(FieldError.invalid(f"{path}[{name}]", canonical(value), NON_NEGATIVE))
