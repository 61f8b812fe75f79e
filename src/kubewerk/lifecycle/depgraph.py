"""The dependency graphs: between objects (:class:`InstanceGraph`) and between kinds
(:func:`required_kind_cycle`). Plain data, no I/O: the kernel feeds the instance graph
from its informers, ``kubewerk graph`` from manifests or a cluster.

:class:`InstanceGraph` holds an edge from every object to each object its refs name,
and the reverse index (target → the objects that reference it), both kept as objects
change: :meth:`InstanceGraph.set_edges` replaces one object's edges and answers what
changed (:class:`GraphChange`). It also keeps, incrementally, which objects are on a
cycle: an object is on a cycle when it can reach itself by following refs, i.e. when it
belongs to a strongly connected component with more than one member (or refers to
itself). A change of one object's edges can only merge components through that object
or split the component it was in, so only those are recomputed: the objects that the
changed one reaches and that reach it back (found by a forward search and a backward
search inside it), and the members of its former component. Each object on a cycle
has one cycle through it in order (:meth:`InstanceGraph.cycle`, a shortest one, chosen
deterministically), which is what the kernel reports.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from kubewerk.core.gvk import join_key
from kubewerk.model.refs import OnDelete

__all__ = [
    "Edge",
    "GraphChange",
    "InstanceGraph",
    "KindEdge",
    "NodeId",
    "format_cycle",
    "required_kind_cycle",
]


class NodeId(NamedTuple):
    """One object: its kind's group and name, its namespace (None: cluster-scoped) and name."""

    group: str
    kind: str
    namespace: str | None
    name: str

    @property
    def label(self) -> str:
        """The kind as ``Kind.group`` (``Kind`` for the core group)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def key(self) -> str:
        """The object key, ``namespace/name`` (``name`` when cluster-scoped)."""
        return join_key(self.namespace, self.name)

    def __str__(self) -> str:
        """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped)."""
        return f"{self.kind}/{self.key}"


@dataclass(frozen=True, slots=True)
class Edge:
    """A ref from one object to ``target``, held at ``path`` (``spec.databaseRef``)."""

    target: NodeId
    path: str
    on_delete: OnDelete = OnDelete.BLOCK


@dataclass(frozen=True, slots=True)
class GraphChange:
    """What one :meth:`InstanceGraph.set_edges` (or ``remove``) changed."""

    added: frozenset[NodeId] = frozenset()
    """Objects the changed object now depends on and did not before."""
    removed: frozenset[NodeId] = frozenset()
    """Objects it no longer depends on."""
    cycles: dict[NodeId, tuple[NodeId, ...] | None] = field(default_factory=dict)
    """Objects whose cycle changed: the new cycle through each (None: no longer on one)."""

    @property
    def targets_changed(self) -> bool:
        """Whether the set of objects the changed object depends on changed."""
        return bool(self.added or self.removed)


def format_cycle(cycle: tuple[NodeId, ...]) -> str:
    """``A/ns/a -> B/ns/b -> A/ns/a``: the cycle in order, back to its first member."""
    return " -> ".join(str(n) for n in (*cycle, cycle[0]))


class InstanceGraph:
    """Objects and the refs between them, with the reverse index and the cycles kept
    as edges change (see the module doc). Memory: the edges and one reverse entry per
    edge; nothing for objects without refs that nobody references."""

    def __init__(self) -> None:
        self._out: dict[NodeId, tuple[Edge, ...]] = {}
        self._in: dict[NodeId, set[NodeId]] = {}
        self._component: dict[NodeId, frozenset[NodeId]] = {}
        """Objects on a cycle → their strongly connected component."""
        self._cycle: dict[NodeId, tuple[NodeId, ...]] = {}
        """Objects on a cycle → the cycle through them, starting with them."""

    # -- questions ------------------------------------------------------------------------

    def __len__(self) -> int:
        """How many objects have refs."""
        return len(self._out)

    def __contains__(self, node: object) -> bool:
        """Whether ``node`` has refs in the graph."""
        return node in self._out

    def referrers(self) -> Iterator[NodeId]:
        """Every object that has refs."""
        return iter(self._out)

    def edges(self, node: NodeId) -> tuple[Edge, ...]:
        """The refs ``node`` holds, in the order they were given."""
        return self._out.get(node, ())

    def targets(self, node: NodeId) -> frozenset[NodeId]:
        """The objects ``node`` depends on."""
        return frozenset(e.target for e in self._out.get(node, ()))

    def dependents(self, node: NodeId) -> frozenset[NodeId]:
        """The objects that reference ``node`` (its reverse index entry)."""
        return frozenset(self._in.get(node, ()))

    def dependent_edges(self, node: NodeId) -> list[tuple[NodeId, Edge]]:
        """Every ``(referrer, edge)`` naming ``node``, sorted by referrer."""
        out: list[tuple[NodeId, Edge]] = []
        for referrer in sorted(self._in.get(node, ())):
            out.extend((referrer, e) for e in self._out.get(referrer, ()) if e.target == node)
        return out

    def cycle(self, node: NodeId) -> tuple[NodeId, ...] | None:
        """The cycle through ``node`` in order, starting with it (None: not on a cycle)."""
        return self._cycle.get(node)

    def component(self, node: NodeId) -> frozenset[NodeId]:
        """The objects on cycles with ``node`` (empty when it is on none)."""
        return self._component.get(node, frozenset())

    def cycles(self) -> list[tuple[NodeId, ...]]:
        """One cycle per strongly connected component, each starting at its component's
        smallest member, sorted."""
        seen: set[frozenset[NodeId]] = set()
        out: list[tuple[NodeId, ...]] = []
        for members in self._component.values():
            if members in seen:
                continue
            seen.add(members)
            out.append(self._cycle[min(members)])
        return sorted(out)

    # -- changes --------------------------------------------------------------------------

    def set_edges(self, node: NodeId, edges: Iterable[Edge]) -> GraphChange:
        """Replace the refs ``node`` holds (none: it depends on nothing)."""
        new_edges = tuple(edges)
        old_targets = self.targets(node)
        if new_edges:
            self._out[node] = new_edges
        else:
            self._out.pop(node, None)
        new_targets = frozenset(e.target for e in new_edges)
        if new_targets == old_targets:
            return GraphChange()
        for target in old_targets - new_targets:
            bucket = self._in[target]
            bucket.discard(node)
            if not bucket:
                del self._in[target]
        for target in new_targets - old_targets:
            self._in.setdefault(target, set()).add(node)
        return GraphChange(
            added=new_targets - old_targets,
            removed=old_targets - new_targets,
            cycles=self._recompute(node),
        )

    def remove(self, node: NodeId) -> GraphChange:
        """``node`` is gone: drop its refs (objects that reference it keep their edges:
        they now name a missing object)."""
        return self.set_edges(node, ())

    # -- cycles ---------------------------------------------------------------------------

    def _recompute(self, node: NodeId) -> dict[NodeId, tuple[NodeId, ...] | None]:
        old_members = self._component.get(node, frozenset({node}))
        joined = self._component_through(node)
        touched = set(old_members) | joined
        before = {n: self._cycle.get(n) for n in touched}
        for member in touched:
            self._component.pop(member, None)
            self._cycle.pop(member, None)
        components = [joined]
        components.extend(self._components_within(set(old_members) - joined))
        for members in components:
            if len(members) > 1 or (
                len(members) == 1 and next(iter(members)) in self.targets(next(iter(members)))
            ):
                frozen = frozenset(members)
                for member in frozen:
                    self._component[member] = frozen
                for member in frozen:
                    self._cycle[member] = self._shortest_cycle(member, frozen)
        return {n: self._cycle.get(n) for n in touched if self._cycle.get(n) != before[n]}

    def _component_through(self, node: NodeId) -> set[NodeId]:
        """The objects ``node`` reaches that reach it back (with ``node`` itself)."""
        forward = {node}
        todo = [node]
        while todo:
            for edge in self._out.get(todo.pop(), ()):
                if edge.target not in forward:
                    forward.add(edge.target)
                    todo.append(edge.target)
        # a path back to node only passes objects node reaches: search backwards inside them
        back = {node}
        todo = [node]
        while todo:
            for referrer in self._in.get(todo.pop(), ()):
                if referrer in forward and referrer not in back:
                    back.add(referrer)
                    todo.append(referrer)
        return back

    def _components_within(self, members: set[NodeId]) -> list[set[NodeId]]:
        """Strongly connected components of the objects ``members`` and the edges among
        them (Tarjan's algorithm, iterative)."""
        index: dict[NodeId, int] = {}
        low: dict[NodeId, int] = {}
        stack: list[NodeId] = []
        on_stack: set[NodeId] = set()
        found: list[set[NodeId]] = []
        for start in sorted(members):
            if start in index:
                continue
            work: list[tuple[NodeId, Iterator[NodeId]]] = []
            index[start] = low[start] = len(index)
            stack.append(start)
            on_stack.add(start)
            work.append((start, iter(sorted(t for t in self.targets(start) if t in members))))
            while work:
                current, successors = work[-1]
                advanced = False
                for succ in successors:
                    if succ not in index:
                        index[succ] = low[succ] = len(index)
                        stack.append(succ)
                        on_stack.add(succ)
                        targets = sorted(t for t in self.targets(succ) if t in members)
                        work.append((succ, iter(targets)))
                        advanced = True
                        break
                    if succ in on_stack:
                        low[current] = min(low[current], index[succ])
                if advanced:
                    continue
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[current])
                if low[current] == index[current]:
                    component: set[NodeId] = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == current:
                            break
                    found.append(component)
        return found

    def _shortest_cycle(self, node: NodeId, members: frozenset[NodeId]) -> tuple[NodeId, ...]:
        """A shortest cycle through ``node`` inside its component (breadth first, targets
        in sorted order, so the same graph always gives the same cycle)."""
        parents: dict[NodeId, NodeId] = {}
        queue: deque[NodeId] = deque([node])
        seen = {node}
        while queue:
            current = queue.popleft()
            for target in sorted(self.targets(current)):
                if target not in members:
                    continue
                if target == node:
                    path = [current]
                    while path[-1] != node:
                        path.append(parents[path[-1]])
                    return tuple(reversed(path))
                if target not in seen:
                    seen.add(target)
                    parents[target] = current
                    queue.append(target)
        raise AssertionError(f"{node} is not on a cycle inside its component")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class KindEdge:
    """A ref field of kind ``source`` naming kind ``target`` (kinds as their names)."""

    source: str
    target: str
    path: str
    required: bool


def required_kind_cycle(edges: Iterable[KindEdge]) -> list[KindEdge] | None:
    """A cycle between kinds made only of required refs, as its edges in order (None
    when there is none). Such kinds can never all exist without an object cycle or a
    missing dependency, so a declaration with one is refused; a cycle through an
    optional ref (``X | None``, a list, a map) is allowed: objects may break it."""
    graph: dict[str, list[KindEdge]] = {}
    for edge in edges:
        if edge.required:
            graph.setdefault(edge.source, []).append(edge)
    for entries in graph.values():
        entries.sort(key=lambda e: (e.target, e.path))
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[KindEdge] = []

    def visit(kind: str) -> list[KindEdge] | None:
        state[kind] = 1
        for edge in graph.get(kind, ()):
            if state.get(edge.target) == 1:
                start = next((i for i, e in enumerate(path) if e.source == edge.target), len(path))
                return [*path[start:], edge]
            if edge.target not in state:
                path.append(edge)
                found = visit(edge.target)
                if found is not None:
                    return found
                path.pop()
        state[kind] = 2
        return None

    for kind in sorted(graph):
        if kind not in state:
            found = visit(kind)
            if found is not None:
                return found
    return None
