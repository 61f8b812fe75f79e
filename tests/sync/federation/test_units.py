"""The federation's pure parts: committed CRDs equal the models' output, placement
decisions (selector, taints and tolerations, PickN stability), rendering with overrides."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kubewerk.cli import main
from kubewerk.sync.federation import CRD_DIR, UNREACHABLE_TAINT, RenderError, decide, render

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def test_committed_crds_are_what_the_models_generate(tmp_path: Path) -> None:
    assert main(["gen", "crd", "kubewerk.sync.federation.models", "-o", str(tmp_path)]) == 0
    generated = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    committed = {p.name: p.read_bytes() for p in CRD_DIR.iterdir() if p.suffix == ".yaml"}
    assert len(generated) == 3
    assert committed == generated, (
        "regenerate: kubewerk gen crd kubewerk.sync.federation.models "
        "-o src/kubewerk/sync/federation/crds"
    )


def members(*specs: tuple[str, dict[str, str], list[dict[str, object]]]) -> list[dict[str, object]]:
    return [{"name": n, "labels": labels, "taints": taints} for n, labels, taints in specs]


FLEET = members(
    ("a", {"region": "eu"}, []),
    ("b", {"region": "eu"}, []),
    ("c", {"region": "us"}, []),
    ("d", {"region": "eu"}, [{"key": "maintenance", "value": "yes", "effect": "NoSelect"}]),
)


@pytest.mark.parametrize(
    ("spec", "expected", "satisfied"),
    [
        ({}, ("a", "b", "c"), True),
        ({"clusterSelector": {"matchLabels": {"region": "eu"}}}, ("a", "b"), True),
        (
            {
                "clusterSelector": {
                    "matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["eu"]}]
                }
            },
            ("c",),
            True,
        ),
        (
            {"tolerations": [{"key": "maintenance", "operator": "Exists"}]},
            ("a", "b", "c", "d"),
            True,
        ),
        ({"tolerations": [{"key": "maintenance", "value": "no"}]}, ("a", "b", "c"), True),
        ({"tolerations": [{"operator": "Exists"}]}, ("a", "b", "c", "d"), True),
        ({"clusterSelector": {"matchLabels": {"region": "mars"}}}, (), False),
        ({"strategy": "PickN", "numberOfClusters": 5}, ("a", "b", "c"), False),
    ],
)
def test_decide_selects_by_labels_and_taints(
    spec: dict[str, object], expected: tuple[str, ...], satisfied: bool
) -> None:
    d = decide(FLEET, spec, identity="ns/p", now=NOW)
    assert d.clusters == expected
    assert d.satisfied is satisfied


def test_pick_n_is_stable_and_sticky() -> None:
    spec = {"strategy": "PickN", "numberOfClusters": 2}
    first = decide(FLEET, spec, identity="ns/p", now=NOW)
    assert len(first.clusters) == 2
    assert decide(FLEET, spec, identity="ns/p", now=NOW).clusters == first.clusters
    # a new member does not move existing picks
    grown = [*FLEET, {"name": "e", "labels": {}, "taints": []}]
    assert decide(grown, spec, identity="ns/p", now=NOW, previous=first.clusters).clusters == (
        first.clusters
    )
    # losing one pick replaces only that one
    lost = first.clusters[0]
    smaller = [m for m in FLEET if m["name"] != lost]
    again = decide(smaller, spec, identity="ns/p", now=NOW, previous=first.clusters)
    assert first.clusters[1] in again.clusters and lost not in again.clusters
    # different placements spread over different members for some identity
    picks = {decide(FLEET, spec, identity=f"ns/p{i}", now=NOW).clusters for i in range(20)}
    assert len(picks) > 1


def test_unreachable_is_tolerated_for_300_seconds_by_default() -> None:
    taint = {"key": UNREACHABLE_TAINT, "effect": "NoSelect", "timeAdded": "2025-01-01T00:00:00Z"}
    fleet = members(("a", {}, [taint]), ("b", {}, []))
    d = decide(fleet, {}, identity="x", now=NOW + timedelta(seconds=299))
    assert d.clusters == ("a", "b")
    assert d.review_at == NOW + timedelta(seconds=300)
    assert decide(fleet, {}, identity="x", now=NOW + timedelta(seconds=300)).clusters == ("b",)
    # an explicit toleration without seconds keeps it for ever
    forever = {"tolerations": [{"key": UNREACHABLE_TAINT, "operator": "Exists"}]}
    assert decide(fleet, forever, identity="x", now=NOW + timedelta(days=9)).clusters == ("a", "b")
    # one with tolerationSeconds 0 drops it at once
    never = {
        "tolerations": [{"key": UNREACHABLE_TAINT, "operator": "Exists", "tolerationSeconds": 0}]
    }
    assert decide(fleet, never, identity="x", now=NOW).clusters == ("b",)


def test_render_applies_overrides_in_order_and_marks_the_copy() -> None:
    template = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c"},
        "data": {"k": "1"},
    }
    overrides = [
        {"clusterName": "a", "patch": [{"op": "replace", "path": "/data/k", "value": "2"}]},
        {
            "clusterSelector": {"matchLabels": {"tier": "gold"}},
            "patch": [{"op": "add", "path": "/data/gold", "value": "y"}],
        },
    ]
    out = render(
        template,
        owner_namespace="ns",
        owner_name="fo",
        namespaced=True,
        member="a",
        labels={"tier": "gold"},
        overrides=overrides,
    )
    assert out["data"] == {"k": "2", "gold": "y"}
    assert out["metadata"]["namespace"] == "ns"
    assert out["metadata"]["annotations"]["federation.kubewerk.dev/federated-object"] == "ns/fo"
    other = render(
        template,
        owner_namespace="ns",
        owner_name="fo",
        namespaced=True,
        member="b",
        labels={},
        overrides=overrides,
    )
    assert other["data"] == {"k": "1"}
    with pytest.raises(RenderError, match=r"overrides\[0\]: may not change"):
        render(
            template,
            owner_namespace="ns",
            owner_name="fo",
            namespaced=True,
            member="a",
            labels={},
            overrides=[
                {
                    "clusterName": "a",
                    "patch": [{"op": "replace", "path": "/metadata/name", "value": "x"}],
                }
            ],
        )
    with pytest.raises(RenderError, match="not the FederatedObject's namespace"):
        render(
            {**template, "metadata": {"name": "c", "namespace": "other"}},
            owner_namespace="ns",
            owner_name="fo",
            namespaced=True,
            member="a",
            labels={},
        )
    with pytest.raises(RenderError, match=r"overrides\[0\]"):
        render(
            template,
            owner_namespace="ns",
            owner_name="fo",
            namespaced=True,
            member="a",
            labels={},
            overrides=[{"clusterName": "a", "patch": [{"op": "remove", "path": "/data/missing"}]}],
        )
