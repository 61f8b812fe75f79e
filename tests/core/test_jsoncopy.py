"""core.jsoncopy: the two deep copies and what each guarantees."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import orjson
import pytest

from kubewerk.core.jsoncopy import copy_json, copy_tree


def _sample() -> dict[str, Any]:
    shared = {"k": [1, 2]}
    return {"a": shared, "b": shared, "n": None, "f": 1.5, "t": True, "s": "x", "l": [{"d": {}}]}


@pytest.mark.parametrize("copy", [copy_json, copy_tree])
def test_a_copy_is_equal_and_shares_no_container(copy: Any) -> None:
    original = _sample()
    result = copy(original)
    assert result == original
    result["a"]["k"].append(3)
    result["l"][0]["d"]["new"] = 1
    assert original == {
        "a": {"k": [1, 2]},
        "b": {"k": [1, 2]},
        "n": None,
        "f": 1.5,
        "t": True,
        "s": "x",
        "l": [{"d": {}}],
    }
    assert result["b"] == {"k": [1, 2]}  # a value reached twice is copied twice


def test_copy_json_gives_json_types_and_refuses_what_has_no_json_form() -> None:
    assert copy_json({"t": (1, 2)}) == {"t": [1, 2]}
    with pytest.raises(TypeError):
        copy_json({"x": object()})
    with pytest.raises(orjson.JSONEncodeError):
        copy_json({1: "non-string key"})


def test_copy_tree_leaves_everything_but_containers_as_it_is() -> None:
    marker = object()
    nan = float("nan")
    big = 1 << 70
    original = {"t": (1, [2]), "o": marker, "nan": nan, "big": big, "od": OrderedDict(a=[1])}
    result = copy_tree(original)
    assert result["t"] is original["t"] and result["o"] is marker and result["big"] == big
    assert math.isnan(result["nan"])
    assert type(result["od"]) is dict and result["od"] == {"a": [1]}
    result["od"]["a"].append(2)
    assert original["od"]["a"] == [1]


def test_self_containing_values_are_refused() -> None:
    loop: dict[str, Any] = {}
    loop["me"] = loop
    with pytest.raises(RecursionError):
        copy_tree(loop)
    with pytest.raises(orjson.JSONEncodeError):
        copy_json(loop)


def test_the_old_name_in_core_patch() -> None:
    from kubewerk.core.patch import deep_copy

    assert deep_copy is copy_tree
