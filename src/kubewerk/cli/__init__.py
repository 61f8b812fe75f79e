"""The ``kubewerk`` command.

Each subcommand lives in its own module under ``kubewerk.cli`` and exposes
``register(subparsers)``, which adds its parser and sets ``func`` to a callable taking the
parsed ``argparse.Namespace`` and returning the process exit code. Exit codes: 0 success,
1 the command ran and found a failure (e.g. lint findings at the fail level), 2 usage
errors or unreadable input.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# modules that provide subcommands, in the order --help lists them
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "up",
    "demo",
    "gen",
    "govern",
    "graph",
    "policy",
    "run",
    "dashboard",
    "sync",
    "webhook",
    "audit",
)


class UsageError(Exception):
    """A user mistake: printed as ``kubewerk: error: <message>`` with exit code 2."""


def one_line(text: str) -> str:
    """``text`` with every run of whitespace, newlines included, as one space: a message
    from a library that spreads over lines (PyYAML's "in <string>, line L, column C"
    marks) printed as the single line an error of the command must be."""
    return " ".join(text.split())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kubewerk",
        description="Kubernetes custom resources: define, govern, serve, reconcile, observe.",
    )
    from kubewerk import __version__

    parser.add_argument("--version", action="version", version=f"kubewerk {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        module = importlib.import_module(f"kubewerk.cli.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``kubewerk`` command and return its exit code.

    Guarantees: a :class:`UsageError` prints one ``kubewerk: error:`` line and gives 2;
    Ctrl-C at any moment (while the subcommands load, while arguments are parsed, while
    the command runs) gives 130 (128 + SIGINT, as a shell reports it) and no traceback.
    """
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        func = getattr(args, "func", None)
        if func is None:
            parser.print_help()
            return 2
        code: int = func(args)
    except UsageError as exc:
        print(f"kubewerk: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
