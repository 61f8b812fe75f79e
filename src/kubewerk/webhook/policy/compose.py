"""CEL checks composed with ``all_of``, ``any_of``, ``not_`` and ``chain``.

A :class:`Check` is one CEL expression that must hold, with the message a denial
shows. Composites compile to ValidatingAdmissionPolicy ``validations``:

- ``all_of(a, b)``: every part must hold; at the top of a policy each part stays its
  own validation (kube-apiserver evaluates them all and reports the first denial, with
  that part's message); nested, it is ``(a) && (b)``.
- ``any_of(a, b)``: ``(a) || (b)``, one validation; message: the one given, else the
  parts' messages joined with ``" or "``.
- ``not_(a, message)``: ``!(a)``; a message is required (the part's own says what
  *should* hold, not what must not).
- ``chain(a, b, c)``: the steps in order, the first that fails denies with its own
  message and the later ones are not evaluated: step *k* compiles to
  ``!((s1) && … && (s(k-1))) || (sk)``, so CEL's short-circuit keeps a later step from
  running (or failing with an error) on an object an earlier step already refused.

Nested composites keep the semantics, with one message: the composite's own, else
the derived one above.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class PolicyDefinitionError(ValueError):
    """A policy written wrongly (in Python or YAML); the message names the place."""


@dataclass(frozen=True)
class Node(ABC):
    """A composable check."""

    @abstractmethod
    def expression(self) -> str:
        """One CEL expression that is true when the check holds."""

    @abstractmethod
    def default_message(self) -> str:
        """The message when the check (as one validation) fails."""

    def validations(self) -> list[dict[str, Any]]:
        """The ``spec.validations`` entries this check compiles to at the top of a policy."""
        return [{"expression": self.expression(), "message": self.default_message()}]


@dataclass(frozen=True)
class Check(Node):
    """One CEL expression that must hold. ``message_expression`` and ``reason``
    (``Invalid``, ``Forbidden``, ``RequestEntityTooLarge``) pass through to the
    validation."""

    expr: str
    message: str | None = None
    message_expression: str | None = None
    reason: str | None = None

    def expression(self) -> str:
        return self.expr.strip()

    def default_message(self) -> str:
        return self.message.strip() if self.message else f"failed expression: {self.expr.strip()}"

    def validations(self) -> list[dict[str, Any]]:
        v: dict[str, Any] = {"expression": self.expression()}
        if self.message:
            v["message"] = self.message.strip()
        if self.message_expression:
            v["messageExpression"] = self.message_expression
        if self.reason:
            v["reason"] = self.reason
        return [v]


def _joined(parts: Sequence[Node], op: str) -> str:
    if len(parts) == 1:
        return parts[0].expression()
    return f" {op} ".join(f"({p.expression()})" for p in parts)


@dataclass(frozen=True)
class AllOf(Node):
    parts: tuple[Node, ...]
    message: str | None = None

    def expression(self) -> str:
        return _joined(self.parts, "&&")

    def default_message(self) -> str:
        return self.message or " and ".join(p.default_message() for p in self.parts)

    def validations(self) -> list[dict[str, Any]]:
        if self.message:
            return super().validations()
        out: list[dict[str, Any]] = []
        for p in self.parts:
            out.extend(p.validations())
        return out


@dataclass(frozen=True)
class AnyOf(Node):
    parts: tuple[Node, ...]
    message: str | None = None

    def expression(self) -> str:
        return _joined(self.parts, "||")

    def default_message(self) -> str:
        return self.message or " or ".join(p.default_message() for p in self.parts)


@dataclass(frozen=True)
class Not(Node):
    part: Node
    message: str

    def expression(self) -> str:
        return f"!({self.part.expression()})"

    def default_message(self) -> str:
        return self.message


@dataclass(frozen=True)
class Chain(Node):
    steps: tuple[Node, ...]
    message: str | None = None

    def expression(self) -> str:
        return _joined(self.steps, "&&")

    def default_message(self) -> str:
        return self.message or self.steps[0].default_message()

    def validations(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for k, step in enumerate(self.steps):
            for v in step.validations() if k == 0 else [_single(step)]:
                if k:
                    guard = _joined(self.steps[:k], "&&")
                    v = dict(v)
                    v["expression"] = f"!({guard}) || ({v['expression']})"
                out.append(v)
        return out


def _single(node: Node) -> dict[str, Any]:
    """``node`` as one validation (a lone Check keeps its messageExpression and reason)."""
    if isinstance(node, Check):
        return node.validations()[0]
    return {"expression": node.expression(), "message": node.default_message()}


def check(
    expression: str,
    message: str | None = None,
    *,
    message_expression: str | None = None,
    reason: str | None = None,
) -> Check:
    """A check that ``expression`` holds."""
    if not isinstance(expression, str) or not expression.strip():
        raise PolicyDefinitionError("a check needs a non-empty CEL expression")
    if message is not None and ("\n" in message.strip() or "\r" in message.strip()):
        raise PolicyDefinitionError("a check's message must not contain line breaks")
    return Check(expression, message, message_expression, reason)


def _nodes(parts: Sequence[Node | str], what: str) -> tuple[Node, ...]:
    if not parts:
        raise PolicyDefinitionError(f"{what} needs at least one check")
    return tuple(check(p) if isinstance(p, str) else p for p in parts)


def all_of(*parts: Node | str, message: str | None = None) -> AllOf:
    """Every part must hold."""
    return AllOf(_nodes(parts, "all_of"), message)


def any_of(*parts: Node | str, message: str | None = None) -> AnyOf:
    """At least one part must hold."""
    return AnyOf(_nodes(parts, "any_of"), message)


def not_(part: Node | str, message: str) -> Not:
    """The part must not hold; ``message`` says why."""
    if not message or not message.strip():
        raise PolicyDefinitionError("not_ needs a message (what the object must not do)")
    return Not(_nodes([part], "not_")[0], message.strip())


def chain(*steps: Node | str, message: str | None = None) -> Chain:
    """Steps in order; the first that fails denies with its message."""
    return Chain(_nodes(steps, "chain"), message)


_KEYS = ("expression", "all_of", "any_of", "not", "chain")


def from_data(data: Any, where: str = "check") -> Node:
    """A check from its YAML/JSON form.

    A mapping with exactly one of ``expression`` (with optional ``message``,
    ``messageExpression``, ``reason``), ``all_of``/``any_of``/``chain`` (a list of
    checks, optional ``message``) or ``not`` (a check, and ``message``); a bare string
    is an expression.
    """
    if isinstance(data, str):
        return check(data)
    if not isinstance(data, Mapping):
        raise PolicyDefinitionError(f"{where}: expected a mapping or a CEL string")
    present = [k for k in _KEYS if k in data]
    if len(present) != 1:
        raise PolicyDefinitionError(f"{where}: expected exactly one of {', '.join(_KEYS)}")
    key = present[0]
    message = data.get("message")
    if message is not None and not isinstance(message, str):
        raise PolicyDefinitionError(f"{where}.message: expected a string")
    try:
        if key == "expression":
            return check(
                data["expression"],
                message,
                message_expression=data.get("messageExpression"),
                reason=data.get("reason"),
            )
        if key == "not":
            return not_(from_data(data["not"], f"{where}.not"), message or "")
        items = data[key]
        if not isinstance(items, list):
            raise PolicyDefinitionError(f"{where}.{key}: expected a list of checks")
        parts = [from_data(x, f"{where}.{key}[{i}]") for i, x in enumerate(items)]
        return {"all_of": all_of, "any_of": any_of, "chain": chain}[key](*parts, message=message)
    except PolicyDefinitionError as exc:
        if str(exc).startswith(where):
            raise
        raise PolicyDefinitionError(f"{where}: {exc}") from None
