"""Typed decoding of built-in bodies, unsupported subresources and resources kubewerk
does not serve, over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import Api

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


def deployment(**spec: Any) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
            **spec,
        },
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"replicas": "3"},
            "json: cannot unmarshal string into Go struct field "
            "DeploymentSpec.spec.replicas of type int32",
        ),
        (
            {"replicas": 1.5},
            "json: cannot unmarshal number 1.5 into Go struct field "
            "DeploymentSpec.spec.replicas of type int32",
        ),
        (
            {"paused": "yes"},
            "json: cannot unmarshal string into Go struct field "
            "DeploymentSpec.spec.paused of type bool",
        ),
        (
            {"template": {"spec": {"containers": "nginx"}}},
            "json: cannot unmarshal string into Go struct field "
            "PodSpec.spec.template.spec.containers of type []v1.Container",
        ),
        (
            {
                "template": {
                    "spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}
                }
            },
            "json: cannot unmarshal string into Go struct field "
            "ContainerPort.spec.template.spec.containers.ports.containerPort of type int32",
        ),
        (
            {"selector": {"matchLabels": {"app": 1}}},
            "json: cannot unmarshal number into Go struct field "
            "LabelSelector.spec.selector.matchLabels of type string",
        ),
    ],
)
async def test_wrong_types_are_400_with_go_messages(
    api: Api, body: dict[str, Any], message: str
) -> None:
    status, out = await api.post(DEPLOYMENTS, deployment(**body))
    assert status == 400, out
    assert out["reason"] == "BadRequest"
    assert out["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: ' + message
    )


async def test_quantities_and_int_or_strings_take_numbers_and_strings(api: Api) -> None:
    body = deployment(strategy={"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}})
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": 1, "memory": "1Gi"}}
    status, out = await api.post(DEPLOYMENTS, body)
    assert status == 201, out
    assert out["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": "25%"}


async def test_unknown_fields_follow_field_validation(api: Api) -> None:
    body = deployment(bogus=1)
    body["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    status, out = await api.post(DEPLOYMENTS + "?fieldValidation=Strict", body)
    assert status == 400
    assert out["message"] == (
        "strict decoding error: "
        'unknown field "spec.template.spec.containers[0].imagePullPolicyy", '
        'unknown field "spec.bogus"'
    )
    status, out = await api.post(DEPLOYMENTS, body)
    assert status == 201
    assert "bogus" not in out["spec"]
    assert "imagePullPolicyy" not in out["spec"]["template"]["spec"]["containers"][0]
    status, _ = await api.delete(DEPLOYMENTS + "/web")
    status, out = await api.request("POST", DEPLOYMENTS + "?fieldValidation=Warn", body, headers={})
    assert status == 201


async def test_unknown_fields_are_warned_about(aserver: EmbeddedServer) -> None:
    import aiohttp
    import orjson

    body = deployment(bogus=1)
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            aserver.url + DEPLOYMENTS,
            data=orjson.dumps(body),
            headers={"Content-Type": "application/json"},
        ) as resp,
    ):
        assert resp.status == 201
        warnings = resp.headers.getall("Warning", [])
    assert any(
        'unknown field \\"spec.bogus\\"' in w or 'unknown field "spec.bogus"' in w for w in warnings
    ), warnings


async def test_unsupported_subresources_say_so(api: Api) -> None:
    status, _ = await api.post(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    assert status == 201
    for sub in ("log", "exec", "attach", "portforward", "proxy"):
        status, out = await api.get(f"{PODS}/p/{sub}")
        assert status == 405, (sub, out)
        assert out["reason"] == "MethodNotAllowed"
        assert out["message"].startswith(f"pods/{sub} is not supported by kubewerk: ")
    status, out = await api.get(f"{PODS}/p/nosuchthing")
    assert status == 404


async def test_resources_not_served_are_named(api: Api) -> None:
    for path, group, resource in (
        ("/apis/storage.k8s.io/v1/csidrivers", "storage.k8s.io", "csidrivers"),
        ("/api/v1/namespaces/default/bindings", "", "bindings"),
        ("/apis/apps/v1/namespaces/default/widgets", "apps", "widgets"),
    ):
        status, out = await api.get(path)
        assert status == 404 and out["reason"] == "NotFound", out
        assert out["details"]["kind"] == resource
        assert out["details"].get("group", "") == group
        assert "is not served by kubewerk" in out["details"]["causes"][0]["message"]
    # a subresource of the served Namespace type is not mistaken for a resource
    status, out = await api.get("/api/v1/namespaces/default/status")
    assert status == 200 and out["kind"] == "Namespace"


def test_string_maps_are_checked_per_kind() -> None:
    """Only the fields a kind's schema declares ``map[string]string`` must hold strings:
    a ``data`` of another shape in another kind is that kind's business."""
    from kubewerk.apiserver.admission import Admission, AdmissionRequest
    from kubewerk.apiserver.kinds import configmaps
    from kubewerk.apiserver.registry import ServedResource
    from kubewerk.core.errors import ApiError

    admission = Admission()
    cm = configmaps.resource_type()
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": 1}}
    with pytest.raises(ApiError, match="cannot unmarshal number into Go struct field"):
        admission.prune_builtin(AdmissionRequest("CREATE", cm, "v1", bad, None, "Ignore"))
    raw = ServedResource(
        group="example.com",
        resource="revisions",
        kind="Revision",
        list_kind="RevisionList",
        singular="revision",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        schemas={"v1": {"type": "object", "properties": {"data": {"type": "object"}}}},
    )
    obj: dict[str, Any] = {"data": {"spec": {"x": 1}}}
    admission.prune_builtin(AdmissionRequest("CREATE", raw, "v1", obj, None, "Ignore"))
    assert obj["data"] == {"spec": {"x": 1}}


