"""Declared lifecycles: the phases of a kind and the transitions allowed between them.

A :class:`Lifecycle` is declared once per kind::

    class DbPhase(enum.StrEnum):
        PENDING = "Pending"
        READY = "Ready"
        BROKEN = "Broken"
        GONE = "Gone"

    db_lifecycle = Lifecycle(
        DbPhase,
        initial=DbPhase.PENDING,
        transitions=[
            Transition(DbPhase.PENDING, DbPhase.READY, guard=has_endpoint, trigger="Provisioned"),
            Transition(DbPhase.PENDING, DbPhase.BROKEN),
            Transition(DbPhase.READY, DbPhase.GONE),
            Transition(DbPhase.BROKEN, DbPhase.GONE),
        ],
        terminal=[DbPhase.GONE],
        ready=[DbPhase.READY],
    )

or with a mapping ``{source: [targets]}``. It guarantees, when it is created:

- every phase is a member of the ``phases`` enum, whose values are the strings written
  to ``status.phase``: identifiers (a letter, then letters, digits or ``_``, at most 64
  characters), so a phase is also a valid condition reason;
- no transition is declared twice and none leads from a phase to itself;
- a terminal phase has no way out, and every other phase has one;
- every phase can be reached from the initial phase.

A declaration that breaks one of these raises :class:`LifecycleDefinitionError` naming
the phases involved. The same object is the ``lifecycle=`` class keyword of a resource
(:meth:`Lifecycle.phase_schema`), so the CRD carries the same table as a CEL rule.

:data:`DEFAULT_LIFECYCLE` (phases :class:`Phase`) ships with the kernel: Pending →
Active | Failed; Active → Reconciling | Deleting | Failed; Reconciling → Active |
Failed; Failed → Reconciling | Deleting; Deleting is terminal.
"""

from __future__ import annotations

import enum
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from kubewerk.lifecycle.errors import LifecycleDefinitionError, UnknownPhase
from kubewerk.model.status_phase import PhaseSchema

__all__ = [
    "DEFAULT_LIFECYCLE",
    "Guard",
    "Lifecycle",
    "Phase",
    "Transition",
]

E = TypeVar("E", bound=enum.Enum)

Guard = Callable[[Any, Any], "bool | Awaitable[bool]"]
"""``guard(obj, ctx) -> bool`` (or an awaitable of one): may the transition happen now?"""

PHASE_VALUE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
"""What a phase's value (its ``status.phase`` string) must look like."""

_AUTO: Final[Any] = object()


@dataclass(frozen=True)
class Transition(Generic[E]):
    """One allowed move ``source → target``, optionally guarded and named.

    ``guard(obj, ctx)`` is asked each time the move is attempted; a false answer
    refuses it like an undeclared one. ``trigger`` names the move (the default reason of
    the ``Ready`` condition and of the ``PhaseChanged`` Event when the kernel makes it).
    """

    source: E
    target: E
    guard: Guard | None = None
    trigger: str | None = None

    @property
    def guard_name(self) -> str | None:
        """The guard's ``__name__`` (or its repr), for messages."""
        if self.guard is None:
            return None
        return getattr(self.guard, "__name__", None) or repr(self.guard)

    async def allows(self, obj: Any, ctx: Any) -> bool:
        """Whether the guard lets the move happen (True without a guard)."""
        if self.guard is None:
            return True
        answer = self.guard(obj, ctx)
        if inspect.isawaitable(answer):
            answer = await answer
        return bool(answer)


class Phase(enum.StrEnum):
    """The phases of :data:`DEFAULT_LIFECYCLE` (a ``str``: ``Phase.ACTIVE == "Active"``)."""

    PENDING = "Pending"
    ACTIVE = "Active"
    RECONCILING = "Reconciling"
    FAILED = "Failed"
    DELETING = "Deleting"


def _role(phases: type[E], given: Any, value: str, name: str) -> E | None:
    """A role phase (failed, deleting): as given, else the member whose value is ``value``."""
    if given is _AUTO:
        return next((m for m in phases if m.value == value), None)
    if given is None:
        return None
    if not isinstance(given, phases):
        raise LifecycleDefinitionError(
            f"{phases.__name__}: {name}={given!r} is not a member of {phases.__name__}"
        )
    return given


