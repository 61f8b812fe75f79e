"""Typed resources: names, parsing, dumping, errors, metadata and conditions."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import orjson
import pytest
from pydantic import Field, ValidationError

from kubewerk.model import (
    Condition,
    Conditions,
    Immutable,
    InvalidObjectError,
    KubeModel,
    ModelDefinitionError,
    Nullable,
    ObjectMeta,
    Resource,
    crd_for,
    resource_class,
)
from kubewerk.model._naming import guess_plural, json_name, version_priority_key


class GadgetSpec(KubeModel):
    """Desired state of a gadget."""

    size: Annotated[int, Field(ge=1, le=10)]
    color: Literal["red", "green"] | None = None
    container_port: int | None = None
    labels_to_copy: list[str] | None = None
    note: Annotated[str | None, Nullable] = None
    extra: dict[str, Any] | None = None


class GadgetStatus(KubeModel):
    conditions: Conditions | None = None
    observed_generation: int | None = None


class Gadget(Resource[GadgetSpec, GadgetStatus], group="res.test.kubewerk.dev", short_names=["gd"]):
    """A gadget."""


class Policy(Resource[GadgetSpec, None], group="res.test.kubewerk.dev", scope="Cluster"):
    """A cluster-scoped kind without status."""


class LockSpec(KubeModel):
    holder: str | None = None


class Lock(Resource[None, None], group="res.test.kubewerk.dev"):
    """A spec-less kind: its data lives at the top level."""

    data: dict[str, str] | None = None
    """Arbitrary data."""


class Gateway(Resource[LockSpec, None], group="res.test.kubewerk.dev", version="v1beta1"):
    pass


class IngressClassV1alpha1(
    Resource[LockSpec, None], group="res.test.kubewerk.dev", version="v1alpha1"
):
    pass


def sample() -> dict[str, Any]:
    return {
        "apiVersion": "res.test.kubewerk.dev/v1",
        "kind": "Gadget",
        "metadata": {
            "name": "g1",
            "namespace": "default",
            "uid": "0b1e2c7e-1111-4222-8333-444455556666",
            "resourceVersion": "42",
            "generation": 2,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "web"},
            "annotations": {"a.example.com/x": "1"},
            "finalizers": ["res.test.kubewerk.dev/cleanup"],
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "cm",
                    "uid": "u1",
                    "controller": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kubectl",
                    "operation": "Apply",
                    "apiVersion": "res.test.kubewerk.dev/v1",
                    "time": "2024-05-01T10:00:00Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:size": {}}},
                }
            ],
        },
        "spec": {"size": 3, "containerPort": 8080, "extra": {"any": ["thing", 1, None]}},
        "status": {
            "observedGeneration": 2,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "AllGood",
                    "message": "",
                    "lastTransitionTime": "2024-05-01T10:00:05Z",
                    "observedGeneration": 2,
                }
            ],
        },
    }


def test_names_are_derived() -> None:
    info = Gadget.kind_info()
    assert (info.group, info.version, info.kind) == ("res.test.kubewerk.dev", "v1", "Gadget")
    assert (info.plural, info.singular, info.list_kind) == ("gadgets", "gadget", "GadgetList")
    assert info.scope == "Namespaced" and info.short_names == ("gd",)
    assert info.status_subresource is True
    assert Policy.kind_info().status_subresource is False
    assert Policy.kind_info().scope == "Cluster"
    assert Gateway.kind_info().plural == "gateways"
    # a trailing version suffix equal to the version is not part of the kind
    assert IngressClassV1alpha1.kind_info().kind == "IngressClass"
    assert IngressClassV1alpha1.kind_info().plural == "ingressclasses"
    assert resource_class("res.test.kubewerk.dev/v1", "Gadget") is Gadget


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        ("Widget", "widgets"),
        ("Policy", "policies"),
        ("Gateway", "gateways"),
        ("Ingress", "ingresses"),
        ("Box", "boxes"),
        ("Patch", "patches"),
        ("Endpoints", "endpoints"),
        ("ScaledObject", "scaledobjects"),
        ("Proxy", "proxies"),
    ],
)
def test_plural_guess(kind: str, plural: str) -> None:
    assert guess_plural(kind) == plural


def test_json_names_and_version_order() -> None:
    assert json_name("container_port") == "containerPort"
    assert json_name("from_") == "from"
    assert json_name("apiVersion") == "apiVersion"
    versions = ["v1alpha1", "v2", "v1beta1", "foo", "v1", "v1beta2", "v10"]
    assert sorted(versions, key=version_priority_key) == [
        "v10",
        "v2",
        "v1",
        "v1beta2",
        "v1beta1",
        "v1alpha1",
        "foo",
    ]


def test_round_trip_is_lossless() -> None:
    obj = sample()
    gadget = Gadget.from_dict(obj)
    assert gadget.spec.container_port == 8080
    assert gadget.metadata.creation_timestamp == datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
    assert gadget.status is not None and gadget.status.conditions is not None
    assert gadget.status.conditions[0].status == "True"
    assert gadget.to_dict() == obj
    assert orjson.loads(gadget.to_json()) == obj
    assert Gadget.from_json(orjson.dumps(obj)).to_dict() == obj


def test_dump_omits_unset_and_fills_api_version_and_kind() -> None:
    gadget = Gadget(metadata=ObjectMeta(name="x"), spec=GadgetSpec(size=2))
    assert gadget.to_dict() == {
        "apiVersion": "res.test.kubewerk.dev/v1",
        "kind": "Gadget",
        "metadata": {"name": "x"},
        "spec": {"size": 2},
    }
    # None in a field that is not nullable is left out; a nullable one keeps its null
    gadget.spec = GadgetSpec(size=2, color=None, note=None)
    assert gadget.to_dict()["spec"] == {"size": 2, "note": None}


def test_unknown_fields_are_dropped_except_where_preserved() -> None:
    obj = sample()
    obj["spec"]["unknownField"] = 1
    obj["topLevel"] = True
    dumped = Gadget.from_dict(obj).to_dict()
    assert "unknownField" not in dumped["spec"] and "topLevel" not in dumped
    assert dumped["spec"]["extra"] == {"any": ["thing", 1, None]}

    class Loose(KubeModel, preserve_unknown_fields=True):
        known: int | None = None

    loose = Loose.from_dict({"known": 1, "other": {"deep": [1]}})
    assert loose.to_dict() == {"known": 1, "other": {"deep": [1]}}


def test_parse_errors_have_kubernetes_paths() -> None:
    obj = sample()
    obj["spec"]["size"] = 11
    obj["spec"]["color"] = "blue"
    obj["spec"]["containerPort"] = "8080"
    obj["status"]["conditions"][0]["status"] = "Maybe"
    del obj["status"]["conditions"][0]["reason"]
    obj["metadata"]["labels"]["app"] = 1
    with pytest.raises(InvalidObjectError) as info:
        Gadget.from_dict(obj)
    messages = [e.message() for e in info.value.errors]
    assert messages == [
        "metadata.labels[app]: Invalid value: 1: metadata.labels[app] "
        'in body must be of type string: "integer"',
        "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
        'spec.color: Unsupported value: "blue": supported values: "red", "green"',
        'spec.containerPort: Invalid value: "8080": '
        'spec.containerPort in body must be of type integer: "string"',
        "status.conditions[0].status: Unsupported value: "
        '"Maybe": supported values: "True", "False", "Unknown"',
        "status.conditions[0].reason: Required value",
    ]
    assert str(info.value).startswith(
        'Gadget.res.test.kubewerk.dev "g1" is invalid: [metadata.labels[app]'
    )


def test_type_errors_name_the_json_type_the_api_server_names() -> None:
    # Go decodes an integer beyond int64 as a float64: the API server calls it a number,
    # in the parse error as in the schema's own answer
    obj = sample()
    obj["metadata"]["labels"]["app"] = 2**64
    with pytest.raises(InvalidObjectError) as info:
        Gadget.from_json(json.dumps(obj))
    [error] = info.value.errors
    assert error.message().endswith('metadata.labels[app] in body must be of type string: "number"')
    api_obj = sample()
    api_obj["spec"]["note"] = 2**64
    [error] = Gadget.compiled_schema().validate(api_obj, None)
    assert error.message().endswith('spec.note in body must be of type string: "number"')


def test_scalars_are_strict_like_the_api_server() -> None:
    with pytest.raises(ValidationError):
        GadgetSpec.model_validate({"size": "3"})
    with pytest.raises(ValidationError):
        GadgetSpec.model_validate({"size": 3, "labelsToCopy": [1]})
    with pytest.raises(ValidationError):
        GadgetStatus.model_validate({"conditions": [], "observedGeneration": True})
    # timestamps and enums still parse from their JSON forms
    cond = Condition.model_validate(
        {
            "type": "Ready",
            "status": "False",
            "reason": "R",
            "message": "m",
            "lastTransitionTime": "2024-01-02T03:04:05Z",
        }
    )
    assert cond.last_transition_time.year == 2024


def test_wrong_api_version_or_kind_is_rejected() -> None:
    obj = sample()
    obj["apiVersion"] = "res.test.kubewerk.dev/v2"
    with pytest.raises(InvalidObjectError) as info:
        Gadget.from_dict(obj)
    assert info.value.errors[0].field == "apiVersion"


def test_condition_constraints_and_helper() -> None:
    cond = Condition.make("Ready", True, "Reconciled", "done", observed_generation=3)
    assert cond.status == "True" and cond.last_transition_time.microsecond == 0
    dumped = cond.to_dict()
    assert set(dumped) == {
        "type",
        "status",
        "reason",
        "message",
        "lastTransitionTime",
        "observedGeneration",
    }
    for bad in (
        {"type": "not valid!"},
        {"reason": ""},
        {"reason": "1abc"},
        {"message": "x" * 32769},
        {"observedGeneration": -1},
        {"type": "x" * 317},
    ):
        with pytest.raises(ValidationError):
            Condition.model_validate({**dumped, **bad})
    schema = crd_for(Gadget)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    conditions = schema["properties"]["status"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    item = conditions["items"]
    assert item["required"] == ["lastTransitionTime", "message", "reason", "status", "type"]
    assert item["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert item["properties"]["reason"]["maxLength"] == 1024
    assert item["properties"]["type"]["maxLength"] == 316
    assert item["properties"]["observedGeneration"] == {
        "description": "The .metadata.generation the condition was set based upon.",
        "format": "int64",
        "minimum": 0,
        "type": "integer",
    }


def test_kinds_without_status_and_without_spec() -> None:
    policy_crd = crd_for(Policy)
    version = policy_crd["spec"]["versions"][0]
    assert policy_crd["spec"]["scope"] == "Cluster"
    assert "subresources" not in version
    props = version["schema"]["openAPIV3Schema"]["properties"]
    assert "status" not in props and "spec" in props

    lock = Lock.from_dict(
        {
            "apiVersion": "res.test.kubewerk.dev/v1",
            "kind": "Lock",
            "metadata": {"name": "l"},
            "data": {"k": "v"},
        }
    )
    assert lock.spec is None and lock.data == {"k": "v"}
    assert lock.to_dict() == {
        "apiVersion": "res.test.kubewerk.dev/v1",
        "kind": "Lock",
        "metadata": {"name": "l"},
        "data": {"k": "v"},
    }
    schema = crd_for(Lock)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "data"}
    assert schema["properties"]["data"]["description"] == "Arbitrary data."
    assert "required" not in schema


def test_optional_spec_may_be_left_out_but_required_spec_may_not() -> None:
    gateway = Gateway(metadata={"name": "g"})  # type: ignore[arg-type,call-arg]
    assert gateway.spec == LockSpec() and gateway.to_dict()["metadata"] == {"name": "g"}
    assert "spec" not in gateway.to_dict()
    with pytest.raises(ValidationError):
        Gadget(metadata=ObjectMeta(name="g"))  # type: ignore[call-arg]
    schema = crd_for(Gadget)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["required"] == ["spec"]
    assert "required" not in crd_for(Gateway)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_bad_kind_keywords_fail_at_class_creation() -> None:
    with pytest.raises(ModelDefinitionError, match="group"):

        class NoDot(Resource[LockSpec, None], group="nodot"):
            pass

    with pytest.raises(ModelDefinitionError, match="version"):

        class BadVersion(Resource[LockSpec, None], group="a.example.com", version="V1"):
            pass

    with pytest.raises(ModelDefinitionError, match="status_subresource"):

        class NoStatus(Resource[LockSpec, None], group="a.example.com", status_subresource=True):
            pass

    with pytest.raises(ModelDefinitionError, match="short name"):

        class BadShort(Resource[LockSpec, None], group="a.example.com", short_names=["Bad_"]):
            pass

    with pytest.raises(ModelDefinitionError, match="needs group"):

        class NoGroup(Resource[LockSpec, None], version="v1"):
            pass


def test_attribute_docstrings_are_read_from_the_class_source() -> None:
    from kubewerk.model._docstrings import attribute_docstrings

    class Documented(Resource[None, None], group="res.test.kubewerk.dev", kind="Documented"):
        """The class docstring is not a field's."""

        plain: int | None = None
        """  Indented
            and on two lines.
        """
        undocumented: int | None = None
        _assigned = 1
        """Follows a plain assignment: not a field docstring."""
        if True:
            inner: int | None = None
            """Inside a block of the class body."""

        class Nested:
            hidden: int
            """In a nested class: not ours."""

    assert attribute_docstrings(Documented) == {
        "plain": "Indented\nand on two lines.",
        "inner": "Inside a block of the class body.",
    }
    schema = crd_for(Documented)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["plain"]["description"] == "Indented\nand on two lines."
    assert "description" not in schema["properties"]["undocumented"]


def test_api_errors_leaves_an_old_object_given_as_a_dict_as_it_was() -> None:
    class DefaultedSpec(KubeModel):
        replicas: int = 1
        image: Annotated[str, Immutable()] | None = None

    class Defaulted(Resource[DefaultedSpec, None], group="res.test.kubewerk.dev"):
        """Defaults are applied to both sides of an update check."""

    old = {"apiVersion": "res.test.kubewerk.dev/v1", "kind": "Defaulted", "spec": {"image": "a"}}
    new = Defaulted.from_dict({**old, "spec": {"image": "b"}})
    [error] = new.api_errors(old=old)
    assert error.field == "spec.image"
    assert old == {
        "apiVersion": "res.test.kubewerk.dev/v1",
        "kind": "Defaulted",
        "spec": {"image": "a"},
    }
    assert Defaulted.from_dict(old).api_errors(old=old) == []