# -- the compiled decoder against a plain walk of the schema ---------------------------


class _ReferenceDecoder:
    """The typed decode written as a direct recursive walk of the vendored schema (the
    decoder before it was compiled), kept as the oracle the compiled one must match
    answer for answer."""

    def __init__(self, definitions: dict[str, Any]) -> None:
        self.defs = definitions

    def decode(self, obj: dict[str, Any], root: str) -> list[str]:
        unknown: list[str] = []
        self._object(obj, self.defs.get(root) or {}, root.rsplit(".", 1)[-1], "", "", unknown)
        return unknown

    def _deref(self, schema: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            return self.defs.get(name) or {}, name
        return schema, None

    def _go_type(self, schema: dict[str, Any]) -> str:
        target, name = self._deref(schema)
        if name is not None:
            parts = name.split(".")
            return f"{parts[-2]}.{parts[-1]}"
        kind = target.get("type")
        if kind == "array":
            items = target.get("items")
            return "[]" + (self._go_type(items) if isinstance(items, dict) else "interface {}")
        if kind == "object":
            extra = target.get("additionalProperties")
            if isinstance(extra, dict):
                return "map[string]" + self._go_type(extra)
            return "map[string]interface {}"
        scalars = {
            ("string", ""): "string",
            ("string", "byte"): "[]uint8",
            ("integer", "int32"): "int32",
            ("integer", "int64"): "int64",
            ("integer", ""): "int",
            ("number", "double"): "float64",
            ("number", ""): "float64",
            ("boolean", ""): "bool",
        }
        key = (str(kind or ""), str(target.get("format") or ""))
        return scalars.get(key) or scalars.get((key[0], ""), "interface {}")

    def _fail(self, value: Any, struct: str, json_path: str, go_type: str) -> ValueError:
        from kubewerk.core.gofmt import unmarshal_kind

        what = unmarshal_kind(value)
        if what == "number" and go_type in ("int", "int32", "int64") and isinstance(value, float):
            what = f"number {value!r}"
        return ValueError(
            f"json: cannot unmarshal {what} into Go struct field "
            f"{struct}.{json_path} of type {go_type}"
        )

    def _object(
        self,
        obj: dict[str, Any],
        schema: dict[str, Any],
        struct: str,
        json_path: str,
        path: str,
        unknown: list[str],
    ) -> None:
        props = schema.get("properties")
        if not isinstance(props, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
            return
        for key in list(obj):
            value = obj[key]
            field_path = f"{path}.{key}" if path else key
            if key not in props:
                if key not in ("apiVersion", "kind") or path:
                    del obj[key]
                    unknown.append(field_path)
                continue
            if value is None:
                del obj[key]
                continue
            field_json = f"{json_path}.{key}" if json_path else key
            self._value(value, props[key], struct, field_json, field_path, unknown)

    def _value(
        self,
        value: Any,
        schema: dict[str, Any],
        struct: str,
        json_path: str,
        path: str,
        unknown: list[str],
    ) -> None:
        target, name = self._deref(schema)
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if name == "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
            if not (isinstance(value, str) or is_int):
                raise self._fail(value, struct, json_path, "intstr.IntOrString")
            return
        if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise self._fail(value, struct, json_path, "resource.Quantity")
            return
        if target.get("x-kubernetes-preserve-unknown-fields"):
            return
        kind = target.get("type")
        if kind == "object" or "properties" in target:
            if not isinstance(value, dict):
                raise self._fail(value, struct, json_path, self._go_type(schema))
            if isinstance(target.get("properties"), dict):
                inner = name.rsplit(".", 1)[-1] if name else struct
                self._object(value, target, inner, json_path, path, unknown)
                return
            extra = target.get("additionalProperties")
            if isinstance(extra, dict):
                for key, item in value.items():
                    if item is not None:
                        self._value(item, extra, struct, json_path, f"{path}.{key}", unknown)
            return
        if kind == "array":
            if not isinstance(value, list):
                raise self._fail(value, struct, json_path, self._go_type(schema))
            items = target.get("items")
            if isinstance(items, dict):
                for index, item in enumerate(value):
                    if item is not None:
                        self._value(item, items, struct, json_path, f"{path}[{index}]", unknown)
            return
        ok = {
            "string": isinstance(value, str),
            "integer": is_int,
            "number": isinstance(value, int | float) and not isinstance(value, bool),
            "boolean": isinstance(value, bool),
        }.get(str(kind), True)
        if not ok:
            raise self._fail(value, struct, json_path, self._go_type(schema))


class _Text(str):
    """A string subclass: what a YAML or custom decoder could hand over."""


class _Number(int):
    """An int subclass (not bool)."""


def _random_value(
    rng: Any, defs: dict[str, Any], schema: dict[str, Any], depth: int, *, wrong: float
) -> Any:
    """A random JSON value for ``schema``: mostly well typed, sometimes (``wrong``) of
    another type, null, or with unknown members; ``depth`` bounds the nesting."""
    odd: list[Any] = [None, "s", _Text("t"), 7, _Number(8), 1.5, 2.0, True, [], {}, [1], {"k": 1}]
    if rng.random() < wrong:
        return rng.choice(odd)
    ref = schema.get("$ref")
    name = ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None
    target = defs.get(name) or {} if name else schema
    if name == "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
        return rng.choice([80, "http", "25%", _Number(3)])
    if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
        return rng.choice(["100m", 1, 0.5, "1Gi"])
    kind = target.get("type")
    if depth <= 0 and kind in ("object", "array", None):
        return rng.choice([{}, [], None, "x"]) if rng.random() < wrong else None
    props = target.get("properties")
    if isinstance(props, dict):
        keys = sorted(props)
        out: dict[str, Any] = {}
        for key in rng.sample(keys, min(len(keys), rng.randint(0, 4))):
            out[key] = _random_value(rng, defs, props[key], depth - 1, wrong=wrong)
        if rng.random() < wrong:
            out[rng.choice(["bogus", "kind", "apiVersion", "extra"])] = rng.choice(odd)
        return {k: v for k, v in out.items() if not (v is None and rng.random() < 0.5)}
    if kind == "object":
        extra = target.get("additionalProperties")
        if isinstance(extra, dict):
            return {
                f"k{i}": _random_value(rng, defs, extra, depth - 1, wrong=wrong)
                for i in range(rng.randint(0, 2))
            }
        return {"any": [1, {"x": None}]}
    if kind == "array":
        items = target.get("items")
        if isinstance(items, dict):
            return [
                _random_value(rng, defs, items, depth - 1, wrong=wrong)
                for _ in range(rng.randint(0, 2))
            ]
        return [1, "a"]
    return {
        "string": "v",
        "integer": rng.choice([3, -1, _Number(2)]),
        "number": rng.choice([1, 2.5]),
        "boolean": rng.choice([True, False]),
    }.get(str(kind), {"free": "form"})


def _decode_both(root: str, body: dict[str, Any]) -> tuple[Any, Any]:
    import copy

    from kubewerk.apiserver.kinds import k8s_openapi
    from kubewerk.apiserver.kinds.typed_decode import TypedDecoder, TypeMismatch

    defs = k8s_openapi.definitions()
    answers = []
    for decoder in (TypedDecoder(defs), _ReferenceDecoder(defs)):
        obj = copy.deepcopy(body)
        try:
            answers.append(("ok", decoder.decode(obj, root), obj))
        except (TypeMismatch, ValueError) as exc:
            answers.append(("error", str(exc), None))
    return answers[0], answers[1]


def test_compiled_decoder_answers_as_the_schema_walk() -> None:
    """Every vendored kind, random bodies (wrong types, nulls, unknown fields, subclass
    values, nested lists and maps): the same dropped paths in the same order, the same
    object left behind, the same Go message."""
    import random

    from kubewerk.apiserver.kinds import k8s_openapi

    defs = k8s_openapi.definitions()
    roots = sorted(n for n, s in defs.items() if s.get("x-kubernetes-group-version-kind"))
    assert len(roots) > 40
    rng = random.Random(1335)
    outcomes = {"ok": 0, "error": 0, "unknown": 0}
    for root in roots:
        for attempt in range(30):
            wrong = (0.0, 0.02, 0.08, 0.2)[attempt % 4]
            body = _random_value(rng, defs, {"$ref": "#/definitions/" + root}, 7, wrong=wrong)
            if not isinstance(body, dict):
                continue
            compiled, reference = _decode_both(root, body)
            assert compiled == reference, (root, body)
            outcomes[compiled[0]] += 1
            outcomes["unknown"] += bool(compiled[0] == "ok" and compiled[1])
    # the bodies reached every kind of answer, many times
    assert min(outcomes.values()) > 100, outcomes


@pytest.mark.parametrize(
    ("root", "body", "answer"),
    [
        # a type error inside an inline object is reported in the named struct around it
        (
            "io.k8s.api.core.v1.Pod",
            {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": True}}}]}},
            "json: cannot unmarshal bool into Go struct field "
            "ResourceRequirements.spec.containers.resources.limits of type resource.Quantity",
        ),
        # a definition that reaches itself (JSONSchemaProps), deep down
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            {
                "spec": {
                    "versions": [
                        {
                            "name": "v1",
                            "schema": {
                                "openAPIV3Schema": {
                                    "properties": {"a": {"properties": {"b": {"minLength": "1"}}}}
                                }
                            },
                        }
                    ]
                }
            },
            "json: cannot unmarshal string into Go struct field JSONSchemaProps."
            "spec.versions.schema.openAPIV3Schema.properties.properties.minLength of type int64",
        ),
        (
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
            {
                "spec": {
                    "versions": [
                        {"schema": {"openAPIV3Schema": {"properties": {"a": {"typo": 1}}}}},
                        None,
                    ]
                },
                "status": None,
            },
            ["spec.versions[0].schema.openAPIV3Schema.properties.a.typo"],
        ),
        # subclasses of the JSON types are accepted as their base type
        (
            "io.k8s.api.apps.v1.Deployment",
            {"kind": _Text("Deployment"), "spec": {"replicas": _Number(2), "paused": False}},
            [],
        ),
        # apiVersion and kind are kept at the root only
        (
            "io.k8s.api.core.v1.ConfigMap",
            {"apiVersion": "v1", "data": {"a": "b"}, "metadata": {"kind": "x"}},
            ["metadata.kind"],
        ),
    ],
)
def test_decoder_paths(root: str, body: dict[str, Any], answer: Any) -> None:
    compiled, reference = _decode_both(root, body)
    assert compiled == reference
    assert compiled[1] == answer
