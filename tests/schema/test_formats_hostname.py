"""The ``hostname`` format is matched by hand; it must accept exactly what go-openapi's
hostname pattern accepts (checked against the pattern itself, run by RE2)."""

from __future__ import annotations

import random

import pytest
import re2

from kubewerk.schema.formats import is_hostname

# go-openapi strfmt's hostname pattern, as kube-openapi validates the format with it.
_PATTERN = (
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|"
    r"([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}"
    r"([a-zA-Z\p{L}]){2,63})$"
)

# Characters whose Unicode category is the same in every Unicode version since 6: ASCII
# letters, digits and punctuation; Latin, Greek, CJK and Arabic letters; currency, math and
# other symbols; a combining mark, an Arabic-Indic digit, a connector, a space, a dash.
_POOL = "abzAZ09-._ +$^`~|é ßΩж中ع€©±√٣\u0301‿\u00a0\u2013"


def _by_pattern() -> re2._Regexp:
    options = re2.Options()
    options.max_mem = 256 << 20  # enough DFA memory that RE2 prints nothing
    return re2.compile(_PATTERN, options)


def _reference(regexp: re2._Regexp, s: str) -> bool:
    if not regexp.search(s) or len(s) > 255:
        return False
    return all(len(p) <= 63 for p in s.split("."))


# Mostly valid characters, so that random names often come close to matching.
_NEAR = "ab9-ü€"


def _label(rng: random.Random, size: int, pool: str = _POOL) -> str:
    return "".join(rng.choice(pool) for _ in range(size))


def _cases() -> list[str]:
    rng = random.Random(20261201)
    cases = ["", ".", "a", "a-", "-a", "a--b", "a-b", "a.b", "a.bc", "a.b1", "a-.bc", "a.-b.cd"]
    for size in (1, 2, 61, 62, 63, 64, 65):
        cases += ["x" * size, "x-" + "y" * (size - 2), f"{'x' * size}.com", f"a.{'z' * size}"]
    cases += ["a." * 100 + "com", "a." * 127 + "co", ("b" * 63 + ".") * 4 + "co"]
    for _ in range(6000):
        parts = [
            _label(rng, rng.choice((0, 1, 2, 3, 5, 62, 63, 64))) for _ in range(rng.randint(1, 4))
        ]
        cases.append(".".join(parts))
        cases.append(_label(rng, rng.randint(0, 12)))
        near = [_label(rng, rng.choice((1, 2, 3, 4, 61, 62, 63, 64)), _NEAR) for _ in range(3)]
        cases.append(".".join([*near[: rng.randint(1, 3)], _label(rng, rng.randint(1, 4), "aü-")]))
    return cases


def test_hand_matcher_agrees_with_the_pattern() -> None:
    regexp = _by_pattern()
    disagreements = [s for s in _cases() if is_hostname(s) != _reference(regexp, s)]
    assert disagreements == []


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("example.com", True),
        ("kubernetes", True),
        ("bücher.de", True),
        ("a-b.c-d.io", True),
        ("a-", True),  # the single-label alternative allows a hyphen after the first character
        ("-a.com", False),
        ("a-.com", False),
        ("a.c", False),  # a top-level label has at least two letters
        ("a.co1", False),
        ("a..com", False),
        ("x" * 64, False),
        ("a." * 127 + "co", False),  # 256 characters
    ],
)
def test_examples(value: str, valid: bool) -> None:
    assert is_hostname(value) is valid
