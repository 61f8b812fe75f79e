"""Every ``kubewerk`` command and option says what it is for in ``--help``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from kubewerk.cli import COMMANDS, _command_of, build_parser
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


def _choices(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def test_a_command_loads_only_the_module_that_registers_it() -> None:
    """``kubewerk lint`` builds the parser from kubewerk.cli.govern alone; every command
    of the full parser is in COMMANDS and found in the module COMMANDS names."""
    everything = _choices(build_parser())
    assert everything == set(COMMANDS)
    for command, module in COMMANDS.items():
        alone = _choices(build_parser(command))
        assert command in alone
        assert alone == {c for c, m in COMMANDS.items() if m == module}
    assert _choices(build_parser("no-such-command")) == everything


def test_the_command_word_is_the_first_that_is_not_an_option() -> None:
    assert _command_of(["lint", "crds/"]) == "lint"
    assert _command_of(["--version"]) is None
    assert _command_of(["-h", "gen", "crd"]) == "gen"
    assert _command_of(["--", "lint"]) is None
    assert _command_of([]) is None