class Lifecycle(Generic[E]):
    """The phases of one kind and the transitions between them (see the module doc).

    ``ready`` are the phases in which the ``Ready`` condition is True (default: the
    phase whose value is ``Active`` or ``Ready``, when there is exactly one); ``failed``
    is where the kernel moves an object whose handler raises a terminal error, and
    ``deleting`` where it moves one being deleted (defaults: the phases valued
    ``Failed`` and ``Deleting``, if any; None disables the role).
    """

    def __init__(
        self,
        phases: type[E],
        *,
        initial: E,
        transitions: Iterable[Transition[E] | tuple[E, E]] | Mapping[E, Iterable[E]],
        terminal: Iterable[E] = (),
        ready: Iterable[E] | None = None,
        failed: E | None = _AUTO,
        deleting: E | None = _AUTO,
        description: str | None = None,
    ) -> None:
        if not (isinstance(phases, type) and issubclass(phases, enum.Enum)) or not list(phases):
            raise LifecycleDefinitionError(
                f"Lifecycle: phases must be an Enum class with members, not {phases!r}"
            )
        name = phases.__name__
        self.phases: type[E] = phases
        self.name = name
        self._members: tuple[E, ...] = tuple(phases)
        self._by_value: dict[str, E] = {}
        for member in self._members:
            value = member.value
            if not isinstance(value, str) or not PHASE_VALUE.fullmatch(value):
                raise LifecycleDefinitionError(
                    f"{name}.{member.name}: a phase's value is what status.phase holds and "
                    "must be an identifier (a letter, then letters, digits or '_', at most "
                    f"64 characters), not {value!r}"
                )
            self._by_value[value] = member
        if len(phases.__members__) != len(self._members):
            aliases = sorted(set(phases.__members__) - {m.name for m in self._members})
            raise LifecycleDefinitionError(f"{name}: phases may not be aliases ({aliases})")
        self.initial: E = self._member(initial, "initial")
        self.terminal: frozenset[E] = frozenset(self._member(p, "terminal") for p in terminal)
        self._table: dict[E, dict[E, Transition[E]]] = {m: {} for m in self._members}
        for entry in self._entries(transitions):
            source = self._member(entry.source, "a transition's source")
            target = self._member(entry.target, "a transition's target")
            if source == target:
                raise LifecycleDefinitionError(
                    f"{name}: {source.value} → {target.value}: a phase does not transition "
                    "to itself (staying needs no transition)"
                )
            if target in self._table[source]:
                raise LifecycleDefinitionError(
                    f"{name}: {source.value} → {target.value} is declared twice"
                )
            if entry.trigger is not None and not PHASE_VALUE.fullmatch(entry.trigger):
                raise LifecycleDefinitionError(
                    f"{name}: {source.value} → {target.value}: trigger {entry.trigger!r} must "
                    "be an identifier (it is used as a condition reason)"
                )
            self._table[source][target] = entry
        self._check_shape()
        self.ready: frozenset[E] = self._ready(ready)
        self.failed: E | None = _role(phases, failed, "Failed", "failed")
        self.deleting: E | None = _role(phases, deleting, "Deleting", "deleting")
        self.description = description
        self._schema: PhaseSchema | None = None

    # -- declaration ------------------------------------------------------------------

    def _member(self, value: Any, what: str) -> E:
        if isinstance(value, self.phases):
            return value
        raise LifecycleDefinitionError(
            f"{self.name}: {what} {value!r} is not a phase of {self.name} "
            f"(phases: {', '.join(m.value for m in self._members)})"
        )

    def _entries(
        self, transitions: Iterable[Transition[E] | tuple[E, E]] | Mapping[E, Iterable[E]]
    ) -> list[Transition[E]]:
        out: list[Transition[E]] = []
        if isinstance(transitions, Mapping):
            for source, targets in transitions.items():
                if isinstance(targets, Transition | enum.Enum | str):
                    targets = [targets]
                for target in targets:
                    if isinstance(target, Transition):
                        out.append(target)
                    else:
                        out.append(Transition(source, target))
            return out
        for item in transitions:
            if isinstance(item, Transition):
                out.append(item)
            elif isinstance(item, tuple) and len(item) == 2:
                out.append(Transition(item[0], item[1]))
            else:
                raise LifecycleDefinitionError(
                    f"{self.name}: transitions take Transition(source, target, ...) or "
                    f"(source, target) pairs, not {item!r}"
                )
        return out

    def _check_shape(self) -> None:
        name = self.name
        for phase in sorted(self.terminal, key=self._members.index):
            if self._table[phase]:
                targets = ", ".join(t.value for t in self._table[phase])
                raise LifecycleDefinitionError(
                    f"{name}: terminal phase {phase.value} has transitions out ({targets})"
                )
        dead = [m.value for m in self._members if m not in self.terminal and not self._table[m]]
        if dead:
            raise LifecycleDefinitionError(
                f"{name}: phases {', '.join(dead)} have no transition out; declare them "
                "terminal=[...] or add transitions"
            )
        seen = {self.initial}
        todo = [self.initial]
        while todo:
            for target in self._table[todo.pop()]:
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        unreachable = [m.value for m in self._members if m not in seen]
        if unreachable:
            raise LifecycleDefinitionError(
                f"{name}: phases {', '.join(unreachable)} cannot be reached from the initial "
                f"phase {self.initial.value}"
            )

    def _ready(self, ready: Iterable[E] | None) -> frozenset[E]:
        if ready is not None:
            return frozenset(self._member(p, "ready") for p in ready)
        found = [m for m in self._members if m.value in ("Active", "Ready")]
        if len(found) > 1:
            raise LifecycleDefinitionError(
                f"{self.name}: say which phases are ready with ready=[...] "
                f"(both {found[0].value} and {found[1].value} could be)"
            )
        return frozenset(found)

    # -- questions --------------------------------------------------------------------

    @property
    def members(self) -> tuple[E, ...]:
        """Every phase, in declaration order."""
        return self._members

    def parse(self, value: str | E | None) -> E | None:
        """The phase for a ``status.phase`` value (a member passes through); None for a
        value this lifecycle does not declare (or None)."""
        if value is None:
            return None
        if isinstance(value, self.phases):
            return value
        return self._by_value.get(str(value))

    def phase(self, value: str | E) -> E:
        """The declared phase for ``value`` (a member or its string);
        :class:`UnknownPhase` otherwise."""
        found = self.parse(value)
        if found is None:
            raise UnknownPhase(
                f"{value!r} is not a phase of {self.name} "
                f"(phases: {', '.join(m.value for m in self._members)})"
            )
        return found

    def targets(self, source: E) -> tuple[E, ...]:
        """Where ``source`` may go, in declaration order."""
        return tuple(self._table[source])

    def transition(self, source: E, target: E) -> Transition[E] | None:
        """The declared ``source → target`` transition, or None."""
        return self._table[source].get(target)

    def allows(self, source: E, target: E) -> bool:
        """Whether the table declares ``source → target`` (guards aside)."""
        return target in self._table[source]

    def transitions(self) -> list[Transition[E]]:
        """Every declared transition, grouped by source in declaration order."""
        return [t for m in self._members for t in self._table[m].values()]

    def is_terminal(self, phase: E) -> bool:
        """Whether ``phase`` is terminal (no way out)."""
        return phase in self.terminal

    def is_ready(self, phase: E) -> bool:
        """Whether the ``Ready`` condition is True in ``phase``."""
        return phase in self.ready

    # -- the CRD ----------------------------------------------------------------------

    def phase_schema(self) -> PhaseSchema:
        """What the CRD of a kind with this lifecycle carries (the ``lifecycle=`` class
        keyword's contract): ``status.phase`` as an enum of the phases, guarded by the
        transition rule of :mod:`kubewerk.lifecycle.transition_rule`."""
        if self._schema is None:
            from kubewerk.lifecycle.transition_rule import phase_schema

            self._schema = phase_schema(self)
        return self._schema

    def __repr__(self) -> str:
        table = "; ".join(
            f"{m.value} → {' | '.join(t.value for t in self._table[m])}"
            for m in self._members
            if self._table[m]
        )
        return f"Lifecycle({self.name}: {table})"


DEFAULT_LIFECYCLE: Final[Lifecycle[Phase]] = Lifecycle(
    Phase,
    initial=Phase.PENDING,
    transitions={
        Phase.PENDING: [Phase.ACTIVE, Phase.FAILED],
        Phase.ACTIVE: [Phase.RECONCILING, Phase.DELETING, Phase.FAILED],
        Phase.RECONCILING: [Phase.ACTIVE, Phase.FAILED],
        Phase.FAILED: [Phase.RECONCILING, Phase.DELETING],
    },
    terminal=[Phase.DELETING],
    ready=[Phase.ACTIVE],
    description="The lifecycle phase: Pending → Active | Failed; Active → Reconciling | "
    "Deleting | Failed; Reconciling → Active | Failed; Failed → Reconciling | Deleting.",
)
"""The kernel's default lifecycle (see the module doc); ``Failed → Active`` is illegal."""
