"""Declared lifecycles: the transition table, guards, roles, and the errors a bad
declaration raises where it is made."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from kubewerk.lifecycle import (
    DEFAULT_LIFECYCLE,
    IllegalTransition,
    Lifecycle,
    LifecycleDefinitionError,
    Phase,
    Transition,
    UnknownPhase,
)
from kubewerk.runtime import TerminalError

from .models import CACHE_LIFECYCLE, CachePhase


class P(enum.StrEnum):
    A = "A"
    B = "B"
    C = "C"


def test_the_default_lifecycle_is_the_issue_table() -> None:
    lc = DEFAULT_LIFECYCLE
    table = {m.value: [t.value for t in lc.targets(m)] for m in lc.members}
    assert table == {
        "Pending": ["Active", "Failed"],
        "Active": ["Reconciling", "Deleting", "Failed"],
        "Reconciling": ["Active", "Failed"],
        "Failed": ["Reconciling", "Deleting"],
        "Deleting": [],
    }
    assert lc.initial is Phase.PENDING
    assert lc.terminal == {Phase.DELETING}
    assert lc.ready == {Phase.ACTIVE}
    assert (lc.failed, lc.deleting) == (Phase.FAILED, Phase.DELETING)
    assert not lc.allows(Phase.FAILED, Phase.ACTIVE)
    assert lc.allows(Phase.FAILED, Phase.RECONCILING)
    assert lc.is_terminal(Phase.DELETING) and not lc.is_terminal(Phase.FAILED)
    assert Phase.ACTIVE == "Active"  # phases are strings: comparable with status.phase


def test_parse_and_phase() -> None:
    lc = DEFAULT_LIFECYCLE
    assert lc.parse("Active") is Phase.ACTIVE
    assert lc.parse(Phase.FAILED) is Phase.FAILED
    assert lc.parse("Unheard") is None and lc.parse(None) is None
    assert lc.phase("Reconciling") is Phase.RECONCILING
    with pytest.raises(UnknownPhase, match=r"'Activ' is not a phase of Phase \(phases: Pending,"):
        lc.phase("Activ")


def test_a_mapping_a_list_of_transitions_and_pairs_declare_the_same_table() -> None:
    by_map = Lifecycle(P, initial=P.A, transitions={P.A: [P.B], P.B: P.C}, terminal=[P.C])
    by_list = Lifecycle(
        P, initial=P.A, transitions=[Transition(P.A, P.B), (P.B, P.C)], terminal=[P.C]
    )
    for lc in (by_map, by_list):
        assert [(t.source, t.target) for t in lc.transitions()] == [(P.A, P.B), (P.B, P.C)]
        assert lc.ready == frozenset()  # no phase named Active or Ready
        assert lc.failed is None and lc.deleting is None


async def test_guards_sync_and_async() -> None:
    seen: list[Any] = []

    def sync_guard(obj: Any, ctx: Any) -> bool:
        seen.append((obj, ctx))
        return bool(obj)

    async def async_guard(obj: Any, ctx: Any) -> bool:
        return not obj

    t1 = Transition(P.A, P.B, guard=sync_guard, trigger="Go")
    t2 = Transition(P.A, P.B, guard=async_guard)
    assert await t1.allows(1, "ctx") and not await t1.allows(0, "ctx")
    assert seen == [(1, "ctx"), (0, "ctx")]
    assert await t2.allows(0, None) and not await t2.allows(1, None)
    assert await Transition(P.A, P.B).allows(None, None)
    assert (t1.guard_name, t2.guard_name, Transition(P.A, P.B).guard_name) == (
        "sync_guard",
        "async_guard",
        None,
    )


def test_custom_lifecycle_roles() -> None:
    lc = CACHE_LIFECYCLE
    assert lc.ready == {CachePhase.WARM}
    assert lc.failed is None and lc.deleting is None
    assert lc.transition(CachePhase.WAITING, CachePhase.WARM).trigger == "Filled"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"initial": CachePhase.WARM, "transitions": [(P.A, P.B)]},
            r"P: initial <CachePhase.WARM: 'Warm'> is not a phase of P \(phases: A, B, C\)",
        ),
        (
            {"initial": P.A, "transitions": [(P.A, "B")]},
            r"P: a transition's target 'B' is not a phase of P",
        ),
        (
            {"initial": P.A, "transitions": [(P.A, P.A), (P.A, P.B)]},
            r"P: A → A: a phase does not transition to itself",
        ),
        (
            {"initial": P.A, "transitions": [(P.A, P.B), Transition(P.A, P.B)]},
            r"P: A → B is declared twice",
        ),
        (
            {
                "initial": P.A,
                "transitions": [(P.A, P.B), (P.B, P.C), (P.C, P.A)],
                "terminal": [P.C],
            },
            r"P: terminal phase C has transitions out \(A\)",
        ),
        (
            {"initial": P.A, "transitions": [(P.A, P.B), (P.B, P.C)], "terminal": []},
            r"P: phases C have no transition out; declare them terminal",
        ),
        (
            {"initial": P.A, "transitions": [(P.A, P.B), (P.C, P.B)], "terminal": [P.B]},
            r"P: phases C cannot be reached from the initial phase A",
        ),
        (
            {"initial": P.A, "transitions": [Transition(P.A, P.B, trigger="no spaces")]},
            r"trigger 'no spaces' must be an identifier",
        ),
        (
            {
                "initial": P.A,
                "transitions": [(P.A, P.B), (P.A, P.C)],
                "failed": CachePhase.COLD,
            },
            r"failed=<CachePhase.COLD: 'Cold'> is not a member of P",
        ),
        (
            {"initial": P.A, "transitions": ["A->B"]},
            r"transitions take Transition\(source, target, ...\) or \(source, target\) pairs",
        ),
    ],
)
def test_declaration_errors_name_what_is_wrong(kwargs: dict[str, Any], message: str) -> None:
    kwargs.setdefault("terminal", [P.B, P.C])
    with pytest.raises(LifecycleDefinitionError, match=message):
        Lifecycle(P, **kwargs)


def test_phase_values_must_be_identifiers_and_not_aliases() -> None:
    class Spaced(enum.Enum):
        A = "in progress"

    with pytest.raises(
        LifecycleDefinitionError, match=r"Spaced.A: a phase's value .* 'in progress'"
    ):
        Lifecycle(Spaced, initial=Spaced.A, transitions=[], terminal=[Spaced.A])

    class Numbered(enum.Enum):
        A = 1

    with pytest.raises(LifecycleDefinitionError, match="must be an identifier"):
        Lifecycle(Numbered, initial=Numbered.A, transitions=[], terminal=[Numbered.A])

    class Aliased(enum.Enum):
        A = "A"
        B = "B"
        ALSO_A = "A"

    with pytest.raises(
        LifecycleDefinitionError, match=r"phases may not be aliases \(\['ALSO_A'\]\)"
    ):
        Lifecycle(
            Aliased, initial=Aliased.A, transitions=[(Aliased.A, Aliased.B)], terminal=[Aliased.B]
        )

    with pytest.raises(LifecycleDefinitionError, match="must be an Enum class"):
        Lifecycle(str, initial="A", transitions=[])  # type: ignore[type-var, arg-type]


def test_two_candidate_ready_phases_need_an_explicit_ready() -> None:
    class Both(enum.StrEnum):
        ACTIVE = "Active"
        READY = "Ready"

    with pytest.raises(LifecycleDefinitionError, match="say which phases are ready"):
        Lifecycle(
            Both,
            initial=Both.ACTIVE,
            transitions=[(Both.ACTIVE, Both.READY)],
            terminal=[Both.READY],
        )
    lc = Lifecycle(
        Both,
        initial=Both.ACTIVE,
        transitions=[(Both.ACTIVE, Both.READY)],
        terminal=[Both.READY],
        ready=[Both.READY],
    )
    assert lc.ready == {Both.READY}


def test_illegal_transition_is_terminal_and_says_where_it_may_go() -> None:
    exc = IllegalTransition(
        "Database.example.com", "ns/db", "Failed", "Active", ["Reconciling", "Deleting"]
    )
    assert isinstance(exc, TerminalError)
    assert exc.detail == (
        "illegal phase transition Failed → Active (allowed from Failed: Reconciling, Deleting)"
    )
    assert str(exc) == f"Database.example.com ns/db: {exc.detail}"
    terminal = IllegalTransition("K.g", "k", "Deleting", "Active", [])
    assert terminal.detail.endswith("(allowed from Deleting: none, Deleting is terminal)")
    guarded = IllegalTransition("K.g", "k", "A", "B", ["B"], guard="has_size")
    assert guarded.detail == "phase transition A → B refused by its guard has_size"
    assert guarded.guard == "has_size"


def test_repr_shows_the_table() -> None:
    assert repr(DEFAULT_LIFECYCLE).startswith("Lifecycle(Phase: Pending → Active | Failed; Active")
