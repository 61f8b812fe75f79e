"""Reading a docs/*.md page as a newcomer reads it: its code blocks in order, and the
options a command synopsis shows. Shared by the tests/docs modules."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Callable
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


def named_files(blocks: list[Block], directory: Path) -> list[Path]:
    """Write every block (or YAML document of a block) whose first line is a comment
    naming a file (``# deploy-7.yaml``) to that file in ``directory``, as a reader saves
    them; the naming comment stays in the file. Returns the paths written."""
    written: list[Path] = []
    for block in blocks:
        for part in re.split(r"^---\n", block.text, flags=re.M):
            named = re.match(r"# ([\w.-]+\.(?:ya?ml|py|json))(?: .*)?\n", part)
            if named:
                path = directory / named.group(1)
                path.write_text(part, encoding="utf-8")
                written.append(path)
    return written


@dataclass(frozen=True)
class Step:
    """One ``$ command`` of a shell transcript with the output shown under it."""

    argv: list[str]
    output: str


def transcript(block: Block) -> list[Step]:
    """The ``$ ...`` commands of a shell block and the lines shown after each."""
    steps: list[Step] = []
    for chunk in re.split(r"^\$ ", block.text, flags=re.M)[1:]:
        command, _, output = chunk.partition("\n")
        steps.append(Step(shlex.split(command), output))
    return steps


def run_transcript(block: Block, read_stdout: Callable[[], str]) -> list[int]:
    """Run a shell transcript's ``kubewerk`` commands in process through
    ``kubewerk.cli.main`` (in the current directory) and check that each prints what the
    page shows under it (``read_stdout`` returns what was printed since it was last
    called); ``echo $?`` checks the exit code of the command before. Returns the exit
    codes."""
    from kubewerk.cli import main

    codes: list[int] = []
    read_stdout()
    for step in transcript(block):
        where = f"line {block.line}: $ {shlex.join(step.argv)}"
        if step.argv == ["echo", "$?"]:
            assert codes, where
            assert step.output.strip() == str(codes[-1]), where
            continue
        assert step.argv[0] == "kubewerk", where
        codes.append(main(step.argv[1:]))
        assert read_stdout() == step.output, where
    return codes


def subparser(parser: argparse.ArgumentParser, *command: str) -> argparse.ArgumentParser:
    """The parser of ``kubewerk COMMAND...``."""
    for word in command:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = actions[0].choices[word]
    return parser


def synopsis_mismatch(synopsis: str, parser: argparse.ArgumentParser) -> list[str]:
    """What a synopsis and a parser disagree about: options of the parser the synopsis
    does not show under any of their spellings, and options it shows that the parser
    does not have (``-h/--help`` is never required)."""
    shown = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][a-z-]*)", synopsis))
    known: set[str] = set()
    problems: list[str] = []
    for action in parser._actions:
        if not action.option_strings or "--help" in action.option_strings:
            continue
        known.update(action.option_strings)
        if not shown & set(action.option_strings):
            problems.append(f"not shown: {'/'.join(action.option_strings)}")
    problems += [f"not an option: {o}" for o in sorted(shown - known - {"-h", "--help"})]
    return problems
