"""Every ``kubewerk`` command and option says what it is for in ``--help``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from kubewerk.cli import build_parser
from kubewerk.cli.kubectl_plugin import _parser as plugin_parser


def _parsers(
    parser: argparse.ArgumentParser, path: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_subcommand_and_option_has_a_help_text() -> None:
    missing: list[str] = []
    everything = [
        *_parsers(build_parser(), "kubewerk"),
        *_parsers(plugin_parser(), "kubectl kubewerk"),
    ]
    for path, parser in everything:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                listed = {choice.dest for choice in action._choices_actions}
                missing += [f"{path} {name}" for name in action.choices if name not in listed]
                missing += [f"{path} {c.dest}" for c in action._choices_actions if not c.help]
            elif not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing
