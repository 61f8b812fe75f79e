"""docs/lifecycle.md's claims that can drift from the code: the metric families, the
default lifecycle, the strategies and their defaults, the module table."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest

import kubewerk.lifecycle
from kubewerk.lifecycle import DEFAULT_LIFECYCLE
from kubewerk.lifecycle.metrics import LifecycleMetrics
from kubewerk.lifecycle.strategy import STRATEGIES

DOC = (Path(__file__).resolve().parents[2] / "docs" / "lifecycle.md").read_text()


def test_the_metric_families_listed_are_the_ones_served() -> None:
    metrics = LifecycleMetrics(CollectorRegistry())
    metrics.transitioned("K.g", "A", "B", 1.0)
    metrics.count_objects("K.g", lambda: {"A": 1})
    served = set(re.findall(r"^# TYPE (\S+) ", generate_latest(metrics.registry).decode(), re.M))
    served = {re.sub(r"_total$", "", n) for n in served if not n.endswith("_created")}
    section = DOC[DOC.index("**Metrics**") :]
    listed = {re.sub(r"_total$", "", n) for n in re.findall(r"`(kubewerk_[a-z_]+)\{", section)}
    assert listed == served


def test_the_default_lifecycle_is_the_one_described() -> None:
    described = re.search(
        r"`DEFAULT_LIFECYCLE` \(phases `Phase`\): (.*?)\n\S*\s*Deleting is terminal", DOC, re.S
    )
    assert described is not None
    text = " ".join(described.group(1).split())
    table = "; ".join(
        f"{m.value} → {' | '.join(t.value for t in DEFAULT_LIFECYCLE.targets(m))}"
        for m in DEFAULT_LIFECYCLE.members
        if DEFAULT_LIFECYCLE.targets(m)
    )
    assert text == table + ";"


def test_the_strategy_table_has_every_strategy_with_its_defaults() -> None:
    for name, defaults in STRATEGIES.items():
        row = next(line for line in DOC.splitlines() if line.startswith(f"| `{name}`"))
        for key, value in defaults.items():
            number = int(value) if float(value).is_integer() else value
            if key in ("base", "cap") and name == "rate_limited":
                assert f"`{key}`" in row
            else:
                assert f"`{key}={number}`" in row, (name, key, row)


def test_the_module_table_lists_every_module() -> None:
    package = Path(kubewerk.lifecycle.__file__).parent
    modules = {p.name for p in package.glob("*.py")} - {"__init__.py"}
    section = DOC[DOC.index("## Inside the package") :]
    listed = set(re.findall(r"`([a-z_]+\.py)`", section.split("\n\nThe model layer")[0]))
    assert modules <= listed, sorted(modules - listed)
