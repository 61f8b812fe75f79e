"""Built-in kinds' enums as a cluster publishes them: kube-apiserver (``OpenAPIEnums`` on,
its default since 1.24) gives every field whose Go type is marked ``+enum`` an ``enum``
keyword and a "Possible enum values" paragraph in its description, in ``/openapi/v2`` and
in ``/openapi/v3``; kubectl's v3 explain prints them as ``ENUM:`` / ``enum:`` lines. The
values are documentation only: kube validates enums in its validation code, never from
OpenAPI, so the 422 texts stay those of the validation and a value outside the list where
kube has no check is kept.

Expected data: kubernetes-sigs/reference-docs gen-apidocs/config/v1_36/swagger.json (kube's
document taken with the gate on); output: kubectl 1.33's explain templates
(staging/src/k8s.io/kubectl/pkg/explain/v2/templates/plaintext.tmpl, ``extractEnum``).
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.kinds import k8s_openapi
from kubewerk.apiserver.server import EmbeddedServer
from tests.apiserver.helpers import json_call

REPO = Path(__file__).resolve().parents[2]
RECREATE = "Kill all existing pods before creating new ones."
ROLLING = (
    "Replace the old ReplicaSets by new one using rolling update i.e gradually scale down "
    "the old ReplicaSets and scale up the new one."
)
STRATEGY_TYPE_DESCRIPTION = (
    'Type of deployment. Can be "Recreate" or "RollingUpdate". Default is RollingUpdate.'
    f'\n\nPossible enum values:\n - `"Recreate"` {RECREATE}\n - `"RollingUpdate"` {ROLLING}'
)
"""``DeploymentStrategy.type``'s description as kube-apiserver serves it."""

CASES: list[tuple[str, str, str, str, list[str]]] = [
    ("apps/v1", "apps.v1.DeploymentStrategy", "type", "", ["Recreate", "RollingUpdate"]),
    (
        "v1",
        "core.v1.ServiceSpec",
        "type",
        "",
        ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
    ),
    ("v1", "core.v1.Container", "imagePullPolicy", "", ["Always", "IfNotPresent", "Never"]),
    ("v1", "core.v1.ServicePort", "protocol", "", ["SCTP", "TCP", "UDP"]),
    (
        "v1",
        "core.v1.HostPathVolumeSource",
        "type",
        "",
        [
            "",
            "BlockDevice",
            "CharDevice",
            "Directory",
            "DirectoryOrCreate",
            "File",
            "FileOrCreate",
            "Socket",
        ],
    ),
    ("v1", "core.v1.PersistentVolumeClaimSpec", "accessModes", "items", []),
    ("batch/v1", "batch.v1.CronJobSpec", "concurrencyPolicy", "", ["Allow", "Forbid", "Replace"]),
    (
        "networking.k8s.io/v1",
        "networking.v1.HTTPIngressPath",
        "pathType",
        "",
        ["Exact", "ImplementationSpecific", "Prefix"],
    ),
]
"""(group-version, definition under ``io.k8s.api.``, field, where the enum sits (the field
or its ``items``), its values; ``[]``: as in the vendored definition)."""
CASE_IDS = [f"{c[1]}.{c[2]}" for c in CASES]


def _document_path(gv: str) -> str:
    return "/openapi/v3/api/v1" if gv == "v1" else f"/openapi/v3/apis/{gv}"


def _enum_site(prop: dict[str, Any], where: str) -> dict[str, Any]:
    site = prop[where] if where else prop
    assert isinstance(site, dict), prop
    return site


def _check_paragraph(prop: dict[str, Any], where: str) -> None:
    """kube-openapi adds "Possible enum values" to a field of an enum type; a list of them
    carries the enum on its ``items`` and keeps its own description."""
    paragraph = "\n\nPossible enum values:\n - `"
    assert (paragraph in prop["description"]) == (where == ""), prop


@pytest.fixture(scope="module")
def app() -> ApiServer:
    """Every built-in kind; no socket."""
    return EmbeddedServer("memory").app


@pytest.fixture(scope="module")
def tserver() -> Iterator[EmbeddedServer]:
    """One server for this module's kubectl runs (each test keeps its own kubeconfig and
    discovery cache through the ``kubectl`` fixture)."""
    srv = EmbeddedServer("memory").start_in_thread()
    try:
        yield srv
    finally:
        srv.stop_thread()


# -- the vendored data -----------------------------------------------------------------


def test_vendored_definitions_carry_kubes_enums() -> None:
    strategy = k8s_openapi.definition("io.k8s.api.apps.v1.DeploymentStrategy")
    assert strategy is not None
    assert strategy["properties"]["type"] == {
        "description": STRATEGY_TYPE_DESCRIPTION,
        "enum": ["Recreate", "RollingUpdate"],
        "type": "string",
    }


