"""``KubeModel.to_dict``'s fast path gives exactly ``model_dump(mode="json",
exclude_unset=True)``, and the None filter is exactly ``v is None``."""

from __future__ import annotations

import math
import warnings
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any

import pytest

from kubewerk.model import KubeModel, Nullable, ObjectMeta, Resource
from kubewerk.model.base import _is_none
from kubewerk.model.meta import ManagedFieldsEntry


class _EqualsEverything:
    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:  # a stable test id (pytest-xdist workers must agree on ids)
        return "EqualsEverything"


class _Falsy:
    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "Falsy"


@pytest.mark.parametrize(
    "value",
    [None, 0, 0.0, -0.0, math.nan, False, "", b"", [], {}, (), _EqualsEverything(), _Falsy()],
    ids=repr,
)
def test_is_none_is_identity_with_none(value: Any) -> None:
    assert _is_none(value) is (value is None)


class Color(Enum):
    RED = "red"


class Inner(KubeModel):
    value: int | None = None
    keep: Annotated[str | None, Nullable] = None


class Loose(KubeModel, preserve_unknown_fields=True):
    name: str | None = None


class Thing(KubeModel):
    name: str
    maybe: str | None = None
    kept: Annotated[int | None, Nullable] = None
    anything: Any = None
    when: datetime | None = None
    color: Color | None = None
    inner: Inner | None = None
    items: list[Inner] | None = None
    loose: Loose | None = None
    data: dict[str, Any] | None = None
    raw: bytes | None = None


class ThingSpec(KubeModel):
    thing: Thing | None = None


class ThingResource(Resource[ThingSpec, None], group="dump.test.kubewerk.dev"):
    """A thing."""


def _both(model: KubeModel) -> tuple[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a None in a str field warns: both paths alike
        return model.to_dict(), model.model_dump(mode="json", exclude_unset=True)


def _things() -> list[Thing]:
    stamp = datetime(2025, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    full = Thing(
        name="n",
        maybe="m",
        kept=3,
        anything={"a": [1, 1.0, True, None]},
        when=stamp,
        color=Color.RED,
        inner=Inner(value=1, keep="k"),
        items=[Inner(), Inner(value=None, keep=None)],
        loose=Loose.from_dict({"name": None, "extra": None, "deep": {"x": None}}),
        data={"k": None, "n": {"m": None}},
        raw=b"\x00\xff",
    )
    nones = Thing(name="n", maybe=None, kept=None, anything=None, when=None, inner=None)
    unchecked = Thing(name="n")
    unchecked.name = None  # type: ignore[assignment]  # no validation on assignment
    unchecked.maybe = None
    unchecked.kept = None
    constructed = Thing.model_construct(name=None, maybe=None, kept=None, anything=None)
    return [full, nones, unchecked, constructed, Thing(name="only")]


@pytest.mark.parametrize("index", range(5))
def test_to_dict_is_model_dump(index: int) -> None:
    thing = _things()[index]
    fast, reference = _both(thing)
    assert fast == reference
    assert list(fast) == list(reference)
    resource = ThingResource(spec=ThingSpec(thing=thing))
    fast, reference = _both(resource)
    assert fast == reference


def test_nones_kept_and_dropped_as_documented() -> None:
    out = _both(_things()[1])[0]
    assert out == {"name": "n", "kept": None}  # Nullable keeps its None, the rest drop
    unchecked = _both(_things()[2])[0]
    assert unchecked == {"name": None, "kept": None}  # a str field given None unchecked
    loose = _both(_things()[0])[0]["loose"]
    assert loose == {"extra": None, "deep": {"x": None}}  # unknown members keep their None


def test_metadata_dump_is_model_dump() -> None:
    meta = ObjectMeta.from_dict(
        {
            "name": "a",
            "labels": {"x": "y"},
            "creationTimestamp": "2025-01-02T03:04:05Z",
            "managedFields": [{"manager": "m", "time": None, "fieldsV1": {"f:spec": {}}}],
        }
    )
    assert _both(meta)[0] == _both(meta)[1]
    assert _both(ManagedFieldsEntry(manager=None))[0] == {}


def test_an_overridden_model_dump_is_still_called() -> None:
    calls: list[dict[str, Any]] = []

    class Custom(KubeModel):
        name: str | None = None

        def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
            calls.append(kwargs)
            return {"custom": True}

    assert Custom(name="x").to_dict() == {"custom": True}
    assert calls == [{"mode": "json", "exclude_unset": True}]
