"""The subset of Kubernetes JSONPath that printer columns and ``kubectl wait`` use.

Supported: ``.field``, ``['field.with.dots']``, ``[N]`` (negative too), ``[*]`` / ``.*``,
``..field`` (recursive descent), and filters ``[?(@.a.b == "x")]`` with ``==``/``!=`` or
a bare existence test ``[?(@.a)]``. ``evaluate`` returns every match in document order;
a path that does not parse raises ``ValueError`` with the offending position.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_FILTER = re.compile(
    r"""^\?\(\s*@((?:\.[A-Za-z0-9_\-/]+|\['[^']*'\])*)\s*(?:(==|!=)\s*("(?:[^"\\]|\\.)*"|'[^']*'|[-0-9.]+|true|false))?\s*\)$"""
)


@dataclass(frozen=True, slots=True)
class _Step:
    kind: str  # "field", "index", "wild", "recurse", "filter"
    name: str = ""
    index: int = 0
    filter_path: tuple[str, ...] = ()
    filter_op: str = ""
    filter_value: Any = None


def _parse_simple_fields(text: str) -> tuple[str, ...]:
    fields: list[str] = []
    for match in re.finditer(r"\.([A-Za-z0-9_\-/]+)|\['([^']*)'\]", text):
        fields.append(match.group(1) if match.group(1) is not None else match.group(2))
    return tuple(fields)


def parse(path: str) -> list[_Step]:
    """Compile a JSONPath (with or without surrounding ``{}``) into steps."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[_Step] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if text.startswith("..", i):
            steps.append(_Step("recurse"))
            i += 2
            if i < len(text) and text[i] not in ".[":
                j = i
                while j < len(text) and text[j] not in ".[":
                    j += 1
                steps.append(_Step("field", name=text[i:j]))
                i = j
            continue
        if ch == ".":
            j = i + 1
            while j < len(text) and text[j] not in ".[":
                j += 1
            name = text[i + 1 : j]
            if not name:
                raise ValueError(f"invalid JSONPath {path!r}: empty field name at {i}")
            steps.append(_Step("wild") if name == "*" else _Step("field", name=name))
            i = j
            continue
        if ch == "[":
            depth = 0
            j = i
            quote = ""
            while j < len(text):
                c = text[j]
                if quote:
                    if c == quote:
                        quote = ""
                elif c in "'\"":
                    quote = c
                elif c == "[":
                    depth += 1
                elif c == "]":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            if j >= len(text):
                raise ValueError(f"invalid JSONPath {path!r}: unclosed '[' at {i}")
            inner = text[i + 1 : j].strip()
            i = j + 1
            if inner == "*":
                steps.append(_Step("wild"))
            elif inner.startswith("?"):
                m = _FILTER.match(inner)
                if not m:
                    raise ValueError(f"invalid JSONPath {path!r}: unsupported filter {inner!r}")
                value: Any = None
                if m.group(3) is not None:
                    raw = m.group(3)
                    if raw[0] in "'\"":
                        value = raw[1:-1]
                    elif raw in ("true", "false"):
                        value = raw == "true"
                    else:
                        value = float(raw) if "." in raw else int(raw)
                steps.append(
                    _Step(
                        "filter",
                        filter_path=_parse_simple_fields(m.group(1)),
                        filter_op=m.group(2) or "exists",
                        filter_value=value,
                    )
                )
            elif inner[:1] in "'\"" and inner[-1:] == inner[:1]:
                steps.append(_Step("field", name=inner[1:-1]))
            else:
                try:
                    steps.append(_Step("index", index=int(inner)))
                except ValueError:
                    raise ValueError(
                        f"invalid JSONPath {path!r}: bad subscript [{inner}]"
                    ) from None
            continue
        # a leading bare field name ("spec.replicas")
        j = i
        while j < len(text) and text[j] not in ".[":
            j += 1
        steps.append(_Step("field", name=text[i:j]))
        i = j
    return steps


def _descend(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for v in value.values():
            yield from _descend(v)
    elif isinstance(value, list):
        for v in value:
            yield from _descend(v)


def _lookup(value: Any, fields: tuple[str, ...]) -> tuple[bool, Any]:
    for f in fields:
        if not isinstance(value, dict) or f not in value:
            return False, None
        value = value[f]
    return True, value


def _filter_match(item: Any, step: _Step) -> bool:
    found, value = _lookup(item, step.filter_path)
    if step.filter_op == "exists":
        return found
    if not found:
        return False
    if (
        isinstance(step.filter_value, int | float)
        and not isinstance(value, bool)
        and isinstance(value, int | float)
    ):
        equal = float(value) == float(step.filter_value)
    else:
        equal = value == step.filter_value or (
            isinstance(step.filter_value, str)
            and not isinstance(value, str)
            and str(value) == step.filter_value
        )
    return equal if step.filter_op == "==" else not equal


def evaluate(path: str | list[_Step], doc: Any) -> list[Any]:
    """All values ``path`` selects in ``doc`` (empty when nothing matches)."""
    steps = parse(path) if isinstance(path, str) else path
    current = [doc]
    for step in steps:
        nxt: list[Any] = []
        for value in current:
            if step.kind == "field":
                if isinstance(value, dict) and step.name in value:
                    nxt.append(value[step.name])
            elif step.kind == "index":
                if isinstance(value, list) and -len(value) <= step.index < len(value):
                    nxt.append(value[step.index])
            elif step.kind == "wild":
                if isinstance(value, dict):
                    nxt.extend(value.values())
                elif isinstance(value, list):
                    nxt.extend(value)
            elif step.kind == "recurse":
                nxt.extend(_descend(value))
            elif step.kind == "filter":
                items = (
                    value
                    if isinstance(value, list)
                    else list(value.values())
                    if isinstance(value, dict)
                    else []
                )
                nxt.extend(item for item in items if _filter_match(item, step))
        current = nxt
    return current