def test_source_records_the_enum_count() -> None:
    spec = importlib.util.spec_from_file_location(
        "vendor_k8s_openapi", REPO / "scripts" / "vendor_k8s_openapi.py"
    )
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    count = script.enum_count(k8s_openapi.definitions())
    assert count > 80
    source = (REPO / "src/kubewerk/apiserver/kinds/openapi_data/SOURCE.md").read_text()
    assert f"- schemas with `enum`: {count}\n" in source
    assert "- repository: kubernetes-sigs/reference-docs\n" in source
    assert script.enum_count({"a": {"properties": {"b": {"type": "string"}}}}) == 0


# -- the served documents --------------------------------------------------------------


@pytest.mark.parametrize(("gv", "name", "field", "where", "values"), CASES, ids=CASE_IDS)
async def test_v3_publishes_the_enum(
    app: ApiServer, gv: str, name: str, field: str, where: str, values: list[str]
) -> None:
    status, doc = await json_call(app, "GET", _document_path(gv))
    assert status == 200, doc
    full = "io.k8s.api." + name
    prop = doc["components"]["schemas"][full]["properties"][field]
    vendored = k8s_openapi.definition(full)
    assert vendored is not None
    expected = values or _enum_site(vendored["properties"][field], where)["enum"]
    assert _enum_site(prop, where)["enum"] == expected
    _check_paragraph(prop, where)


@pytest.mark.parametrize(("gv", "name", "field", "where", "values"), CASES, ids=CASE_IDS)
async def test_v2_publishes_the_enum(
    app: ApiServer, gv: str, name: str, field: str, where: str, values: list[str]
) -> None:
    status, doc = await json_call(app, "GET", "/openapi/v2")
    assert status == 200
    full = "io.k8s.api." + name
    prop = doc["definitions"][full]["properties"][field]
    vendored = k8s_openapi.definition(full)
    assert vendored is not None
    assert prop == vendored["properties"][field]
    assert _enum_site(prop, where)["enum"] == (values or _enum_site(prop, where)["enum"])
    _check_paragraph(prop, where)


# -- validation is kube's code, not OpenAPI's enum -------------------------------------

DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d"},
    "spec": {
        "selector": {"matchLabels": {"a": "b"}},
        "strategy": {"type": "Bogus"},
        "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "Sometimes"}]},
        },
    },
}
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "s"},
    "spec": {"type": "Bogus", "ports": [{"port": 80, "protocol": "QUIC"}]},
}


async def test_unsupported_values_keep_the_validation_texts(app: ApiServer) -> None:
    status, body = await json_call(
        app, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOYMENT
    )
    assert status == 422
    assert body["message"] == (
        'Deployment.apps "d" is invalid: [spec.template.spec.containers[0].imagePullPolicy: '
        'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never", '
        'spec.strategy.type: Unsupported value: "Bogus": supported values: "Recreate", '
        '"RollingUpdate"]'
    )
    status, body = await json_call(app, "POST", "/api/v1/namespaces/default/services", SERVICE)
    assert status == 422
    assert body["message"] == (
        'Service "s" is invalid: [spec.ports[0].protocol: Unsupported value: "QUIC": '
        'supported values: "SCTP", "TCP", "UDP", spec.type: Unsupported value: "Bogus": '
        'supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]'
    )


async def test_a_value_outside_the_enum_without_a_kube_check_is_kept(app: ApiServer) -> None:
    """``NodeStatus.phase`` lists Pending/Running/Terminated, but kube validates no node
    phase: the object is stored as sent."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n-enum"}}
    node["status"] = {"phase": "Weird"}
    status, body = await json_call(app, "POST", "/api/v1/nodes", node)
    assert status == 201, body
    assert body["status"]["phase"] == "Weird"


# -- kubectl explain (1.33, dispatched by the server's version) ------------------------


def test_kubectl_explain_field_shows_enum(kubectl: Any) -> None:
    out = kubectl("explain", "deployment.spec.strategy.type").stdout
    assert out.startswith(
        "GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n\n"
        "FIELD: type <string>\nENUM:\n    Recreate\n    RollingUpdate\n\n"
        "DESCRIPTION:\n"
        '    Type of deployment. Can be "Recreate" or "RollingUpdate". Default is\n'
        "    RollingUpdate.\n    \n    Possible enum values:\n"
        f'     - `"Recreate"` {RECREATE}\n'
    ), out


def test_kubectl_explain_fields_list_shows_enum(kubectl: Any) -> None:
    out = kubectl("explain", "deployment.spec.strategy").stdout
    assert "\n  type\t<string>\n  enum: Recreate, RollingUpdate\n    Type of deployment." in out, (
        out
    )


def test_kubectl_explain_openapiv2_shows_the_enum_description(kubectl: Any) -> None:
    """kubectl's v2 explain prints no ENUM line (its model printer has none) on a cluster
    either; the enum reaches it in the description."""
    out = kubectl("explain", "deployment.spec.strategy.type", "--output=plaintext-openapiv2").stdout
    assert out.startswith(
        "KIND:     Deployment\nVERSION:  apps/v1\n\nFIELD:    type <string>\n\nDESCRIPTION:\n"
    ), out
    assert re.search(r"\n     Possible enum values:\n     - `\"Recreate\"` Kill all", out), out
    assert "ENUM" not in out and "enum:" not in out
