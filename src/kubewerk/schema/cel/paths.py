"""``fieldPath`` of a validation rule: a JSONPath-like path relative to the rule's node.

Kubernetes accepts ``.foo``, ``.foo.bar``, ``['foo.bar']`` and, for maps and lists,
``['key']`` / ``[0]`` steps (``cel.ValidFieldPath``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._structural import Structural

_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]")


def parse_field_path(path: str) -> list[str | int] | None:
    """Split a rule's ``fieldPath`` into steps, or None if it is malformed."""
    steps: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            return None
        if m.group(1) is not None:
            steps.append(m.group(1))
        elif m.group(2) is not None:
            steps.append(m.group(2).replace("\\'", "'").replace("\\\\", "\\"))
        else:
            steps.append(int(m.group(3)))
        pos = m.end()
    return steps if steps else None


def valid_field_path(path: str, node: Structural) -> str | None:
    """None if ``path`` names a field of ``node``'s schema, else why not."""
    steps = parse_field_path(path)
    if steps is None:
        return f"invalid path: {path}"
    current: Structural | None = node
    for step in steps:
        if current is None:
            return "does not refer to a valid field"
        if isinstance(step, int):
            if current.items is None:
                return "does not refer to a valid field"
            current = current.items
        elif step in current.properties:
            current = current.properties[step]
        elif current.additional is not None:
            current = current.additional
        else:
            return "does not refer to a valid field"
    return None


def render_field_path(base: str, steps: list[str | int]) -> str:
    """The error field for a rule at ``base`` with ``fieldPath`` steps (Go field.Path)."""
    out = base
    for step in steps:
        if isinstance(step, int):
            out = f"{out}[{step}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", step):
            out = f"{out}.{step}" if out and out != "<nil>" else step
        else:
            out = f"{out}[{step}]"
    return out
