"""Reading a docs/*.md page as a newcomer reads it: its code blocks in order, and the
options a command synopsis shows. Shared by the tests/docs modules."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"

_FENCE = re.compile(r"^```([a-z]*)\n(.*?)^```\n", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One code block: its fence language ("" for none or an indented block), its text
    and the 1-based line of the page it starts on (for failure messages)."""

    lang: str
    text: str
    line: int


def page(name: str) -> str:
    """The text of docs/<name>.md."""
    return (DOCS / f"{name}.md").read_text(encoding="utf-8")


def fenced(text: str) -> list[Block]:
    """Every fenced block of ``text``, in order."""
    return [
        Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 2)
        for m in _FENCE.finditer(text)
    ]


def section(text: str, heading: str) -> str:
    """From the heading line ``heading`` (e.g. ``"## Conversion"``) to the next heading of
    the same or a higher level."""
    start = text.index(f"\n{heading}\n")
    level = heading.split(" ", 1)[0]
    ends = [
        m.start()
        for m in re.finditer(r"\n(#+) ", text[start + 1 :])
        if len(m.group(1)) <= len(level)
    ]
    return text[start : start + 1 + ends[0] if ends else len(text)]


def synopsis_options(synopsis: str) -> set[str]:
    """The long options a synopsis shows (``[--format text|json]`` gives ``--format``)."""
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", synopsis))


def parser_options(parser: argparse.ArgumentParser, *command: str) -> set[str]:
    """The long options of ``kubewerk COMMAND...`` as its argparse parser defines them
    (``--help`` left out)."""
    for word in command:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = actions[0].choices[word]
    return {
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    }
