"""Updates of objects this server stored skip the unchanged top-level parts, with the
same outcome as full admission: same object, same warnings, same errors."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.admission import AdmissionRequest
from kubewerk.apiserver.kinds.custom import crd_to_type
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.schema_admission import SchemaAdmission
from kubewerk.core.errors import ApiError
from tests.apiserver.helpers import DEMO_CRD

JSON = dict[str, Any]
PROMETHEUS = (
    "crds",
    "prometheus-operator+prometheus-operator",
    "monitoring.coreos.com_prometheuses.yaml",
)


def rtype_of(crd: JSON) -> ServedResource:
    crd = copy.deepcopy(crd)
    crd.setdefault("metadata", {}).update({"uid": "u-1", "generation": 1})
    rtype = crd_to_type(crd)
    assert rtype is not None
    return rtype


def admit(
    adm: SchemaAdmission,
    rtype: ServedResource,
    version: str,
    obj: JSON,
    old: JSON | None,
    trusted: bool,
    validation: str = "Warn",
) -> tuple[str, Any]:
    """("ok", (object, warnings)) or ("error", (code, message, causes))."""
    req = AdmissionRequest(
        "UPDATE" if old is not None else "CREATE",
        rtype,
        version,
        copy.deepcopy(obj),
        copy.deepcopy(old) if old is not None else None,
        validation,  # type: ignore[arg-type]
        trusted_old=trusted,
    )
    try:
        adm.admit(req)
    except ApiError as err:
        status = err.to_status()
        return "error", (err.code, status["message"], (status.get("details") or {}).get("causes"))
    return "ok", (req.obj, req.warnings)


def stored(adm: SchemaAdmission, rtype: ServedResource, version: str, obj: JSON) -> JSON:
    """The object as a create admits it (what the store holds, trusted from then on)."""
    outcome, result = admit(adm, rtype, version, obj, None, False)
    assert outcome == "ok", result
    admitted, _ = result
    admitted["metadata"]["resourceVersion"] = "5"
    return admitted  # type: ignore[no-any-return]


def both(rtype: ServedResource, version: str, new: JSON, old: JSON) -> tuple[str, Any]:
    trusted = admit(SchemaAdmission(), rtype, version, new, old, True)
    full = admit(SchemaAdmission(), rtype, version, new, old, False)
    assert trusted == full
    return trusted


def variants(old: JSON, rng: random.Random) -> list[JSON]:
    """Updates of ``old``: status written (valid and not), metadata changed, spec changed."""
    out = []
    for status in ({"replicas": 2}, {"replicas": "two"}, {"replicas": 2, "unknownField": 1}, None):
        new = copy.deepcopy(old)
        if status is None:
            new.pop("status", None)
        else:
            new["status"] = {**(old.get("status") or {}), **status}
        out.append(new)
    relabelled = copy.deepcopy(old)
    relabelled["metadata"].setdefault("labels", {})["x"] = str(rng.random())
    out.append(relabelled)
    respec = copy.deepcopy(old)
    respec["spec"]["replicas"] = -1
    out.append(respec)
    return out


def test_demo_database_updates_match_full_admission() -> None:
    crd = yaml.safe_load(DEMO_CRD.read_text())
    rtype = rtype_of(crd)
    adm = SchemaAdmission()
    old = stored(
        adm,
        rtype,
        "v1",
        {
            "apiVersion": "demo.kubewerk.dev/v1",
            "kind": "Database",
            "metadata": {"name": "d", "namespace": "default"},
            "spec": {"engine": "mysql", "replicas": 3},
        },
    )
    rng = random.Random(1)
    outcomes = [both(rtype, "v1", new, old)[0] for new in variants(old, rng)]
    assert "ok" in outcomes and "error" in outcomes


def test_prometheus_status_and_metadata_updates_match_full_admission(corpus_dir: Path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from schema import make_object

    crd = yaml.safe_load(corpus_dir.joinpath(*PROMETHEUS).read_text())
    rtype = rtype_of(crd)
    adm = SchemaAdmission()
    rng = random.Random(3)
    for i in range(3):
        body = make_object(rng, i)
        old = stored(adm, rtype, "v1", body)
        old["status"] = {
            "availableReplicas": 1,
            "paused": False,
            "replicas": 1,
            "unavailableReplicas": 0,
            "updatedReplicas": 1,
        }
        for new in variants(old, rng):
            both(rtype, "v1", new, old)


RULES_CRD: JSON = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "things.example.dev"},
    "spec": {
        "group": "example.dev",
        "names": {"kind": "Thing", "plural": "things"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {}},
            }
        ],
    },
}


def rules_type(root: JSON) -> ServedResource:
    crd = copy.deepcopy(RULES_CRD)
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = root
    return rtype_of(crd)


@pytest.mark.parametrize(
    "root",
    [
        # a transition rule in spec fails on every update that leaves spec alone: still reported
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "x-kubernetes-validations": [
                        {"rule": "self.n != oldSelf.n", "message": "n must change"}
                    ],
                },
                "status": {"type": "object", "properties": {"m": {"type": "integer"}}},
            },
        },
        # a root rule sees spec and status together
        {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.status.m <= self.spec.n"}],
            "properties": {
                "spec": {"type": "object", "properties": {"n": {"type": "integer"}}},
                "status": {"type": "object", "properties": {"m": {"type": "integer"}}},
            },
        },
        # list-map duplicates in status next to an unchanged spec list
        {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "n": {"type": "integer"},
                        "tags": {
                            "type": "array",
                            "x-kubernetes-list-type": "set",
                            "items": {"type": "string"},
                        },
                    },
                },
                "status": {
                    "type": "object",
                    "properties": {
                        "m": {"type": "integer"},
                        "conds": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["type"],
                            "items": {
                                "type": "object",
                                "required": ["type"],
                                "properties": {"type": {"type": "string"}},
                            },
                        },
                    },
                },
            },
        },
    ],
)
def test_rules_that_see_unchanged_parts_are_still_checked(root: JSON) -> None:
    rtype = rules_type(root)
    adm = SchemaAdmission()
    old = stored(
        adm,
        rtype,
        "v1",
        {
            "apiVersion": "example.dev/v1",
            "kind": "Thing",
            "metadata": {"name": "t", "namespace": "default"},
            "spec": {"n": 1, "tags": ["a", "b"]},
            "status": {"m": 0},
        },
    )
    outcomes = []
    for status in ({"m": 1}, {"m": 5}, {"m": 1, "conds": [{"type": "A"}, {"type": "A"}]}):
        new = copy.deepcopy(old)
        new["status"] = status
        outcomes.append(both(rtype, "v1", new, old))
    assert any(o[0] == "error" for o in outcomes)
