"""examples/platform_demo without a server: the committed CRDs are exactly what the models
generate (so they cannot drift from the Python), the stack is valid against them and
its graph has no cycle and no missing object, and the operator registers all 17 kinds
with the lifecycles the CRDs enforce."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubewerk.cli import main

REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "examples" / "platform_demo"


def test_the_committed_crds_are_what_the_models_generate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["gen", "crd", "examples.platform_demo.models", "-o", str(tmp_path)]) == 0
    generated = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    committed = {p.name: p.read_bytes() for p in (PLATFORM / "crds").iterdir()}
    assert len(generated) == 17
    assert sorted(committed) == sorted(generated), "regenerate: kubewerk gen crd " + (
        "examples.platform_demo.models -o examples/platform_demo/crds"
    )
    stale = [name for name in generated if committed[name] != generated[name]]
    assert stale == [], (
        f"{stale} differ from the models: kubewerk gen crd examples.platform_demo.models "
        "-o examples/platform_demo/crds"
    )


def test_the_crds_carry_the_lifecycles_refs_and_printer_columns() -> None:
    from examples.platform_demo.models import KINDS

    for kind in KINDS:
        info = kind.kind_info()
        crd = yaml.safe_load((PLATFORM / "crds" / f"{info.group}_{info.plural}.yaml").read_text())
        version = crd["spec"]["versions"][0]
        phase = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["phase"]
        assert phase["enum"] == [p.value for p in info.lifecycle.members], kind
        assert "illegal phase transition" in phase["x-kubernetes-validations"][0]["message"]
        columns = [c["name"] for c in version["additionalPrinterColumns"]]
        assert columns[-2:] == ["Phase", "Age"], kind
        assert crd["spec"]["names"]["categories"] == ["platform"]
        annotations = crd["metadata"].get("annotations", {})
        assert ("kubewerk.dev/references" in annotations) == (info.kind != "Tenant"), kind


def test_the_stack_is_valid_and_its_graph_complete(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    crds, stack = "examples/platform_demo/crds", "examples/platform_demo/stack"
    assert main(["validate", "--crd", crds, stack]) == 0
    out = capsys.readouterr().out
    assert "0 error(s), 0 warning(s)" in out
    assert main(["graph", crds, stack, "-n", "acme"]) == 0
    out = capsys.readouterr().out
    assert out.endswith("19 objects, 32 references, 0 cycles, 0 unresolved references\n")


def test_the_operator_registers_the_17_kinds_with_their_lifecycles() -> None:
    import examples.platform_demo as example
    from examples.platform_demo.models import JOB_LIFECYCLE, KINDS, SCHEDULE_LIFECYCLE

    platform = example.platform
    assert example.manager is platform.manager
    assert len(platform.kinds) == 17
    for kind in KINDS:
        registration = platform.registration(kind)
        assert registration.lifecycle is kind.kind_info().lifecycle
        assert registration.teardown is not None  # every kind releases at the provider
    assert platform.registration(KINDS[13]).lifecycle is JOB_LIFECYCLE
    assert platform.registration(KINDS[14]).lifecycle is SCHEDULE_LIFECYCLE
