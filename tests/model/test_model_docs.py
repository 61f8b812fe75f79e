"""docs/model.md stays true.

Its multi-version example is run as written: the converters convert, ``kubewerk gen crd``
of it gives a CRD that ``kubewerk lint`` passes, and the embedded API server serves it
the way the doc says. Every ``kubewerk.…`` name the doc mentions exists.
"""

from __future__ import annotations

import asyncio
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.cli import main
from kubewerk.model import convert, convert_dict, crd_for
from kubewerk.schema import validate_crd

from ..apiserver.helpers import Api

DOC = Path(__file__).resolve().parents[2] / "docs" / "model.md"
MODULE = "kubewerk_docs_model_versions"


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


@pytest.fixture
def versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The first code block of "Versions and conversion", imported as a module."""
    source = _python_blocks(_section("Versions and conversion"))[0]
    (tmp_path / f"{MODULE}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    importlib.invalidate_caches()
    try:
        yield importlib.import_module(MODULE)
    finally:
        sys.modules.pop(MODULE, None)


def test_gen_crd_of_the_multi_version_example_passes_lint(
    versions: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "crds"
    assert main(["gen", "crd", MODULE, "-o", str(out)]) == 0
    [path] = out.iterdir()
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1", "v1alpha1"]
    assert crd["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {"name": "webhook-service", "namespace": "system", "path": "/convert"}
            },
            "conversionReviewVersions": ["v1"],
        },
    }
    assert [e.message() for e in validate_crd(crd)] == []
    capsys.readouterr()
    status = main(["lint", str(out)])
    report = capsys.readouterr().out
    assert status == 0, report
    assert " 0 error(s)" in report, report


def test_gen_crd_names_the_conversion_service_given(
    versions: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["gen", "crd", MODULE, "--conversion-webhook", "ops/widgets-webhook:9443/convert"])
        == 0
    )
    crd = yaml.safe_load(capsys.readouterr().out)
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"] == {
        "service": {"name": "widgets-webhook", "namespace": "ops", "path": "/convert", "port": 9443}
    }
    assert main(["gen", "crd", MODULE, "--conversion-webhook", "ops"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kubewerk: error: --conversion-webhook: ") and "Traceback" not in err


def _alpha_object() -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1alpha1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"image": "nginx", "tag": "1.27"},
    }


def test_the_example_converters_round_trip(versions: ModuleType) -> None:
    alpha = versions.WidgetV1alpha1.from_dict(_alpha_object())
    v1 = convert(alpha, "v1")
    assert v1.to_dict()["spec"] == {"image": {"repository": "nginx", "tag": "1.27"}}
    assert convert(v1, versions.WidgetV1alpha1).to_dict() == alpha.to_dict()
    assert convert_dict(_alpha_object(), "example.com/v1")["apiVersion"] == "example.com/v1"


async def test_the_embedded_server_calls_the_examples_conversion_webhook(
    versions: ModuleType,
) -> None:
    """It accepts the Webhook CRD and converts through the webhook the CRD names: with no
    webhook listening, a write in the other version fails as on a cluster (500, nothing
    stored). tests/apiserver/admission/test_conversion_webhook.py runs a real one."""
    crd = crd_for(versions.WidgetV1)
    base = "/apis/example.com/{}/namespaces/default/widgets"
    async with EmbeddedServer("memory") as server:
        api = Api(server.url)
        try:
            status, body = await api.post(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd
            )
            assert status == 201, body
            for _ in range(100):
                status, _ = await api.get(base.format("v1alpha1"))
                if status == 200:
                    break
                await asyncio.sleep(0.02)
            status, created = await api.post(base.format("v1alpha1"), _alpha_object())
            assert status == 500 and created["reason"] == "InternalError", created
            assert (
                "conversion webhook for example.com/v1alpha1, Kind=Widget failed"
                in (created["message"])
            )
            status, listed = await api.get(base.format("v1"))
            assert status == 200 and listed["items"] == []
        finally:
            await api.close()


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(target, attr):
                return False
            target = getattr(target, attr)
        return True
    return False


def test_every_kubewerk_name_in_the_doc_exists() -> None:
    names = set(
        re.findall(r"\bkubewerk(?:\.[A-Za-z_][A-Za-z0-9_]*)+", DOC.read_text(encoding="utf-8"))
    )
    assert "kubewerk.core.errors.FieldError" in names
    assert sorted(name for name in names if not _resolves(name)) == []
