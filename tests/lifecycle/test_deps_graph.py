"""The dependency graphs as plain data: edges and the reverse index kept by edits,
cycles formed and broken by edits (checked against a from-scratch computation after
thousands of random edits), and cycles between kinds made of required refs."""

from __future__ import annotations

import random

import pytest

from kubewerk.lifecycle.depgraph import (
    Edge,
    InstanceGraph,
    KindEdge,
    NodeId,
    format_cycle,
    required_kind_cycle,
)
from kubewerk.model import OnDelete


def node(name: str, kind: str = "App") -> NodeId:
    return NodeId("example.com", kind, "default", name)


def edge(target: NodeId, path: str = "spec.ref") -> Edge:
    return Edge(target, path)


A, B, C, D = node("a"), node("b"), node("c"), node("d")


def test_edges_and_the_reverse_index_follow_edits() -> None:
    graph = InstanceGraph()
    change = graph.set_edges(A, [edge(B), edge(C, "spec.other")])
    assert (change.added, change.removed, change.cycles) == (frozenset({B, C}), frozenset(), {})
    assert graph.dependents(B) == {A} and graph.dependents(C) == {A}
    assert graph.targets(A) == {B, C} and len(graph) == 1 and A in graph and B not in graph
    assert graph.dependent_edges(C) == [(A, Edge(C, "spec.other"))]

    change = graph.set_edges(A, [edge(C), edge(D)])
    assert (change.added, change.removed) == (frozenset({D}), frozenset({B}))
    assert graph.dependents(B) == frozenset() and graph.dependents(D) == {A}

    # the same targets through other fields: nothing changed structurally
    assert not graph.set_edges(A, [Edge(C, "spec.x", OnDelete.CASCADE), edge(D)]).targets_changed
    assert graph.edges(A)[0].on_delete is OnDelete.CASCADE

    change = graph.remove(A)
    assert change.removed == {C, D} and len(graph) == 0
    assert graph.dependents(C) == frozenset() and graph.edges(A) == ()


def test_a_cycle_made_by_an_edit_is_reported_on_every_member_and_cleared_by_another() -> None:
    graph = InstanceGraph()
    graph.set_edges(A, [edge(B)])
    graph.set_edges(B, [edge(C)])
    assert graph.cycles() == []
    change = graph.set_edges(C, [edge(A)])  # closes a -> b -> c -> a
    assert change.cycles == {A: (A, B, C), B: (B, C, A), C: (C, A, B)}
    assert graph.cycle(B) == (B, C, A)
    assert (
        format_cycle(graph.cycle(A) or ())
        == "App/default/a -> App/default/b -> App/default/c -> App/default/a"
    )
    assert graph.component(A) == {A, B, C}
    assert graph.cycles() == [(A, B, C)]

    # D joins: d -> a, a -> d makes a shorter cycle through a and d; b and c keep theirs
    graph.set_edges(D, [edge(A)])
    change = graph.set_edges(A, [edge(B), edge(D)])
    assert change.cycles == {A: (A, D), D: (D, A)}
    assert graph.component(B) == {A, B, C, D}

    # breaking b -> c leaves only a <-> d
    change = graph.set_edges(B, [])
    assert change.cycles == {B: None, C: None}
    assert graph.cycles() == [(A, D)]

    change = graph.remove(D)
    assert change.cycles == {A: None, D: None}
    assert graph.cycles() == [] and graph.cycle(A) is None


def test_an_object_referring_to_itself_is_a_cycle() -> None:
    graph = InstanceGraph()
    assert graph.set_edges(A, [edge(A)]).cycles == {A: (A,)}
    assert format_cycle((A,)) == "App/default/a -> App/default/a"
    assert graph.set_edges(A, [edge(B)]).cycles == {A: None}


def _reference_cycles(out: dict[NodeId, set[NodeId]]) -> dict[NodeId, frozenset[NodeId]]:
    """Every node on a cycle → its component, computed from scratch (reachability)."""
    nodes = set(out) | {t for ts in out.values() for t in ts}
    reach: dict[NodeId, set[NodeId]] = {}
    for start in nodes:
        seen: set[NodeId] = set()
        todo = list(out.get(start, ()))
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(out.get(n, ()))
        reach[start] = seen
    return {
        n: frozenset({m for m in nodes if m in reach[n] and n in reach[m]} | {n})
        for n in nodes
        if n in reach[n]
    }


def test_incremental_cycles_match_a_full_recomputation_after_random_edits() -> None:
    rng = random.Random(1234)
    names = [node(f"n{i}") for i in range(12)]
    graph = InstanceGraph()
    out: dict[NodeId, set[NodeId]] = {}
    reported: dict[NodeId, tuple[NodeId, ...]] = {}
    for _ in range(3000):
        source = rng.choice(names)
        targets = set(rng.sample(names, rng.choice((0, 1, 1, 2))))
        change = graph.set_edges(source, [edge(t) for t in sorted(targets)])
        if targets:
            out[source] = targets
        else:
            out.pop(source, None)
        for member, cycle in change.cycles.items():
            if cycle is None:
                reported.pop(member, None)
            else:
                reported[member] = cycle
        expected = _reference_cycles(out)
        assert {n: graph.component(n) for n in expected} == expected
        assert set(reported) == set(expected)  # the deltas alone give the right members
        for member, cycle in reported.items():
            assert graph.cycle(member) == cycle and cycle[0] == member
            for here, there in zip(cycle, (*cycle[1:], cycle[0]), strict=True):
                assert there in out[here]  # each step is an edge
        for target in names:
            assert graph.dependents(target) == {s for s, ts in out.items() if target in ts}


def test_required_kind_cycles_are_found_and_optional_ones_allowed() -> None:
    edges = [
        KindEdge("Application", "Database", "spec.databaseRef", True),
        KindEdge("Database", "Tenant", "spec.tenantRef", True),
        KindEdge("Tenant", "Application", "spec.defaultAppRef", False),
        KindEdge("Project", "Project", "spec.parentRef", False),
    ]
    assert required_kind_cycle(edges) is None
    edges.append(KindEdge("Database", "Application", "spec.ownerRef", True))
    cycle = required_kind_cycle(edges)
    assert cycle is not None
    assert [(e.source, e.target, e.path) for e in cycle] == [
        ("Application", "Database", "spec.databaseRef"),
        ("Database", "Application", "spec.ownerRef"),
    ]
    assert [
        (e.source, e.target) for e in required_kind_cycle([KindEdge("X", "X", "p", True)]) or []
    ] == [("X", "X")]


@pytest.mark.parametrize(("namespace", "shown"), [("ns", "Tenant/ns/t"), (None, "Tenant/t")])
def test_a_node_prints_as_kind_namespace_name(namespace: str | None, shown: str) -> None:
    tenant = NodeId("example.com", "Tenant", namespace, "t")
    assert str(tenant) == shown
    assert tenant.label == "Tenant.example.com"
    assert NodeId("", "Secret", "ns", "s").label == "Secret"
