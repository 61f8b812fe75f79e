"""Admission's compiled schemas at many kinds (issue 17): each served version's schema
compiles once and stays compiled while its kind is served, however many kinds are in
use (no cache that clears itself past a size and recompiles in a loop); a CRD's new
generation and a deleted CRD take their compiled schemas with them.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from kubewerk.apiserver import schema_admission
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.schema_admission import SchemaAdmission

JSON = dict[str, Any]

KINDS = 5000


def kind(i: int, generation: int = 1) -> ServedResource:
    """The ``i``-th CRD kind as the registry serves it (a new object per generation)."""
    schema: JSON = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"size": {"type": "integer", "default": i % 7}},
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    return ServedResource(
        group=f"g{i // 20}.scale.test",
        resource=f"kind{i}s",
        kind=f"Kind{i}",
        list_kind=f"Kind{i}List",
        singular=f"kind{i}",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        builtin=False,
        schemas={"v1": schema},
        crd_name=f"kind{i}s.g{i // 20}.scale.test",
        crd_uid=f"uid-{i}",
        crd_generation=generation,
    )


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[JSON]:
    """Every schema admission compiles, in order."""
    seen: list[JSON] = []
    real = schema_admission.compile_schema

    def counting(schema: JSON) -> Any:
        seen.append(schema)
        return real(schema)

    monkeypatch.setattr(schema_admission, "compile_schema", counting)
    return seen


def read(adm: SchemaAdmission, rtype: ServedResource) -> JSON:
    return adm.on_read(rtype, "v1", {"spec": {}})


def test_five_thousand_kinds_in_use_compile_once_each(compiles: list[JSON]) -> None:
    adm = SchemaAdmission()
    kinds = [kind(i) for i in range(KINDS)]
    for _ in range(3):  # round robin over every kind, three times
        for i, rtype in enumerate(kinds):
            assert read(adm, rtype) == {"spec": {"size": i % 7}}
    assert len(compiles) == KINDS


def test_a_new_generation_compiles_again_and_drops_the_old(compiles: list[JSON]) -> None:
    adm = SchemaAdmission()
    old = kind(3, generation=1)
    read(adm, old)
    found = adm.version_schema(old, "v1")
    assert found is not None
    derived_ref = weakref.ref(found)
    new = kind(3, generation=2)
    read(adm, new)
    read(adm, new)
    assert len(compiles) == 2
    # the registry no longer holds the old generation's type: nothing keeps its schema
    del old, found
    gc.collect()
    assert derived_ref() is None  # its compiled schema with it


def test_a_kind_no_longer_served_keeps_nothing_compiled(compiles: list[JSON]) -> None:
    adm = SchemaAdmission()
    rtype = kind(11)
    read(adm, rtype)
    found = adm.version_schema(rtype, "v1")
    assert found is not None
    derived_ref = weakref.ref(found)
    del rtype, found
    gc.collect()
    assert derived_ref() is None  # its compiled schema with it
    assert len(compiles) == 1


def test_reduced_variants_for_updates_are_kept_per_version(compiles: list[JSON]) -> None:
    """A trusted update leaving ``spec`` unchanged compiles its reduced schema once."""
    from kubewerk.apiserver.admission import AdmissionRequest

    adm = SchemaAdmission()
    rtype = kind(5)
    rtype.status_subresource = True
    for n in range(3):
        meta = {"name": "a", "namespace": "default", "resourceVersion": "7", "uid": "u"}
        obj = {"metadata": dict(meta), "spec": {"size": 2}, "status": {"n": n}}
        old = {"metadata": dict(meta), "spec": {"size": 2}, "status": {}}
        req = AdmissionRequest(
            "UPDATE", rtype, "v1", obj, old, "Strict", subresource="status", trusted_old=True
        )
        adm.admit(req)
    assert len(compiles) == 2  # the full schema and the one without spec
    found = adm.version_schema(rtype, "v1")
    assert found is not None and list(found.partials) == [frozenset({"spec"})]
