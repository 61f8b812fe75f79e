"""Many kinds (issue 17): with 1,000 CRDs served, one CRD's change rebuilds only its own
group's OpenAPI documents and discovery entries, a CRD's status write rebuilds nothing,
and a schema compiles once per CRD generation, on first use only.

These count work (documents built, schemas compiled), never time: they fail when a path
that costs the number of CRDs comes back, whatever the machine.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from kubewerk.apiserver import discovery, openapi, openapi_v2, schema_admission
from kubewerk.apiserver.request import Target
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.core.jsoncopy import copy_json

JSON = dict[str, Any]

CRDS = 1000
GROUPS = 50
"""1,000 CRDs in 50 groups of 20 kinds, as a few Crossplane-style providers install them."""


def small_crd(i: int, groups: int = GROUPS) -> JSON:
    """The ``i``-th small CRD: kind ``Kind<i>`` in group ``g<i % groups>.scale.test``, one
    version with a two-field schema and one CEL rule."""
    group = f"g{i % groups}.scale.test"
    plural = f"kind{i}s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": f"kind{i}", "kind": f"Kind{i}"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": {"type": "integer", "default": 1},
                                        "name": {"type": "string", "maxLength": 63},
                                    },
                                    "x-kubernetes-validations": [
                                        {"rule": "self.size <= 100", "message": "too big"}
                                    ],
                                },
                                "status": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


async def _wait(predicate: Any, timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail("condition not met in time")
        await asyncio.sleep(0.01)


def _crd_target(srv: EmbeddedServer, name: str | None = None) -> Target:
    rtype = srv.app.registry.get("apiextensions.k8s.io", "customresourcedefinitions")
    assert rtype is not None
    return Target(rtype, "v1", None, name)


@pytest.fixture
def compiles() -> list[JSON]:
    """Every schema compiled by the server's admission, in order."""
    return []


