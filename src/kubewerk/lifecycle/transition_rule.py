"""The CRD side of a lifecycle: ``status.phase`` as an enum, guarded by CEL.

Two ``x-kubernetes-validations`` rules make the API server itself — the embedded one
or any cluster — refuse an illegal phase change written by any client:

* on ``status.phase`` (``self`` is the new phase, ``oldSelf`` the stored one)::

      self == oldSelf || !(oldSelf in ['Pending', 'Active', ...])
        || oldSelf + '>' + self in ['Pending>Active', 'Pending>Failed', ...]

  with a ``messageExpression`` naming the phases and the allowed targets
  (``illegal phase transition Failed → Active (allowed from Failed: Reconciling,
  Deleting)``, the wording of :class:`~kubewerk.lifecycle.IllegalTransition`);
* on the object root: once ``status.phase`` is set it may not be removed (removing it,
  or the whole status, and writing another phase would be a way around the first rule).

Both use ``oldSelf``, so they are *transition rules*: Kubernetes evaluates them only on
updates and only where an old value exists. The first write of a phase (a create, or an
update of an object without ``status.phase``) is therefore never checked, whatever the
phase. (``optionalOldSelf: true`` would let a rule see that first write, but it needs
Kubernetes 1.30 or the ``CRDValidationRatcheting`` gate of 1.29, so it is not used.)
A stored phase that the table does not know (the lifecycle changed since it was
written) may change to any declared phase, so objects never get stuck after an upgrade.

Cost: the rules compare a handful of short strings (``maxLength`` of the phase is set
to the longest phase, which keeps Kubernetes' static cost estimate small) and run once
per object write, far below the per-rule and per-CRD cost limits. Guards are Python
and not part of the rule: the server checks the table, the kernel checks guards too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kubewerk.lifecycle.errors import allowed_text
from kubewerk.model.markers import Rule
from kubewerk.model.status_phase import PhaseSchema

if TYPE_CHECKING:
    from kubewerk.lifecycle.phases import Lifecycle

__all__ = ["phase_rule", "phase_schema", "removal_rule"]

SEPARATOR = ">"
"""Joins source and target in the rule's pair list; phases are identifiers, so it
cannot occur in one."""


def _literal(text: str) -> str:
    """A CEL string literal (single-quoted; quotes and backslashes escaped)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _list(items: Sequence[str]) -> str:
    return "[" + ", ".join(_literal(i) for i in items) + "]"


def phase_rule(lifecycle: Lifecycle[Any]) -> Rule:
    """The transition rule on ``status.phase`` (see the module doc)."""
    phases = [m.value for m in lifecycle.members]
    pairs = [f"{t.source.value}{SEPARATOR}{t.target.value}" for t in lifecycle.transitions()]
    rule = (
        f"self == oldSelf || !(oldSelf in {_list(phases)}) || "
        f"oldSelf + {_literal(SEPARATOR)} + self in {_list(pairs)}"
    )
    # the allowed targets per source as IllegalTransition words them; CEL fills in the
    # phases around them
    by_source = ", ".join(
        f"{_literal(m.value)}: "
        f"{_literal(allowed_text(m.value, [t.value for t in lifecycle.targets(m)]))}"
        for m in lifecycle.members
    )
    message_expression = (
        f"'illegal phase transition ' + oldSelf + ' → ' + self + ' (' + "
        f"{{{by_source}}}[oldSelf] + ')'"
    )
    table = "; ".join(
        f"{m.value} → {', '.join(t.value for t in lifecycle.targets(m))}"
        for m in lifecycle.members
        if lifecycle.targets(m)
    )
    return Rule(
        rule,
        message=f"illegal phase transition (allowed: {table})",
        message_expression=message_expression,
    )


def removal_rule() -> Rule:
    """The root rule: ``status.phase`` may not be removed once set."""
    return Rule(
        "!has(oldSelf.status) || !has(oldSelf.status.phase) || "
        "(has(self.status) && has(self.status.phase))",
        message="status.phase may not be removed once set",
        message_expression="'status.phase may not be removed once set (it is ' + "
        "string(oldSelf.status.phase) + ')'",
        reason="FieldValueRequired",
        field_path=".status.phase",
    )


def phase_schema(lifecycle: Lifecycle[Any]) -> PhaseSchema:
    """The :class:`~kubewerk.model.status_phase.PhaseSchema` of a lifecycle."""
    description = lifecycle.description
    if description is None:
        table = "; ".join(
            f"{m.value} → {' | '.join(t.value for t in lifecycle.targets(m))}"
            for m in lifecycle.members
            if lifecycle.targets(m)
        )
        description = f"The lifecycle phase ({lifecycle.name}): {table}."
    return PhaseSchema(
        phases=tuple(m.value for m in lifecycle.members),
        rules=(phase_rule(lifecycle),),
        object_rules=(removal_rule(),),
        description=description,
    )
