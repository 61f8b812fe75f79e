"""``KubeModel.from_dict``'s fast path parses exactly as ``model_validate``: the same
object, the same errors, and a subclass's own ``model_validate`` is still called."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError, model_validator

from kubewerk.model import InvalidObjectError, KubeModel

from .test_model_dump import Thing, ThingResource

INPUTS: list[Any] = [
    {"name": "n"},
    {"name": "n", "maybe": None, "kept": None, "when": "2025-01-02T03:04:05Z"},
    {"name": "n", "inner": {"value": 1}, "items": [{"keep": None}], "color": "red"},
    {"name": "n", "loose": {"name": "x", "extra": [1, None]}, "data": {"a": None}},
    {"name": "n", "raw": "AP8="},
    {"name": 1},  # strict: not a string
    {"name": "n", "kept": "3"},  # strict: not an integer
    {"maybe": "m"},  # name missing
    {"name": "n", "when": "yesterday"},
    {"name": "n", "items": [{"value": True}]},
    [],
    None,
    "text",
]


def _outcome(parse: Any, obj: Any) -> Any:
    try:
        value = parse(obj)
    except (ValidationError, InvalidObjectError) as exc:
        return ("error", str(exc))
    return ("ok", value.model_dump(mode="json", exclude_unset=True), value.model_fields_set)


@pytest.mark.parametrize("obj", INPUTS, ids=repr)
def test_from_dict_is_model_validate(obj: Any) -> None:
    fast = _outcome(Thing.from_dict, obj)

    def reference(value: Any) -> Thing:
        try:
            return Thing.model_validate(value)
        except ValidationError as exc:
            raise Thing._invalid(exc, value) from None

    assert fast == _outcome(reference, obj)


def test_resources_parse_the_same_way() -> None:
    obj = {"metadata": {"name": "a"}, "spec": {"thing": {"name": "n"}}}
    fast = ThingResource.from_dict(obj)
    assert fast == ThingResource.model_validate(obj)
    assert fast.model_fields_set == ThingResource.model_validate(obj).model_fields_set
    with pytest.raises(InvalidObjectError) as caught:
        ThingResource.from_dict({"metadata": {"name": "a"}, "spec": {"thing": {}}})
    assert "spec.thing.name: Required value" in str(caught.value)


def test_an_overridden_model_validate_is_still_called() -> None:
    calls: list[Any] = []

    class Custom(KubeModel):
        name: str | None = None

        @classmethod
        def model_validate(cls, obj: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            calls.append(obj)
            return super().model_validate({"name": "from override"}, **kwargs)

    assert Custom.from_dict({"name": "x"}).name == "from override"
    assert calls == [{"name": "x"}]


def test_validators_run_once() -> None:
    runs: list[str] = []

    class Counted(KubeModel):
        name: str | None = None

        @model_validator(mode="after")
        def _count(self) -> Counted:
            runs.append("after")
            return self

    Counted.from_dict({"name": "x"})
    assert runs == ["after"]


def test_a_model_validate_replaced_by_a_static_method_is_called() -> None:
    class Static(KubeModel):
        name: str | None = None

    def replacement(obj: Any) -> Any:
        return Static.model_construct(name="static")

    Static.model_validate = staticmethod(replacement)  # type: ignore[assignment,method-assign]
    assert Static.from_dict({"name": "x"}).name == "static"