@pytest.fixture
async def many(
    compiles: list[JSON], monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[EmbeddedServer]:
    """A memory server serving ``CRDS`` small CRDs, Established; ``compiles`` records each
    schema compiled by admission."""
    real = schema_admission.compile_schema

    def counting(schema: JSON) -> Any:
        compiles.append(schema)
        return real(schema)

    monkeypatch.setattr(schema_admission, "compile_schema", counting)
    async with EmbeddedServer("memory") as srv:
        target = _crd_target(srv)
        for i in range(CRDS):
            srv.app.api.create(target, small_crd(i), {})
        await _wait(lambda: sum(1 for t in srv.app.registry.all() if not t.builtin) == CRDS)
        # the controller's own status writes come back as events: let them settle
        await asyncio.sleep(0.2)
        yield srv


def _change_crd(srv: EmbeddedServer, name: str, change: Any) -> None:
    current = srv.store.get(_crd_target(srv).rtype.key("", name))
    assert current is not None
    new = copy_json(current)
    change(new)
    srv.app.api.update(_crd_target(srv, name), new, {})


async def test_one_crd_change_rebuilds_only_its_group(many: EmbeddedServer) -> None:
    registry = many.app.registry
    index = openapi.index(registry)
    assert len([gv for gv in index["paths"] if ".scale.test/" in gv]) == GROUPS
    openapi_v2.encoded(registry)
    before_agg, _ = discovery.aggregated(registry, False, "v2")
    other_group = next(i for i in before_agg["items"] if i["metadata"]["name"] == "g2.scale.test")
    v3_before, v2_before = openapi.BUILDS.v3_documents, openapi_v2.BUILDS.v2_groups
    types_before = openapi_v2.BUILDS.v2_types
    generation = registry.generation

    # Kind7 lives in g7.scale.test with 19 other kinds: a new field in its schema
    def add_field(crd: JSON) -> None:
        spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec_schema["properties"]["tier"] = {"type": "string"}

    _change_crd(many, "kind7s.g7.scale.test", add_field)
    await _wait(lambda: registry.generation != generation)
    await asyncio.sleep(0.1)

    new_index = openapi.index(registry)
    doc = orjson.loads(openapi.encoded_document(registry, "apis/g7.scale.test/v1") or b"")
    openapi_v2.encoded(registry).protobuf()
    after_agg, _ = discovery.aggregated(registry, False, "v2")
    # one v3 document (the changed group-version) was built, one v2 type part (Kind7's
    # new generation; its 19 neighbours' are kept) and one group gathered
    assert openapi.BUILDS.v3_documents - v3_before == 1
    assert openapi_v2.BUILDS.v2_groups - v2_before == 1
    assert openapi_v2.BUILDS.v2_types - types_before == 1
    assert (
        "tier"
        in doc["components"]["schemas"]["test.scale.g7.v1.Kind7"]["properties"]["spec"][
            "properties"
        ]
    )
    # the changed group's hash moved; every other group's stayed
    changed = [gv for gv in index["paths"] if index["paths"][gv] != new_index["paths"][gv]]
    assert changed == ["apis/g7.scale.test/v1"]
    # discovery kept every other group's entry as it was (the very same object)
    assert any(i is other_group for i in after_agg["items"])


async def test_hash_changes_only_when_the_document_does(many: EmbeddedServer) -> None:
    registry = many.app.registry
    gv = "apis/g3.scale.test/v1"
    before = openapi.index(registry)["paths"][gv]
    generation = registry.generation

    # printer columns are not part of the OpenAPI document: a new spec generation, same hash
    def add_column(crd: JSON) -> None:
        crd["spec"]["versions"][0]["additionalPrinterColumns"] = [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
        ]

    _change_crd(many, "kind3s.g3.scale.test", add_column)
    await _wait(lambda: registry.generation != generation)
    assert openapi.index(registry)["paths"][gv] == before


async def test_status_write_of_a_crd_rebuilds_nothing(many: EmbeddedServer) -> None:
    registry = many.app.registry
    openapi.index(registry)
    generation = registry.generation
    v3_before = openapi.BUILDS.v3_documents

    def relabel(crd: JSON) -> None:
        crd["metadata"].setdefault("labels", {})["touched"] = "yes"

    _change_crd(many, "kind5s.g5.scale.test", relabel)
    # the controller sees the event and finds the served type current
    await asyncio.sleep(0.2)
    assert registry.generation == generation
    openapi.index(registry)
    assert openapi.BUILDS.v3_documents == v3_before


async def test_schema_compiles_once_per_generation_on_first_use(
    many: EmbeddedServer, compiles: list[JSON]
) -> None:
    # 1,000 CRDs established: no custom resource written yet, nothing compiled
    assert compiles == []
    registry = many.app.registry
    rtype = registry.get("g9.scale.test", "kind9s")
    assert rtype is not None
    target = Target(rtype, "v1", "default")
    for n in range(3):
        many.app.api.create(
            target,
            {"apiVersion": "g9.scale.test/v1", "kind": "Kind9", "metadata": {"name": f"o{n}"}},
            {},
        )
    assert len(compiles) == 1
    generation = registry.generation

    def add_field(crd: JSON) -> None:
        spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec_schema["properties"]["zone"] = {"type": "string"}

    _change_crd(many, "kind9s.g9.scale.test", add_field)
    await _wait(lambda: registry.generation != generation)
    rtype = registry.get("g9.scale.test", "kind9s")
    assert rtype is not None and rtype.crd_generation == 2
    target = Target(rtype, "v1", "default")
    for n in range(3, 6):
        many.app.api.create(
            target,
            {"apiVersion": "g9.scale.test/v1", "kind": "Kind9", "metadata": {"name": f"o{n}"}},
            {},
        )
    assert len(compiles) == 2


async def test_deleting_a_crd_removes_only_its_type(many: EmbeddedServer) -> None:
    registry = many.app.registry
    served = sum(1 for t in registry.all() if not t.builtin)
    many.app.api.delete(_crd_target(many, "kind11s.g11.scale.test"), {}, {})
    await _wait(lambda: registry.by_crd("kind11s.g11.scale.test") is None)
    assert registry.get("g11.scale.test", "kind11s") is None
    assert sum(1 for t in registry.all() if not t.builtin) == served - 1
    assert [t.resource for t in registry.group("g11.scale.test")] == sorted(
        f"kind{i}s" for i in range(CRDS) if i % GROUPS == 11 and i != 11
    )


async def test_documents_are_built_ahead_when_the_server_is_quiet(
    many: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubewerk.apiserver import controllers

    monkeypatch.setattr(controllers, "WARM_QUIET", 0.05)
    registry = many.app.registry
    generation = registry.generation

    def add_field(crd: JSON) -> None:
        spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec_schema["properties"]["tier"] = {"type": "string"}

    _change_crd(many, "kind13s.g13.scale.test", add_field)
    await _wait(lambda: registry.generation != generation)
    # nobody asked: the controller builds every group's documents once it is idle
    await _wait(lambda: registry.has_memo(("openapi.v2.encoded",)), timeout=60)
    assert registry.has_memo(("openapi.v3.hash", "v1"), "g13.scale.test")
    v3_before, v2_before = openapi.BUILDS.v3_documents, openapi_v2.BUILDS.v2_groups
    openapi.index(registry)
    openapi_v2.encoded(registry).protobuf()
    assert (openapi.BUILDS.v3_documents, openapi_v2.BUILDS.v2_groups) == (v3_before, v2_before)
