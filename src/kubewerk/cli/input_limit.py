"""``--max-input-bytes``: the option every command that reads files, directories or stdin
takes to change how much it reads from one input (:mod:`kubewerk.core.inputs`).

:func:`add_option` adds it to a parser; :func:`kubewerk.cli.main` runs the command inside
:func:`kubewerk.core.inputs.input_limit` when it was given, so every reader the command
reaches (manifests, kubeconfig, configs, audit log lines) uses that limit.
"""

from __future__ import annotations

import argparse

from kubewerk.core.inputs import DEFAULT_MAX_INPUT_BYTES, human_size, parse_byte_size

DEST = "max_input_bytes"
"""The attribute of the parsed arguments that holds the limit (None: the default)."""


def _byte_size(text: str) -> int:
    try:
        return parse_byte_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    what: str = "each input (a file, a pipe, stdin)",
) -> None:
    """Add ``--max-input-bytes BYTES`` to ``parser``; ``what`` names what the limit bounds
    in the help (``each input (a file, a pipe, stdin)``, ``each line of the log``)."""
    parser.add_argument(
        "--max-input-bytes",
        dest=DEST,
        type=_byte_size,
        default=None,
        metavar="BYTES",
        help=f"read at most BYTES from {what}; more is an error, exit 2 (digits, or with "
        f"Ki, Mi or Gi: 128Mi; default: {human_size(DEFAULT_MAX_INPUT_BYTES)})",
    )
