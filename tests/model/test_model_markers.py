"""Every marker: the schema it produces, and the definitions it refuses."""

from __future__ import annotations

import enum
from datetime import date, datetime
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from kubewerk.model import (
    AtMostOneOf,
    EmbeddedResource,
    ExactlyOneOf,
    Format,
    Immutable,
    Int32,
    IntOrString,
    KubeModel,
    ListMapKeys,
    ListType,
    MapType,
    ModelDefinitionError,
    Nullable,
    PreserveUnknownFields,
    PrinterColumn,
    Quantity,
    Resource,
    Rule,
    Scale,
    Selectable,
    Title,
    crd_for,
)

GROUP = "markers.test.kubewerk.dev"


class Color(enum.StrEnum):
    RED = "red"
    BLUE = "blue"


class Port(KubeModel):
    name: str
    protocol: Literal["TCP", "UDP"] = "TCP"
    number: Annotated[int, Field(ge=1, le=65535)]


class Template(Resource[dict[str, Any], None], group=GROUP, kind="Template"):
    """An embedded, typed object."""


class MarkedSpec(
    KubeModel,
    rules=[
        ExactlyOneOf("image", "source_ref"),
        AtMostOneOf("cpu", "memory"),
        Rule(
            "self.replicas <= self.maxReplicas",
            message="too many",
            reason="FieldValueForbidden",
            field_path=".replicas",
        ),
    ],
):
    """Everything at once."""

    replicas: Annotated[int, Field(ge=0, le=10), PrinterColumn("Replicas", priority=1)] = 1
    """Desired replicas."""
    max_replicas: Annotated[int, Field(gt=0, lt=100, multiple_of=2)] = 10
    name: Annotated[str, Field(min_length=1, max_length=63, pattern=r"^[a-z]+$"), Immutable()]
    color: Color = Color.RED
    mode: Literal["fast", "slow"] | None = None
    uri: Annotated[str, Format("uri"), Title("Endpoint")] | None = None
    created: datetime | None = None
    day: date | None = None
    blob: bytes | None = None
    ratio: float | None = None
    nickname: Annotated[str | None, Nullable] = None
    port: IntOrString | None = None
    cpu: Quantity | None = None
    memory: Quantity | None = None
    image: str | None = None
    source_ref: str | None = Field(default=None, description="Where the source is.")
    free_form: Annotated[dict[str, Any], PreserveUnknownFields] | None = None
    anything: Any = None
    embedded: Annotated[dict[str, Any], EmbeddedResource] | None = None
    template: Template | None = None
    ports: Annotated[list[Port], ListType.MAP, ListMapKeys("name", "protocol")] | None = None
    tags: Annotated[list[str], ListType.SET, Field(min_length=1, max_length=5)] | None = None
    args: Annotated[list[str], ListType.ATOMIC] | None = None
    labels: Annotated[dict[str, str], MapType.ATOMIC, Field(max_length=3)] | None = None
    owner: (
        Annotated[str, Selectable, Rule("self != ''", message_expression="'bad: ' + self")] | None
    ) = None
    frozen_ref: Annotated[str, Immutable(message="frozenRef cannot change")] | None = None
    checked: Annotated[int, Rule("self >= oldSelf", optional_old_self=False)] | None = None


class MarkedStatus(KubeModel):
    ready_replicas: Annotated[int, PrinterColumn("Ready")] | None = None
    selector: str | None = None


class Marked(
    Resource[MarkedSpec, MarkedStatus],
    group=GROUP,
    categories=["all"],
    scale=Scale(label_selector_path=".status.selector"),
    printer_columns=[PrinterColumn("Age", json_path=".metadata.creationTimestamp", type="date")],
    selectable_fields=[".spec.name"],
    deprecated=True,
    deprecation_warning="use v2",
):
    """A kind that uses every marker."""


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return crd_for(Marked)


