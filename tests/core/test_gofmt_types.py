"""``go_type``: Go's ``%T`` of a decoded JSON value, which the conversion webhook's and the
strategic merge patch's messages name (the latter prints a nil type with ``%s``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubewerk.core import strategic
from kubewerk.core.gofmt import go_type


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "<nil>"),
        (True, "bool"),
        (False, "bool"),  # a bool is no int64, though Python's bool is an int
        (0, "int64"),
        (2**63 - 1, "int64"),
        (1.5, "float64"),
        (1.0, "float64"),
        ("", "string"),
        ([], "[]interface {}"),
        ([1, "a"], "[]interface {}"),
        ({}, "map[string]interface {}"),
        ({"a": None}, "map[string]interface {}"),
    ],
)
def test_go_type(value: Any, name: str) -> None:
    assert go_type(value) == name
    assert strategic._go_type(value) == ("%!s(<nil>)" if value is None else name)
