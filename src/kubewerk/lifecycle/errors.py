"""The lifecycle kernel's exceptions."""

from __future__ import annotations

from collections.abc import Sequence

from kubewerk.runtime.controller import TerminalError

__all__ = [
    "IllegalTransition",
    "LifecycleDefinitionError",
    "LifecycleError",
    "UnknownPhase",
    "allowed_text",
    "transition_message",
]


class LifecycleError(Exception):
    """Base class of the lifecycle kernel's errors."""


class LifecycleDefinitionError(LifecycleError, ValueError):
    """A lifecycle or platform declaration that cannot work (an unknown phase, a
    terminal phase with a way out, an unreachable phase, ...). Raised where the
    declaration is made: creating the :class:`~kubewerk.lifecycle.Lifecycle`, the
    resource class, or registering the kind with a platform."""


class UnknownPhase(LifecycleError, ValueError):
    """A phase that the lifecycle does not declare was asked for (a programming error)."""


def allowed_text(source: str, allowed: Sequence[str]) -> str:
    """``allowed from Failed: Reconciling, Deleting`` (``none, X is terminal`` when empty)."""
    targets = ", ".join(allowed) if allowed else f"none, {source} is terminal"
    return f"allowed from {source}: {targets}"


def transition_message(source: str, target: str, allowed: Sequence[str]) -> str:
    """The one wording of a refused transition, used by :class:`IllegalTransition` and
    by the CRD rule's ``messageExpression`` alike::

        illegal phase transition Failed → Active (allowed from Failed: Reconciling, Deleting)
    """
    return f"illegal phase transition {source} → {target} ({allowed_text(source, allowed)})"


class IllegalTransition(LifecycleError, TerminalError):
    """A transition the lifecycle does not allow, or whose guard refused it.

    Nothing is written when it is raised. It is a
    :class:`~kubewerk.runtime.TerminalError`: a reconcile that lets it escape is not
    retried until the object changes.
    """

    def __init__(
        self,
        kind: str,
        key: str,
        source: str,
        target: str,
        allowed: Sequence[str],
        *,
        guard: str | None = None,
    ) -> None:
        self.kind = kind
        self.key = key
        self.source = source
        self.target = target
        self.allowed = tuple(allowed)
        self.guard = guard
        """The name of the guard that refused a declared transition (None: undeclared)."""
        if guard is None:
            text = transition_message(source, target, self.allowed)
        else:
            text = f"phase transition {source} → {target} refused by its guard {guard}"
        super().__init__(f"{kind} {key}: {text}")
        self.detail = text
        """The message without the kind and key (what the Warning Event says)."""