@pytest.fixture(scope="module")
def spec(crd: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    return props["spec"]


def prop(spec: dict[str, Any], name: str) -> dict[str, Any]:
    out: dict[str, Any] = spec["properties"][name]
    return out


def test_bounds_and_defaults(spec: dict[str, Any]) -> None:
    assert prop(spec, "replicas") == {
        "default": 1,
        "description": "Desired replicas.",
        "maximum": 10,
        "minimum": 0,
        "type": "integer",
    }
    assert prop(spec, "maxReplicas") == {
        "default": 10,
        "exclusiveMaximum": True,
        "exclusiveMinimum": True,
        "maximum": 100,
        "minimum": 0,
        "multipleOf": 2,
        "type": "integer",
    }


def test_lengths_pattern_required(spec: dict[str, Any]) -> None:
    name = prop(spec, "name")
    assert (name["minLength"], name["maxLength"], name["pattern"]) == (1, 63, "^[a-z]+$")
    assert spec["required"] == ["name"]
    tags = prop(spec, "tags")
    assert (tags["minItems"], tags["maxItems"], tags["x-kubernetes-list-type"]) == (1, 5, "set")
    labels = prop(spec, "labels")
    assert labels == {
        "additionalProperties": {"type": "string"},
        "maxProperties": 3,
        "type": "object",
        "x-kubernetes-map-type": "atomic",
    }


def test_enums_formats_and_types(spec: dict[str, Any]) -> None:
    assert prop(spec, "color") == {"default": "red", "enum": ["red", "blue"], "type": "string"}
    assert prop(spec, "mode") == {"enum": ["fast", "slow"], "type": "string"}
    assert prop(spec, "uri") == {"format": "uri", "title": "Endpoint", "type": "string"}
    assert prop(spec, "created") == {"format": "date-time", "type": "string"}
    assert prop(spec, "day") == {"format": "date", "type": "string"}
    assert prop(spec, "blob") == {"format": "byte", "type": "string"}
    assert prop(spec, "ratio") == {"type": "number"}
    assert prop(spec, "sourceRef") == {"description": "Where the source is.", "type": "string"}


def test_nullable_int_or_string_quantity(spec: dict[str, Any]) -> None:
    assert prop(spec, "nickname") == {"nullable": True, "type": "string"}
    assert prop(spec, "port") == {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    }
    cpu = prop(spec, "cpu")
    assert cpu["x-kubernetes-int-or-string"] is True and cpu["pattern"].startswith("^(\\+|-)?")


def test_preserve_unknown_and_embedded(spec: dict[str, Any]) -> None:
    assert prop(spec, "freeForm") == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    assert prop(spec, "anything") == {"x-kubernetes-preserve-unknown-fields": True}
    assert prop(spec, "embedded") == {
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True,
    }
    template = prop(spec, "template")
    assert template["x-kubernetes-embedded-resource"] is True
    assert set(template["properties"]) == {"apiVersion", "kind", "metadata", "spec"}
    assert template["properties"]["kind"]["enum"] == ["Template"]
    assert template["properties"]["apiVersion"]["enum"] == [f"{GROUP}/v1"]


def test_list_types(spec: dict[str, Any]) -> None:
    ports = prop(spec, "ports")
    assert ports["x-kubernetes-list-type"] == "map"
    assert ports["x-kubernetes-list-map-keys"] == ["name", "protocol"]
    assert ports["items"]["required"] == ["name", "number"]
    assert ports["items"]["properties"]["protocol"]["default"] == "TCP"
    assert prop(spec, "args")["x-kubernetes-list-type"] == "atomic"


def test_cel_rules_immutable_and_one_of(spec: dict[str, Any]) -> None:
    assert spec["x-kubernetes-validations"] == [
        {
            "message": "exactly one of the fields in [image sourceRef] must be set",
            "rule": "[has(self.image),has(self.sourceRef)].filter(x,x==true).size() == 1",
        },
        {
            "message": "at most one of the fields in [cpu memory] may be set",
            "rule": "[has(self.cpu),has(self.memory)].filter(x,x==true).size() <= 1",
        },
        {
            "fieldPath": ".replicas",
            "message": "too many",
            "reason": "FieldValueForbidden",
            "rule": "self.replicas <= self.maxReplicas",
        },
        {
            "message": "frozenRef cannot change",
            "rule": "has(self.frozenRef) == has(oldSelf.frozenRef)",
        },
    ]
    assert prop(spec, "name")["x-kubernetes-validations"] == [
        {"message": "Value is immutable", "rule": "self == oldSelf"}
    ]
    assert prop(spec, "owner")["x-kubernetes-validations"] == [
        {"messageExpression": "'bad: ' + self", "rule": "self != ''"}
    ]
    assert prop(spec, "checked")["x-kubernetes-validations"] == [
        {"optionalOldSelf": False, "rule": "self >= oldSelf"}
    ]


def test_version_level_markers(crd: dict[str, Any]) -> None:
    version = crd["spec"]["versions"][0]
    assert version["additionalPrinterColumns"] == [
        {"jsonPath": ".spec.replicas", "name": "Replicas", "priority": 1, "type": "integer"},
        {"jsonPath": ".status.readyReplicas", "name": "Ready", "type": "integer"},
        {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
    ]
    assert version["subresources"] == {
        "scale": {
            "labelSelectorPath": ".status.selector",
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
        },
        "status": {},
    }
    assert version["selectableFields"] == [{"jsonPath": ".spec.owner"}, {"jsonPath": ".spec.name"}]
    assert version["deprecated"] is True and version["deprecationWarning"] == "use v2"
    assert crd["spec"]["names"]["categories"] == ["all"]


def test_descriptions_from_docstrings(crd: dict[str, Any], spec: dict[str, Any]) -> None:
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert root["description"] == "A kind that uses every marker."
    assert spec["description"] == "Everything at once."
    assert prop(spec, "template")["description"] == "An embedded, typed object."


# ---------------------------------------------------------------- refused definitions


def _refused(match: str, body: dict[str, Any], **keywords: Any) -> None:
    with pytest.raises(ModelDefinitionError, match=match):
        type(KubeModel)("Bad", (KubeModel,), body, **keywords)


@pytest.mark.parametrize(
    ("annotation", "match"),
    [
        (
            Annotated[int, Field(min_length=1)],
            r"Bad\.f: min_length applies to strings, lists and maps, not integer",
        ),
        (Annotated[int, Field(pattern="x")], r"Bad\.f: pattern applies to strings, not integer"),
        (Annotated[str, Field(ge=1)], r"Bad\.f: Ge applies to integers and numbers, not string"),
        (Annotated[str, ListType.SET], r"Bad\.f: ListType applies to lists, not string"),
        (Annotated[list[Port], ListType.SET], r"Bad\.f: ListType.SET needs scalar items"),
        (Annotated[list[Port], ListType.MAP], r"Bad\.f: ListType.MAP needs ListMapKeys"),
        (
            Annotated[list[str], ListMapKeys("x")],
            r"Bad\.f: ListType.MAP needs items that are objects",
        ),
        (Annotated[list[Port], ListMapKeys("nope")], r"Bad\.f: list map key 'nope' is not a field"),
        (
            Annotated[list[Port], ListType.ATOMIC, ListMapKeys("name")],
            r"Bad\.f: ListMapKeys needs ListType.MAP",
        ),
        (Annotated[str, MapType.ATOMIC], r"Bad\.f: MapType applies to maps and objects"),
        (Annotated[str, Nullable], r"Bad\.f: Nullable needs a type that admits None"),
        (Annotated[list[str], Format("uri")], r"Bad\.f: Format applies to strings and numbers"),
        (Annotated[str, EmbeddedResource], r"Bad\.f: EmbeddedResource applies to"),
        (
            Annotated[int, PreserveUnknownFields],
            r"Bad\.f: PreserveUnknownFields applies to objects",
        ),
        (Annotated[Port, PreserveUnknownFields], r"Bad\.f: PreserveUnknownFields on a model field"),
        (
            Annotated[list[int], Selectable],
            r"Bad\.f: Selectable applies to string, integer and boolean",
        ),
        (Annotated[dict[str, Any], PrinterColumn("X")], r"Bad\.f: PrinterColumn applies to"),
        (int | list[str], r"Bad\.f: the union int \| list cannot be expressed"),
        (Port | Color, r"Bad\.f: the union Port \| Color cannot be expressed"),
        (set[str], r"Bad\.f: sets have no stable order"),
        (dict[int, str], r"Bad\.f: map keys must be strings"),
        (complex, r"Bad\.f: type complex cannot be expressed"),
        (Literal["a", 1], r"Bad\.f: enum values must all have one JSON type"),
    ],
)
def test_markers_on_wrong_types_fail_at_class_creation(annotation: Any, match: str) -> None:
    _refused(match, {"__annotations__": {"f": annotation}})


def test_transition_rules_need_correlatable_places() -> None:
    class Item(KubeModel):
        name: Annotated[str, Immutable()]

    _refused(
        r"Bad\.f: transition rules .* not allowed inside items of a list",
        {"__annotations__": {"f": list[Item]}},
    )
    _refused(
        r"Bad\.f: transition rules",
        {"__annotations__": {"f": Annotated[list[Item], ListType.ATOMIC]}},
    )

    class Ok(KubeModel):  # inside a list-map the items correlate by key
        f: Annotated[list[Item], ListMapKeys("name")]

    assert Ok.__name__ == "Ok"


def test_list_map_keys_must_be_required_scalars() -> None:
    class Item(KubeModel):
        name: str | None = None
        sub: Port

    _refused(
        r"Bad\.f: list map key 'name' must be required or have a default",
        {"__annotations__": {"f": Annotated[list[Item], ListMapKeys("name")]}},
    )
    _refused(
        r"Bad\.f: list map key 'sub' must be a scalar field",
        {"__annotations__": {"f": Annotated[list[Item], ListMapKeys("sub")]}},
    )


def test_one_of_groups_name_optional_fields() -> None:
    _refused(
        r"Bad: ExactlyOneOf names 'c', which is not a field",
        {"__annotations__": {"a": int | None, "b": int | None}, "a": None, "b": None},
        rules=[ExactlyOneOf("a", "c")],
    )
    _refused(
        r"Bad: AtMostOneOf: field 'a' is required",
        {"__annotations__": {"a": int, "b": int | None}, "b": None},
        rules=[AtMostOneOf("a", "b")],
    )


def test_recursive_models_are_refused() -> None:
    with pytest.raises(ModelDefinitionError, match=r"Node: recursive types cannot be expressed"):

        class Node(KubeModel):
            children: list[Node] | None = None


def test_marker_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="reason"):
        Rule("self > 0", reason="Nope")
    with pytest.raises(ValueError, match="optional_old_self"):
        Rule("self > 0", optional_old_self=True)
    with pytest.raises(ValueError, match="field_path"):
        Rule("self > 0", field_path="spec.x")
    with pytest.raises(ValueError, match="at least two"):
        ExactlyOneOf("a")
    with pytest.raises(ModelDefinitionError, match="rules="):
        type(KubeModel)("Bad", (KubeModel,), {}, rules=["self > 0"])


def test_printer_column_and_selectable_are_refused_in_lists() -> None:
    class Item(KubeModel):
        name: Annotated[str, Selectable]

    _refused(
        r"Bad\.f: a selectable field cannot be inside a list item",
        {"__annotations__": {"f": list[Item] | None}, "f": None},
    )


def test_int32_alias_has_format() -> None:
    class WithFormat(KubeModel):
        count: Int32

    from kubewerk.model._schemagen import model_fragment

    assert model_fragment(WithFormat).schema["properties"]["count"] == {
        "format": "int32",
        "type": "integer",
    }


# ---------------------------------------------------------------- the marker units


FIELD_MARKERS: list[Any] = [
    Field(ge=1).metadata[0],
    Field(gt=1).metadata[0],
    Field(le=1).metadata[0],
    Field(lt=1).metadata[0],
    Field(multiple_of=2).metadata[0],
    Field(min_length=1).metadata[0],
    Field(max_length=1).metadata[0],
    Field(pattern="x").metadata[0],
    Format("uri"),
    Title("t"),
    Nullable,
    PreserveUnknownFields,
    EmbeddedResource,
    Selectable,
    ListType.SET,
    ListMapKeys("k"),
    MapType.ATOMIC,
    Rule("self > 0"),
    Immutable(),
    PrinterColumn("P"),
]


@pytest.mark.parametrize("marker", FIELD_MARKERS, ids=repr)
def test_every_field_marker_has_a_schema_unit(marker: Any) -> None:
    from kubewerk.model._markerschema import _unit_for

    assert _unit_for(marker) is not None


def test_a_new_marker_is_one_unit_plus_registration() -> None:
    from kubewerk.model._markerschema import MarkerTarget, marker_unit

    class Example:
        """A marker only this test knows."""

        def __init__(self, value: str) -> None:
            self.value = value

    @marker_unit(Example)
    def _example(marker: Example, target: MarkerTarget) -> None:
        target.require(target.json_type == "string", "Example", "strings")
        target.schema["example"] = marker.value

    class WithExample(KubeModel):
        name: Annotated[str, Example("web-1")]

    from kubewerk.model._schemagen import model_fragment

    assert model_fragment(WithExample).schema["properties"]["name"] == {
        "example": "web-1",
        "type": "string",
    }
    _refused(
        r"Bad\.f: Example applies to strings, not integer",
        {"__annotations__": {"f": Annotated[int, Example("x")]}},
    )
