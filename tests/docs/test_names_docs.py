"""Every ``kubewerk.<package>...`` name the pages of this directory mention in code
spans exists (a module, or an attribute of one), so a reader who imports what a page
names gets it. Label and annotation domains (``kubewerk.dev/...``) and span attribute
names are not Python names: the span attributes of docs/observe.md are checked against
the tracing module instead."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from kubewerk.observe import tracing

from .pages import page, section

PAGES = ["apiserver", "govern", "lint-rules", "observe", "policy", "schema", "security"]
PAGES += ["simulate", "webhook"]
PACKAGES = {
    p.name
    for p in (Path(__file__).resolve().parents[2] / "src" / "kubewerk").iterdir()
    if p.is_dir() and (p / "__init__.py").exists()
}


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 1, -1):
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


@pytest.mark.parametrize("name", PAGES)
def test_every_kubewerk_name_on_the_page_exists(name: str) -> None:
    text = page(name)
    names = set(re.findall(r"`(kubewerk(?:\.[A-Za-z_]\w*)+)", text))
    names |= set(re.findall(r"\(`(kubewerk(?:\.[A-Za-z_]\w*)+)`", text))
    python = {n for n in names if n.split(".")[1] in PACKAGES}
    assert python or name in ("lint-rules", "simulate")
    missing = sorted(n for n in python if not _resolves(n))
    assert missing == []


def test_the_policy_engine_table_names_real_functions() -> None:
    engine = importlib.import_module("kubewerk.schema.admission_policy")
    text = section(page("policy"), "## The engine (`kubewerk.schema.admission_policy`)")
    table = "\n".join(line for line in text.splitlines() if line.startswith("| `"))
    named = set(re.findall(r"`([a-z_]+)\(", table)) | set(re.findall(r"\b([A-Z][a-z]\w+)\(", table))
    assert {"validate_policy", "admit", "compile_policy", "ParamStore"} <= named
    assert sorted(n for n in named if not hasattr(engine, n)) == []


def test_the_policy_composition_names_are_exported() -> None:
    policy = importlib.import_module("kubewerk.webhook.policy")
    text = page("policy")
    names = ["Policy", "ConfigMapParams", "rule", "check", "chain", "all_of", "any_of", "not_"]
    names += ["secret_ref_policy", "allowlist_configmap", "secret_ref_denials"]
    for name in names:
        assert re.search(rf"\b{name}\b", text), name
        assert hasattr(policy, name), name


def test_the_span_attributes_are_the_ones_set() -> None:
    tracing_section = section(page("observe"), "## Tracing (`kubewerk[otel]`)")
    attributes = set(re.findall(r"`(kubewerk\.[a-z]+)`", tracing_section))
    assert len(attributes) >= 6
    source = Path(tracing.__file__).read_text(encoding="utf-8")
    assert sorted(a for a in attributes if f'"{a}"' not in source) == []
