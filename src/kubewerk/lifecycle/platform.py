"""The Platform: one kernel that runs many kinds the same way.

::

    platform = Platform()

    @platform.kind(Database, strategy="backoff")
    async def provision(db: Database, ctx: LifecycleContext) -> Phase | None:
        if not await backend.exists(db.name):
            await backend.create(db.name)
            return None                    # stay (Pending); the next event calls again
        return Phase.ACTIVE                # Pending → Active, one guarded status write

    @platform.teardown(Database)
    async def drop(db: Database, ctx: LifecycleContext) -> None:
        await backend.drop(db.name)

    @platform.on(Database, Phase.ACTIVE)
    async def announce(event: LifecycleEvent) -> None: ...

    # kubewerk run mymodule:platform   (or mymodule:platform.manager)

A kind's author writes only what is specific to the kind. The kernel gives every kind:

- its lifecycle (the ``lifecycle=`` of the resource class, else :data:`DEFAULT_LIFECYCLE`):
  the handler's answer — a phase (move there, see
  :meth:`~kubewerk.lifecycle.LifecycleContext.transition`), None (stay), or a
  :class:`~kubewerk.runtime.Result` (stay, and requeue as it says) — becomes at most
  one guarded status write, together with the ``Ready`` condition, ``observedGeneration``
  and ``lastTransitionTime``; an object without a phase gets its initial one;
- readiness gates (:mod:`kubewerk.lifecycle.gates`) asked before the handler;
- a handler that raises :class:`~kubewerk.runtime.TerminalError` moves the object to the
  lifecycle's ``failed`` phase when the table allows it (reason ``ReconcileFailed``, the
  error as message); any other error is retried with the kind's strategy;
- deletion: with a teardown handler or teardown gates (or ``finalizer=True``) the
  kernel keeps the finalizer ``kubewerk.dev/lifecycle`` on the kind's objects; when one
  is deleted it moves to the ``deleting`` phase (when the table allows), waits for the
  teardown gates, runs the teardown handler and removes the finalizer;
- metrics (:mod:`kubewerk.lifecycle.metrics`) and Events for every transition, and the
  bus: every transition and refused transition is published (``@platform.on``);
- a reconcile strategy (:mod:`kubewerk.lifecycle.strategy`), switchable by
  configuration;
- a controller whose workers exist only while the kind has work
  (:mod:`kubewerk.lifecycle.workers`), and no reconcile for the echo of its own writes
  (:mod:`kubewerk.lifecycle.own_writes`).

``platform.manager`` is an ordinary :class:`~kubewerk.runtime.Manager`: probes, metrics,
leader election and ``kubewerk run`` work as for any operator.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from kubewerk.client.resources import ResourceType, is_model_class, resource_type_of
from kubewerk.lifecycle.context import LifecycleContext
from kubewerk.lifecycle.dependencies import Dependencies
from kubewerk.lifecycle.errors import IllegalTransition, LifecycleDefinitionError
from kubewerk.lifecycle.gates import Blocked, Gate
from kubewerk.lifecycle.metrics import LifecycleMetrics, lifecycle_metrics
from kubewerk.lifecycle.own_writes import OwnWrites
from kubewerk.lifecycle.phases import DEFAULT_LIFECYCLE, Lifecycle
from kubewerk.lifecycle.status import phase_of
from kubewerk.lifecycle.strategy import Strategy, resolve_strategy
from kubewerk.lifecycle.workers import OnDemandController
from kubewerk.runtime import conditions
from kubewerk.runtime.controller import Controller, Mapper, Result, TerminalError, Watch
from kubewerk.runtime.manager import Manager
from kubewerk.runtime.predicates import Predicate

if TYPE_CHECKING:
    from kubewerk.lifecycle.bus import Bus, LifecycleEvent

__all__ = ["FINALIZER", "PHASE_INDEX", "KindHandler", "KindRegistration", "Platform"]

log = logging.getLogger("kubewerk.lifecycle.platform")

FINALIZER: Final = "kubewerk.dev/lifecycle"
"""The finalizer the kernel keeps on objects whose deletion it manages."""

PHASE_INDEX: Final = "kubewerk.dev/phase"
"""The informer index (phase → keys) behind ``kubewerk_objects``."""

KindHandler = Callable[[Any, LifecycleContext], Awaitable[Any]]
"""``async def handler(obj, ctx) -> Phase | None | Result``."""
TeardownHandler = Callable[[Any, LifecycleContext], Awaitable[None]]
EventHandler = Callable[["LifecycleEvent"], Awaitable[None]]

H = TypeVar("H", bound=Callable[..., Any])


@dataclass(eq=False)
class KindRegistration:
    """One kind on a platform: its lifecycle, handler, strategy and controller."""

    kind: Any
    """The resource class (or ``ResourceType`` for plain-dict objects)."""
    rt: ResourceType
    label: str
    """``Kind.group``, as metrics and bus events name the kind."""
    lifecycle: Lifecycle[Any]
    handler: KindHandler
    strategy: Strategy
    controller: OnDemandController
    teardown: TeardownHandler | None = None
    finalizer: bool | None = None
    """True/False: always/never keep the kernel's finalizer; None: when there is a
    teardown handler or a teardown gate."""
    own_writes: OwnWrites = field(default_factory=OwnWrites)


def _label(rt: ResourceType) -> str:
    return f"{rt.kind}.{rt.group}" if rt.group else rt.kind


def _status_has_phase(kind: Any) -> bool:
    fields = getattr(kind, "__pydantic_fields__", {})
    status = fields.get("status")
    if status is None:
        return False
    for candidate in typing.get_args(status.annotation) or (status.annotation,):
        inner = getattr(candidate, "__pydantic_fields__", None)
        if inner and any((f.alias or n) == "phase" for n, f in inner.items()):
            return True
    return False


class Platform:
    """Registers kinds uniformly and runs them in one manager (see the module doc).

    ``manager``: the manager to run in (default: a new ``Manager(**manager_options)``).
    ``bus``: the event bus (default: an ``InProcessBus`` on the manager's registry).
    ``strategies``: per-kind reconcile strategies by kind name (overridden by the
    ``KUBEWERK_RECONCILE_STRATEGY`` environment variable, read from ``environ``).
    ``finalizer``: the finalizer name the kernel keeps.
    """

    def __init__(
        self,
        manager: Manager | None = None,
        *,
        bus: Bus | None = None,
        strategies: Mapping[str, Strategy | str] | None = None,
        finalizer: str = FINALIZER,
        environ: Mapping[str, str] | None = None,
        **manager_options: Any,
    ) -> None:
        if manager is not None and manager_options:
            raise TypeError("pass either a manager or manager options, not both")
        self.manager: Manager = manager if manager is not None else Manager(**manager_options)
        self.metrics: LifecycleMetrics = lifecycle_metrics(self.manager.metrics.registry)
        self.strategies: dict[str, Strategy | str] = dict(strategies or {})
        self.environ = environ
        self.finalizer = finalizer
        self.kinds: dict[str, KindRegistration] = {}
        """Registered kinds by label (``Kind.group``)."""
        # gates for every kind, and per kind label, each with its registration number;
        # who owns each (condition, teardown) pair (None: every kind); the merged list per
        # (label, teardown), made on first use — so neither registering nor asking scans
        # every gate (the dependency engine adds two per kind)
        self._gate_count = 0
        self._global_gates: list[tuple[int, Gate]] = []
        self._label_gates: dict[str, list[tuple[int, Gate]]] = {}
        self._gate_owners: dict[tuple[str, bool], set[str] | None] = {}
        self._gates_of: dict[tuple[str, bool], list[Gate]] = {}
        self._bus: Bus | None = bus
        self.manager.add_runnable(self._run_bus, needs_leader=False)
        self.dependencies: Dependencies = Dependencies(self)
        """The dependency engine: refs between kinds (:mod:`kubewerk.lifecycle.dependencies`)."""

    # -- the bus --------------------------------------------------------------------------

    @property
    def bus(self) -> Bus:
        """The platform's event bus (an ``InProcessBus`` unless one was passed in)."""
        if self._bus is None:
            from kubewerk.lifecycle.bus import InProcessBus

            self._bus = InProcessBus(self.manager.metrics.registry)
        return self._bus

    async def _run_bus(self) -> None:
        bus = self.bus
        await bus.start()
        try:
            await asyncio.Event().wait()
        finally:
            await bus.stop()

    async def publish(
        self,
        event_type: str,
        kind: str,
        key: str,
        from_phase: str | None = None,
        to_phase: str | None = None,
        reason: str = "",
        message: str = "",
        trace_id: str | None = None,
    ) -> None:
        """Publish one event on the platform's bus (``kind`` is ``Kind.group``)."""
        from kubewerk.lifecycle.bus import LifecycleEvent

        fields: dict[str, Any] = {}
        if trace_id:
            fields["trace_id"] = trace_id
        await self.bus.publish(
            LifecycleEvent(
                event_type=event_type,
                kind=kind,
                key=key,
                from_phase=from_phase,
                to_phase=to_phase,
                reason=reason,
                message=message,
                **fields,
            )
        )

    def on(
        self,
        kind: Any | None = None,
        phase: enum.Enum | str | None = None,
        *,
        event_type: str = "PhaseChanged",
        name: str | None = None,
    ) -> Callable[[EventHandler], EventHandler]:
        """Subscribe ``handler(event)`` to the platform's bus: events of ``event_type``
        (default ``PhaseChanged``) about ``kind`` (any kind when None) that move to
        ``phase`` (any when None)::

            @platform.on(Database, Phase.ACTIVE)
            async def announce(event: LifecycleEvent) -> None: ...
        """
        label = None if kind is None else _label(resource_type_of(kind))
        if isinstance(phase, enum.Enum):
            phase = str(phase.value)
        if label is not None and phase is not None and label in self.kinds:
            self.kinds[label].lifecycle.phase(phase)  # UnknownPhase for a typo

        def subscribe(handler: EventHandler) -> EventHandler:
            self.bus.subscribe(
                handler, event_type=event_type, kind=label, to_phase=phase, name=name
            )
            return handler

        return subscribe

    # -- registration ---------------------------------------------------------------------

    def kind(
        self,
        kind: Any,
        *,
        lifecycle: Lifecycle[Any] | None = None,
        strategy: Strategy | str | None = None,
        max_concurrent_reconciles: int = 1,
        reconcile_timeout: float | None = None,
        finalizer: bool | None = None,
        predicates: Sequence[Predicate] = (),
        name: str | None = None,
    ) -> Callable[[H], H]:
        """Register ``kind`` with ``handler(obj, ctx) -> Phase | None | Result`` (the
        decorated function, returned unchanged).

        ``lifecycle`` defaults to the resource class's ``lifecycle=`` (giving another
        one is an error), else :data:`DEFAULT_LIFECYCLE`; the status type must have a
        ``phase`` field. ``strategy`` is the code's choice of reconcile strategy
        (configuration overrides it); ``predicates`` filter the kind's events further;
        ``name`` is the controller's name (default: the kind, lower-cased; with its
        group when another controller of the manager has that name).
        """
        rt = resource_type_of(kind)
        label = _label(rt)
        if label in self.kinds:
            raise LifecycleDefinitionError(f"{label} is already registered on this platform")
        declared = None
        if is_model_class(kind):
            declared = getattr(kind.kind_info(), "lifecycle", None)
            if not _status_has_phase(kind):
                raise LifecycleDefinitionError(
                    f"{kind.__name__}: the platform needs a status type with a phase field "
                    "(e.g. a subclass of kubewerk.lifecycle.LifecycleStatus)"
                )
        if declared is not None and not isinstance(declared, Lifecycle):
            raise LifecycleDefinitionError(
                f"{label}: its lifecycle= is not a kubewerk.lifecycle.Lifecycle"
            )
        if lifecycle is not None and declared is not None and lifecycle is not declared:
            raise LifecycleDefinitionError(
                f"{label}: the resource class declares lifecycle {declared!r}; "
                "register it without another one"
            )
        chosen = lifecycle or declared or DEFAULT_LIFECYCLE
        resolved = resolve_strategy(rt.kind, rt.group, strategy, self.strategies, self.environ)

        def register(handler: H) -> H:
            if not callable(handler):
                raise LifecycleDefinitionError(f"{label}: the handler must be a function")
            own = OwnWrites()
            holder: list[KindRegistration] = []

            async def reconcile(obj: Any, ctx: Any) -> Result | None:
                return await self._reconcile(holder[0], obj, ctx)

            def context(ctrl: Controller[Any], key: str, snapshot: Any) -> LifecycleContext:
                return LifecycleContext(
                    ctrl,
                    key,
                    snapshot,
                    chosen,
                    kind=label,
                    metrics=self.metrics,
                    publish=self.publish,
                )

            controller = OnDemandController(
                name or self._controller_name(rt),
                kind,
                reconcile,
                predicates=(own.predicate, *predicates),
                max_concurrent_reconciles=max_concurrent_reconciles,
                reconcile_timeout=reconcile_timeout,
                rate_limiter=resolved.rate_limiter(),
                context_factory=context,
            )
            registration = KindRegistration(
                kind=kind,
                rt=rt,
                label=label,
                lifecycle=chosen,
                handler=handler,
                strategy=resolved,
                controller=controller,
                finalizer=finalizer,
                own_writes=own,
            )
            holder.append(registration)
            self.dependencies.add_kind(registration)  # refuses a cycle of required refs
            self.manager.add(controller)
            initial = chosen.initial.value
            self.manager.index(kind, PHASE_INDEX, lambda obj: [phase_of(obj) or initial])
            self.metrics.count_objects(label, lambda: self._phase_counts(registration))
            self.kinds[label] = registration
            log.debug("platform: %s registered (strategy %s)", label, resolved)
            return handler

        return register

    def _controller_name(self, rt: ResourceType) -> str:
        taken = {c.name for c in self.manager.controllers}
        short = rt.kind.lower()
        return short if short not in taken else f"{short}.{rt.group}"

    def registration(self, kind: Any) -> KindRegistration:
        """The registration of ``kind`` (KeyError when it is not registered)."""
        label = _label(resource_type_of(kind))
        try:
            return self.kinds[label]
        except KeyError:
            raise KeyError(f"{label} is not registered on this platform") from None

    def teardown(self, kind: Any) -> Callable[[H], H]:
        """Register ``handler(obj, ctx)`` to run when an object of ``kind`` is deleted
        (the kernel keeps its finalizer until the handler succeeds)."""
        registration = self.registration(kind)

        def register(handler: H) -> H:
            registration.teardown = handler
            return handler

        return register

    def gate(
        self,
        condition: str,
        *,
        kinds: Iterable[Any] | None = None,
        teardown: bool = False,
        passed_reason: str = "Satisfied",
        passed_message: str = "",
    ) -> Callable[[H], H]:
        """Register ``check(obj, ctx) -> Blocked | None`` as a gate owning condition
        ``condition`` for ``kinds`` (every kind when None); see
        :mod:`kubewerk.lifecycle.gates`."""

        def register(check: H) -> H:
            self.add_gate(
                Gate(condition, check, passed_reason, passed_message, teardown), kinds=kinds
            )
            return check

        return register

    def add_gate(self, gate: Gate, *, kinds: Iterable[Any] | None = None) -> None:
        """Add a readiness (or teardown) gate for ``kinds`` (every kind when None)."""
        labels = None if kinds is None else frozenset(_label(resource_type_of(k)) for k in kinds)
        owner_key = (gate.condition, gate.teardown)
        if owner_key in self._gate_owners:
            owners = self._gate_owners[owner_key]
            if owners is None or labels is None or labels & owners:
                raise LifecycleDefinitionError(
                    f"a gate owning condition {gate.condition} is already registered"
                )
            owners |= labels
        else:
            self._gate_owners[owner_key] = None if labels is None else set(labels)
        self._gate_count += 1
        entry = (self._gate_count, gate)
        if labels is None:
            self._global_gates.append(entry)
        else:
            for label in labels:
                self._label_gates.setdefault(label, []).append(entry)
        self._gates_of.clear()

    def gates_for(self, registration: KindRegistration, *, teardown: bool) -> list[Gate]:
        """The gates that apply to a kind, in registration order."""
        key = (registration.label, teardown)
        gates = self._gates_of.get(key)
        if gates is None:
            entries = sorted(
                [*self._global_gates, *self._label_gates.get(registration.label, ())],
                key=lambda entry: entry[0],
            )
            gates = self._gates_of[key] = [g for _, g in entries if g.teardown == teardown]
        return gates

    def watch(self, kind: Any, other: Any, mapper: Mapper, *predicates: Predicate) -> None:
        """Reconcile objects of ``kind`` that ``mapper(obj)`` names when an object of
        ``other`` changes (before the manager starts)."""
        self.registration(kind).controller.watches.append(Watch(other, mapper, predicates))

    # -- the kernel's reconcile -----------------------------------------------------------

    def _needs_finalizer(self, registration: KindRegistration) -> bool:
        if registration.finalizer is not None:
            return registration.finalizer
        return registration.teardown is not None or bool(
            self.gates_for(registration, teardown=True)
        )

    async def _reconcile(
        self, registration: KindRegistration, obj: Any, ctx: LifecycleContext
    ) -> Result | None:
        own = registration.own_writes
        own.begin(ctx.key)
        try:
            result = await self._run(registration, obj, ctx)
        except BaseException:
            own.end(ctx.key, ctx.written_versions, remember=False)  # the retry covers the rest
            raise
        if ctx.requeue is not None:
            after = ctx.requeue
            if result is not None and result.requeue_after is not None:
                after = min(after, result.requeue_after)
            result = Result.after(after)
        done = result is None or (not result.requeue and not result.requeue_after)
        if own.end(ctx.key, ctx.written_versions, remember=done):
            # someone else changed the object while it was reconciled: again, at once
            registration.controller.queue.add(ctx.key)
        return result

    async def _run(
        self, registration: KindRegistration, obj: Any, ctx: LifecycleContext
    ) -> Result | None:
        lc = registration.lifecycle
        if ctx.deleting:
            return await self._tear_down(registration, obj, ctx)
        if self._needs_finalizer(registration):
            await ctx.ensure_finalizer(obj, self.finalizer)
        phase = ctx.phase
        if phase is not None and lc.is_terminal(phase):
            return None
        blocked = await self._ask_gates(self.gates_for(registration, teardown=False), obj, ctx)
        if blocked is not None:
            await ctx.settle(obj)
            return Result.after(blocked.requeue_after) if blocked.requeue_after else None
        try:
            outcome = await registration.handler(obj, ctx)
        except IllegalTransition:
            raise
        except TerminalError as exc:
            if not await self._fail(lc, obj, ctx, exc):
                raise
            return None
        if isinstance(outcome, Result):
            await ctx.settle(obj)
            return outcome
        if outcome is None:
            await ctx.settle(obj)
            return None
        target = lc.phase(outcome)
        if target == ctx.phase:
            await ctx.settle(obj)
        else:
            await ctx.transition(obj, target)
        return None

    async def _fail(
        self, lc: Lifecycle[Any], obj: Any, ctx: LifecycleContext, exc: TerminalError
    ) -> bool:
        """Move to the lifecycle's failed phase after a terminal error, when allowed."""
        failed = lc.failed
        current = ctx.phase
        if failed is None or current is None or current == failed:
            return False
        if not lc.allows(current, failed):
            return False
        ctx.log.error("terminal error, moving to %s: %s", failed.value, exc)
        await ctx.transition(obj, failed, reason="ReconcileFailed", message=str(exc)[:32768])
        return True

    async def _ask_gates(
        self, gates: Sequence[Gate], obj: Any, ctx: LifecycleContext
    ) -> Blocked | None:
        """Ask every gate and set its condition on ``obj``; the first block (with the
        shortest requeue of all blocks), or None when all pass."""
        first: Blocked | None = None
        soonest: float | None = None
        for gate in gates:
            answer = await gate.ask(obj, ctx)
            if answer is None:
                conditions.set_condition(
                    obj, gate.condition, True, gate.passed_reason, gate.passed_message
                )
                continue
            conditions.set_condition(obj, gate.condition, False, answer.reason, answer.message)
            first = first or answer
            if answer.requeue_after is not None:
                soonest = (
                    answer.requeue_after if soonest is None else min(soonest, answer.requeue_after)
                )
        if first is None:
            return None
        return Blocked(first.reason, first.message, soonest)

    async def _tear_down(
        self, registration: KindRegistration, obj: Any, ctx: LifecycleContext
    ) -> Result | None:
        if self.finalizer not in ctx.finalizers:
            return None
        lc = registration.lifecycle
        current = ctx.phase
        deleting = lc.deleting
        if (
            deleting is not None
            and current is not None
            and current != deleting
            and lc.allows(current, deleting)
        ):
            try:
                await ctx.transition(obj, deleting, reason="DeletionRequested")
            except IllegalTransition as exc:  # a guard said no: tear down all the same
                ctx.log.warning("not moving to %s while deleting: %s", deleting.value, exc)
        blocked = await self._ask_gates(self.gates_for(registration, teardown=True), obj, ctx)
        if blocked is not None:
            await ctx.patch_status(obj)
            return Result.after(blocked.requeue_after) if blocked.requeue_after else None
        if registration.teardown is not None:
            try:
                await registration.teardown(obj, ctx)
            except Exception as exc:
                note = f"teardown of {registration.label} failed: {exc}"
                ctx.event("Warning", "CleanupFailed", note, action="Finalize")
                raise
        await ctx.remove_finalizer(obj, self.finalizer)
        return None

    # -- metrics ----------------------------------------------------------------------------

    def _phase_counts(self, registration: KindRegistration) -> dict[str, int]:
        cache = self.manager.cache
        if cache is None:
            return {}
        counts: dict[str, int] = {}
        for member in registration.lifecycle.members:
            count = len(cache.keys_by_index(registration.kind, PHASE_INDEX, member.value))
            if count:
                counts[member.value] = count
        others = len(cache.informer(registration.kind)) - sum(counts.values())
        if others > 0:
            counts["Undeclared"] = others
        return counts
