"""Real kubectl resolves a short name to the first match in discovery order, and discovery
lists groups as kube-apiserver does (by group priority, every CRD group below the
built-ins): a CRD in ``a.io`` declaring the short name ``deploy`` does not take
``kubectl get deploy`` away from apps' Deployments, as on a real cluster (before, groups
were listed alphabetically and ``a.io`` won)."""

from __future__ import annotations

import orjson
import pytest
import yaml

from .conftest import KubectlRun

pytestmark = pytest.mark.e2e

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.a.io"},
    "spec": {
        "group": "a.io",
        "scope": "Namespaced",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["deploy"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }
        ],
    },
}
WIDGET = {"apiVersion": "a.io/v1", "kind": "Widget", "metadata": {"name": "w1"}}


def test_builtin_group_wins_a_short_name_clash(kc: KubectlRun) -> None:
    kc("apply", "-f", "-", input=yaml.safe_dump(CRD))
    kc("wait", "--for=condition=Established", "crd/widgets.a.io", "--timeout=10s")
    kc("apply", "-f", "-", input=yaml.safe_dump(WIDGET))

    # "deploy" is apps' Deployments (none here), not the widget a.io lists first by name
    got = kc("get", "deploy", "-o", "name")
    assert got.stdout == ""
    # kubectl's clash warning, as on a real cluster: the CRD ranks lower
    assert 'short name "deploy" could also match lower priority resource widgets.a.io' in (
        got.stderr
    )
    assert kc("get", "widgets", "-o", "name").stdout.split() == ["widget.a.io/w1"]

    # the /apis APIGroupList lists apps ahead of a.io too
    listed = orjson.loads(kc("get", "--raw", "/apis").stdout)
    names = [g["name"] for g in listed["groups"]]
    assert names.index("apps") < names.index("a.io") == len(names) - 1
