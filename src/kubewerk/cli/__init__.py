"""The ``kubewerk`` command.

Each subcommand lives in its own module under ``kubewerk.cli`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a callable taking the
parsed ``argparse.Namespace`` and returning the process exit code. Exit codes (the
README's "Exit codes" table has every command's): 0 success; 1 the command did its work
and the result is a failure (lint findings at the fail level, differences, a failed sync
target, ``run``'s cluster gone or refusing it); 2 it could not do its work: a usage
error, unreadable input, an unusable kubeconfig, a cluster it reads that does not answer
or refuses the credentials; 130 Ctrl-C. An error is one ``kubewerk: error:`` line on
stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# the commands each module registers: ``kubewerk lint ...`` loads ``govern`` alone
COMMANDS: dict[str, str] = {
    "up": "up",
    "demo": "demo",
    "gen": "gen",
    "lint": "govern",
    "compat": "govern",
    "validate": "govern",
    "graph": "graph",
    "policy": "policy",
    "run": "run",
    "dashboard": "dashboard",
    "diff": "sync",
    "sync": "sync",
    "webhook": "webhook",
    "audit": "audit",
}

# the modules that register commands, in the order of the help's command list
SUBCOMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))


class UsageError(Exception):
    """A user mistake: printed as ``kubewerk: error: <message>`` with exit code 2."""


def one_line(text: str) -> str:
    """``text`` with every run of whitespace, newlines included, as one space: a message
    from a library that spreads over lines (PyYAML's "in <string>, line L, column C"
    marks) printed as the single line an error of the command must be."""
    return " ".join(text.split())


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``kubewerk`` parser with every subcommand, or, when ``command`` names one
    (``COMMANDS``), with only the module that registers it imported: a command pays for
    its own imports, not for every other command's (the dependency graph's pulls in
    the whole lifecycle kernel). Unknown names and ``None`` load everything, so help,
    the list of choices and argparse's errors are as they always were."""
    parser = argparse.ArgumentParser(
        prog="kubewerk",
        description="Kubernetes custom resources: define, govern, serve, reconcile, observe.",
    )
    from kubewerk import __version__

    parser.add_argument("--version", action="version", version=f"kubewerk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    only = COMMANDS.get(command) if command is not None else None
    for name in SUBCOMMAND_MODULES:
        if only is None or name == only:
            module = importlib.import_module(f"kubewerk.cli.{name}")
            module.register(sub)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names: its first word that is not an option (the top-level
    options, -h and --version, take no value)."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``kubewerk`` command and return its exit code.

    Guarantees: a command given ``--max-input-bytes`` reads every input under that limit
    (:mod:`kubewerk.cli.input_limit`); a :class:`UsageError` prints one
    ``kubewerk: error:`` line and gives 2, and so does running out of memory;
    Ctrl-C at any moment (while the subcommands load, while arguments are parsed, while
    the command runs) gives 130 (128 + SIGINT, as a shell reports it) and no traceback.
    """
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(_command_of(words))
        args = parser.parse_args(words)
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help()
            return 2
        limit = getattr(args, "max_input_bytes", None)
        if limit is None:
            code: int = func(args)
        else:
            from kubewerk.core.inputs import input_limit

            with input_limit(limit):
                code = func(args)
    except UsageError as exc:
        print(f"kubewerk: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        # inputs are bounded (--max-input-bytes), but what they expand to may still not fit
        print(
            "kubewerk: error: out of memory: the inputs are too large for this machine; "
            "give fewer or smaller ones",
            file=sys.stderr,
        )
        return 2
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
