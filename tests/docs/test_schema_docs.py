"""docs/schema.md stays true: its example runs as written and gives what its comments
say, ``compile_schema`` refuses a rule that does not compile as the page says, and every
module of the "Where the code is" table exists (and no module is missing from it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

from kubewerk.schema import SchemaError, compile_schema

from .pages import fenced, page, section

DOC = page("schema")
SRC = Path(__file__).resolve().parents[2] / "src" / "kubewerk" / "schema"


def _comment(source: str, statement: str) -> str:
    """The comment on the line of the block starting with ``statement``."""
    [line] = [ln for ln in source.splitlines() if ln.startswith(statement)]
    return line.split("#", 1)[1].strip()


def test_the_example_runs_and_gives_what_its_comments_say(
    capsys: pytest.CaptureFixture[str],
) -> None:
    [example] = [b for b in fenced(DOC) if b.lang == "python"]
    scope: dict[str, Any] = {}
    exec(compile(example.text, f"docs/schema.md:{example.line}", "exec"), scope)
    printed = capsys.readouterr().out.strip()
    assert printed == _comment(example.text, "print(")
    dropped = _comment(example.text, "dropped = ").split("; ", 1)[1]
    assert scope["dropped"] == ast.literal_eval(dropped)
    default = re.search(r"(spec\.\w+) is \"(\w+)\"", _comment(example.text, "cs.apply_defaults"))
    assert default is not None
    assert scope["obj"]["spec"][default.group(1).split(".")[1]] == default.group(2)


def test_compile_schema_raises_schema_error_for_a_rule_that_does_not_compile() -> None:
    assert "`compile_schema(openAPIV3Schema)` raises `SchemaError`" in DOC
    bad = {"type": "object", "x-kubernetes-validations": [{"rule": "self.a <"}]}
    with pytest.raises(SchemaError) as info:
        compile_schema(bad)
    assert info.value.errors


def test_the_module_table_lists_every_module() -> None:
    table = section(DOC, "## Where the code is")
    listed = set(re.findall(r"^\| `([\w/]+(?:\.py|/))` \|", table, re.M))
    present = set()
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC)
        if relative.parts[0] in ("cel",) or len(relative.parts) == 1:
            if path.name != "__init__.py":
                present.add(str(relative))
        else:
            present.add(f"{relative.parts[0]}/")
    assert listed == present
