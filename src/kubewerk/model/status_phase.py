"""The ``lifecycle=`` class keyword's contract: what a declared lifecycle adds to a CRD.

The model layer knows nothing about lifecycles (``kubewerk.lifecycle`` sits above it);
``Resource``'s ``lifecycle=`` keyword accepts any object with a ``phase_schema()``
method (:class:`PhaseDeclaration`) and the CRD generator writes what it answers
(:class:`PhaseSchema`) into the kind's schema:

* ``status.phase`` becomes ``type: string`` with ``enum`` (the declared phases) and
  ``maxLength`` (the longest of them), plus the declaration's rules
  (``x-kubernetes-validations`` on ``status.phase``, e.g. a transition rule);
* the declaration's object rules are added to the root's ``x-kubernetes-validations``;
* a ``Phase`` printer column (``.status.phase``) is added unless one is already there
  or ``column`` is None.

The kind's status model must have a string field whose JSON name is ``phase``;
otherwise creating the class raises :class:`~kubewerk.model.errors.ModelDefinitionError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kubewerk.model.markers import Rule

__all__ = ["PhaseDeclaration", "PhaseSchema"]


@dataclass(frozen=True, slots=True)
class PhaseSchema:
    """The schema facts a lifecycle contributes to its kind's CRD (see the module doc)."""

    phases: tuple[str, ...]
    """Every value ``status.phase`` may hold, in declaration order (the ``enum``)."""
    rules: tuple[Rule, ...] = ()
    """``x-kubernetes-validations`` of ``status.phase`` (``self`` is the phase string)."""
    object_rules: tuple[Rule, ...] = ()
    """``x-kubernetes-validations`` of the object root (``self`` is the whole object)."""
    description: str | None = None
    """``status.phase``'s description (replaces the field's own when given)."""
    column: str | None = "Phase"
    """Name of the printer column showing ``.status.phase`` (None: no column)."""

    def __post_init__(self) -> None:
        if not self.phases:
            raise ValueError("PhaseSchema: at least one phase is needed")
        if any(not isinstance(p, str) or not p for p in self.phases):
            raise ValueError("PhaseSchema: phases must be non-empty strings")
        if len(set(self.phases)) != len(self.phases):
            raise ValueError(f"PhaseSchema: phases must be unique, got {list(self.phases)}")
        if any(not isinstance(r, Rule) for r in (*self.rules, *self.object_rules)):
            raise ValueError("PhaseSchema: rules and object_rules take Rule(...) entries")


@runtime_checkable
class PhaseDeclaration(Protocol):
    """Anything a ``Resource`` accepts as ``lifecycle=``: it says how ``status.phase``
    looks in the CRD. :class:`kubewerk.lifecycle.Lifecycle` implements it."""

    def phase_schema(self) -> PhaseSchema:
        """The phases and rules to write into the kind's schema (called when the
        class is created; may raise to refuse a bad declaration)."""
        ...
