"""Readiness gates: checks the kernel makes before a kind's handler (or its teardown) runs.

A gate owns one condition type. Before calling a kind's handler the kernel asks each of
the kind's gates, in registration order, ``check(obj, ctx)``:

- :class:`Blocked` — the handler is not called: the gate's condition is set to False
  with the blocked reason and message, an object without a phase is recorded in its
  lifecycle's initial phase (so a new object stays Pending), the phase does not change,
  and the object is reconciled again after ``requeue_after`` when given (otherwise when
  something enqueues it: a gate that waits on other objects arranges that);
- ``None`` — the gate passes: its condition is set to True (``passed_reason``).

Every condition change is written with the reconcile's one status write. Teardown
gates (``teardown=True``) are asked the same way before a deleted object's teardown,
which waits (its finalizer stays) while one is blocked. The dependency engine registers
its gate here (``DependenciesReady``); a platform takes gates with
:meth:`kubewerk.lifecycle.Platform.gate`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from kubewerk.lifecycle.errors import LifecycleDefinitionError

__all__ = ["Blocked", "Gate", "GateCheck"]

_REASON: Final = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
_CONDITION_TYPE: Final = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])"
)


@dataclass(frozen=True, slots=True)
class Blocked:
    """A gate's answer that the object may not proceed yet."""

    reason: str
    """The condition's reason (CamelCase), e.g. ``DependencyNotReady``."""
    message: str = ""
    """What the object waits for, for people (``kubectl describe``)."""
    requeue_after: float | None = None
    """Reconcile again after this many seconds (None: when something enqueues it)."""

    def __post_init__(self) -> None:
        if not _REASON.fullmatch(self.reason) or len(self.reason) > 1024:
            raise ValueError(
                f"Blocked: reason {self.reason!r} must be CamelCase (a condition reason)"
            )
        if self.requeue_after is not None and self.requeue_after < 0:
            raise ValueError("Blocked: requeue_after must be >= 0")


GateCheck = Callable[[Any, Any], "Blocked | Awaitable[Blocked | None] | None"]
"""``check(obj, ctx)``: a :class:`Blocked` when the object must wait, None when it may go."""


@dataclass(frozen=True, slots=True)
class Gate:
    """A named check owning the condition type ``condition`` (see the module doc)."""

    condition: str
    check: GateCheck
    passed_reason: str = "Satisfied"
    passed_message: str = ""
    teardown: bool = False
    """Asked before a deleted object's teardown instead of before its handler."""

    def __post_init__(self) -> None:
        if not _CONDITION_TYPE.fullmatch(self.condition) or len(self.condition) > 316:
            raise LifecycleDefinitionError(
                f"Gate: {self.condition!r} is not a condition type (CamelCase, optionally "
                "prefixed by a DNS subdomain and '/')"
            )
        if self.condition == "Ready":
            raise LifecycleDefinitionError(
                "Gate: the Ready condition belongs to the lifecycle (it follows the phase)"
            )
        if not _REASON.fullmatch(self.passed_reason):
            raise LifecycleDefinitionError(
                f"Gate: passed_reason {self.passed_reason!r} must be CamelCase"
            )
        if not callable(self.check):
            raise LifecycleDefinitionError(f"Gate: check must be callable, not {self.check!r}")

    @property
    def name(self) -> str:
        """The check's ``__name__`` (for logs)."""
        return getattr(self.check, "__name__", None) or repr(self.check)

    async def ask(self, obj: Any, ctx: Any) -> Blocked | None:
        """Run the check (awaiting it when it is async); anything but a
        :class:`Blocked` or None is a programming error (TypeError)."""
        answer = self.check(obj, ctx)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is not None and not isinstance(answer, Blocked):
            raise TypeError(
                f"gate {self.name} ({self.condition}) returned {answer!r}; "
                "return Blocked(...) or None"
            )
        return answer
