"""json_equal: equality of decoded JSON as JSON sees it, not as Python does."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.core.gofmt import go_deep_equal, json_equal


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, True, False),
        (0, False, False),
        ({"a": 1}, {"a": True}, False),
        ([1, 0], [True, False], False),
        (True, True, True),
        (3, 3.0, True),  # numbers by value (go_deep_equal: int64 and float64 differ)
        ({"a": 1, "b": [1, {"c": "x"}]}, {"b": [1, {"c": "x"}], "a": 1}, True),  # key order
        ({"a": None}, {}, False),
        ("1", 1, False),
        (2**70, 2**70, True),  # beyond orjson: compared structurally
        ({"n": 2**70, "f": True}, {"f": 1, "n": 2**70}, False),
    ],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


def test_numbers_differ_from_go_deep_equal() -> None:
    assert json_equal(3, 3.0) and not go_deep_equal(3, 3.0)
