"""docs/simulate.md stays true: its example runs as written (a Deployment becomes
Available on the simulated cluster, then a node is failed), the ``kubewerk up --simulate``
synopsis lists the real options, and the defaults the page gives are the code's."""

from __future__ import annotations

import argparse
import dataclasses
import re

import pytest

from kubewerk.apiserver.simulate import ManualClock, NodePool, Simulation, SimulationConfig
from kubewerk.cli import build_parser

from .pages import fenced, page, section, subparser, synopsis_mismatch

DOC = page("simulate")


def test_the_example_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    [example] = [b for b in fenced(DOC) if b.lang == "python"]
    exec(compile(example.text, f"docs/simulate.md:{example.line}", "exec"), {})
    assert capsys.readouterr().out == "web is Available\n"


def test_the_up_synopsis_lists_the_simulation_options() -> None:
    [synopsis] = [b.text for b in fenced(DOC) if b.text.startswith("kubewerk up --simulate")]
    up = subparser(build_parser(), "up")
    [group] = [g for g in up._action_groups if g.title == "simulated cluster"]
    simulation = argparse.ArgumentParser(add_help=False)
    for action in group._group_actions:
        simulation._add_action(action)
    assert synopsis_mismatch(synopsis, simulation) == []


def test_the_configuration_defaults_are_the_codes() -> None:
    text = section(DOC, "## Configuration (`SimulationConfig`)")
    config = SimulationConfig()
    fields = {f.name for f in dataclasses.fields(config)}
    named = set(re.findall(r"`([a-z_]+)`", text)) - {"nodes"}
    assert named == fields - {"nodes"}
    given = dict(re.findall(r"`([a-z_]+)` (\"[^\"]*\"|[0-9.]+)", text))
    assert given, text
    for name, value in given.items():
        expected = value.strip('"') if value.startswith('"') else float(value)
        assert getattr(config, name) == expected, name
    pool_fields = re.search(r"NodePool\(([^)]*)\)", text)
    assert pool_fields is not None
    assert [f.strip() for f in pool_fields.group(1).split(",")] == [
        f.name for f in dataclasses.fields(NodePool)
    ]


def test_the_time_section_names_real_methods() -> None:
    for method in ("advance", "set"):
        assert callable(getattr(ManualClock, method))
    for method in ("settle", "fail_node", "recover_node"):
        assert callable(getattr(Simulation, method))
