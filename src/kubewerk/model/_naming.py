"""Name derivations: JSON field names and resource names, as Kubernetes spells them."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["guess_plural", "json_name", "kind_from_class_name", "version_priority_key"]

# kinds whose lower-cased form is already plural (as in apimachinery's
# meta.UnsafeGuessKindToResource)
_UNPLURALIZED: Final = ("endpoints",)
_VOWELS: Final = frozenset("aeiou")


def json_name(field_name: str) -> str:
    """``snake_case`` Python name → ``camelCase`` JSON name.

    A trailing underscore (used for Python keywords, ``from_``) is dropped; a name with no
    underscore is returned unchanged, so ``apiVersion``-style names pass through.
    """
    name = field_name.rstrip("_") or field_name
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest if part)


def guess_plural(kind: str) -> str:
    """The plural resource name for a kind, by English rules.

    Kubernetes' own guess (``meta.UnsafeGuessKindToResource``) lower-cases the kind and
    adds ``es`` after ``s``, ``ies`` in place of a final ``y`` and ``s`` otherwise. This
    follows it, with the English refinements controller-gen applies too: ``-x``, ``-z``,
    ``-ch`` and ``-sh`` take ``es`` and a vowel before the ``y`` keeps it (``Gateway`` →
    ``gateways``, not ``gatewaies``). Pass ``plural=`` when English is irregular.
    """
    singular = kind.lower()
    if not singular:
        return singular
    if singular.endswith(_UNPLURALIZED):
        return singular
    if singular.endswith(("s", "x", "z", "ch", "sh")):
        return singular + "es"
    if singular.endswith("y") and (len(singular) < 2 or singular[-2] not in _VOWELS):
        return singular[:-1] + "ies"
    return singular + "s"


_VERSION_RE: Final = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority_key(version: str) -> tuple[int, int, int, int, str]:
    """Sort key giving Kubernetes' version priority (``v1 > v1beta2 > v1beta1 > v1alpha1``).

    Versions that do not look like Kubernetes versions sort after all others,
    alphabetically (as ``version.CompareKubeAwareVersionStrings`` orders them).
    """
    match = _VERSION_RE.match(version)
    if match is None:
        return (1, 0, 0, 0, version)
    major = int(match.group(1))
    stage = {"alpha": 2, "beta": 1, None: 0}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (0, stage, -major, -minor, version)


_VERSION_SUFFIX: Final = re.compile(r"V\d+(?:(?:alpha|beta)\d+)?$")


def kind_from_class_name(name: str, version: str) -> str:
    """The kind a class name stands for: without a trailing suffix spelling ``version``.

    ``WidgetV1beta1`` with version ``v1beta1`` is ``Widget``; a suffix of another version,
    or a name that is only a suffix, is kept.
    """
    match = _VERSION_SUFFIX.search(name)
    if match and match.group(0).lower() == version.lower() and match.start() > 0:
        return name[: match.start()]
    return name
