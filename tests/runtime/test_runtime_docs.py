"""docs/runtime.md's claims that can drift from the code: the metric families it lists,
the ``kubewerk run`` options, and what the embedded server does with strategic merge
and server-side apply patches (its "Not done yet" list). Each test fails when the code
changes under the page, so the page changes with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubewerk.client import CONFIGMAP, Client, ResourceType
from kubewerk.client.errors import ApiError
from kubewerk.runtime.metrics import Metrics

DOC = (Path(__file__).resolve().parents[2] / "docs" / "runtime.md").read_text()


def section(title: str) -> str:
    """The text from the line starting with ``title`` to the next heading or bold lead."""
    start = DOC.index(title)
    end = re.compile(r"\n(?:#|\*\*)").search(DOC, start + len(title))
    return DOC[start : end.start() if end else len(DOC)]


def test_the_metric_families_listed_are_the_ones_served() -> None:
    listed = set(
        re.findall(
            r"`((?:controller_runtime|workqueue|leader_election)_[a-z_]+)",
            section("**Probes and metrics**"),
        )
    )
    exposition = Metrics(process=False).exposition().decode()
    served = set(re.findall(r"^# TYPE (\S+) ", exposition, re.M))
    assert listed == served


def test_the_kubewerk_run_synopsis_lists_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    from kubewerk.cli import build_parser

    documented = set(re.findall(r"\[(--[a-z-]+)", section("## `kubewerk run`")))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", capsys.readouterr().out)) - {"--help"}
    assert documented == options


WIDGET = ResourceType("docs.kubewerk.dev", "v1", "Widget", "widgets")
WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.docs.kubewerk.dev"},
    "spec": {
        "group": "docs.kubewerk.dev",
        "names": {
            "kind": "Widget",
            "plural": "widgets",
            "singular": "widget",
            "listKind": "WidgetList",
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


async def test_strategic_merge_and_apply_on_the_embedded_server(
    kube_client: Client, install_crds: object
) -> None:
    # "Strategic merge patches ... work on built-in kinds ... on the embedded server"
    await kube_client.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default"},
            "data": {"a": "1"},
        }
    )
    patched = await kube_client.patch(
        CONFIGMAP, "c", {"data": {"b": "2"}}, "default", type="strategic"
    )
    assert patched["data"] == {"a": "1", "b": "2"}
    # "... a custom resource answers 415"
    await install_crds(WIDGET_CRD)  # type: ignore[operator]
    await kube_client.create(
        {
            "apiVersion": "docs.kubewerk.dev/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
        }
    )
    with pytest.raises(ApiError) as strategic:
        await kube_client.patch(WIDGET, "w", {"spec": {"a": 1}}, "default", type="strategic")
    assert strategic.value.code == 415
    # "Server-side apply ... works on both, with managedFields"
    applied = await kube_client.patch(
        CONFIGMAP,
        "c",
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"c": "3"}},
        "default",
        type="apply",
        field_manager="docs",
    )
    assert applied["data"] == {"a": "1", "b": "2", "c": "3"}
    managers = {e["manager"]: e["operation"] for e in applied["metadata"]["managedFields"]}
    assert managers["docs"] == "Apply"
    assert 'Server-side apply (`apply`,\n`type="apply"`) works on both' in DOC
