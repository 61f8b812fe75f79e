"""Attribute docstrings: the string literal written right below an annotated field.

::

    class WidgetSpec(KubeModel):
        replicas: int = 1
        \"\"\"How many widgets to run.\"\"\"

pydantic reads these itself (``use_attribute_docstrings``) but offers no public function
for it, and on Python < 3.13 it finds the class source through the calling frame, which
fails for a ``Resource[A, B]`` base written in a multi-line class statement. This reads
the class's own source with :mod:`inspect` and :mod:`ast` instead.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import textwrap
from collections.abc import Iterator

__all__ = ["attribute_docstrings"]

_NESTED_SCOPES = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def attribute_docstrings(cls: type) -> dict[str, str]:
    """``{field name: cleaned docstring}`` for the annotated fields of ``cls``'s own body.

    A docstring belongs to a field when it is the statement right after the field's
    annotated assignment (also inside ``if``/``try`` blocks of the class body, not in
    nested classes or functions). Empty when the source cannot be read (REPL, zipapp,
    frozen code).
    """
    try:
        lines, _ = inspect.getsourcelines(cls)
        tree = ast.parse(_dedented("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return {}
    node = _class_node(tree, cls.__name__)
    if node is None:
        return {}
    docs: dict[str, str] = {}
    for body in _statement_lists(node):
        for previous, statement in itertools.pairwise(body):
            if (
                isinstance(previous, ast.AnnAssign)
                and isinstance(previous.target, ast.Name)
                and isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                docs[previous.target.id] = inspect.cleandoc(statement.value.value)
    return docs


def _dedented(source: str) -> str:
    text = textwrap.dedent(source)
    if text.startswith((" ", "\t")):
        # a multi-line string less indented than the class keeps the block indented:
        # parse it as the body of a function
        text = "def _wrapper():\n" + text
    return text


def _class_node(tree: ast.Module, name: str) -> ast.ClassDef | None:
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.FunctionDef) and first.name == "_wrapper" and first.body:
        first = first.body[0]
    return first if isinstance(first, ast.ClassDef) and first.name == name else None


def _statement_lists(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """The statement lists of a class body and of the blocks inside it (if, try, with,
    for, while, match), leaving nested classes and functions out."""
    for field in ("body", "orelse", "finalbody"):
        statements = getattr(node, field, None)
        if isinstance(statements, list) and statements:
            yield statements
            for statement in statements:
                if not isinstance(statement, _NESTED_SCOPES):
                    yield from _statement_lists(statement)
    for child in getattr(node, "handlers", ()):  # try: except blocks
        yield from _statement_lists(child)
    for case in getattr(node, "cases", ()):  # match: case blocks
        yield from _statement_lists(case)
