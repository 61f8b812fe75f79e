"""What the dashboard and the kubectl plugin show, as JSON-ready data read from a
:class:`~kubewerk.observe.state.ClusterState` (no I/O, no formatting for a medium).

- :func:`summary`: per kind the object count, counts per phase and per ``Ready``
  status, and the stuck objects (see :mod:`kubewerk.observe.health`) — kinds with stuck
  objects first, stuck objects most severe first, each with its reasons and last Events;
- :func:`object_view`: one object with its conditions, phase history (its
  ``PhaseChanged`` Events), owners and children, dependencies and dependents;
- :func:`graph_view`: the dependency graph of a namespace or of everything around one
  object (a tenant), laid out in layers (an object right of everything it depends on),
  cycle edges and members marked;
- :func:`lookup_kind` / :func:`resolve_kind`: a kind as a user types it (``db``,
  ``Database``, ``databases``, ``databases.platform.kubewerk.dev``), resolved against the
  server's discovery as kubectl resolves a resource argument, with kubectl's error.

Every string in the output is data: the caller escapes it for its medium.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from kubewerk.lifecycle.depgraph import NodeId
from kubewerk.observe.health import (
    SEVERITY,
    Stuck,
    conditions_of,
    phase_of,
    ready_of,
    stuck_reasons,
)
from kubewerk.observe.resourcenames import (
    ServedResource,
    go_quote,
    resolve_resource_arg,
    served_from_types,
    unknown_resource_type,
)
from kubewerk.observe.state import ClusterState, KindKey

__all__ = [
    "GRAPH_LIMIT",
    "STUCK_LIMIT",
    "KindLookup",
    "graph_view",
    "ident",
    "lookup_kind",
    "object_view",
    "resolve_kind",
    "summary",
]

_FAR: Final = datetime(9999, 1, 1, tzinfo=UTC)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
STUCK_LIMIT: Final = 200
"""Stuck objects listed in a summary (the count is always the full one)."""
GRAPH_LIMIT: Final = 400
"""Objects drawn in one graph (beyond it the graph says it was cut)."""
LAST_EVENTS: Final = 3


def ident(node: NodeId) -> dict[str, Any]:
    """An object's identity: ``kind``, ``group``, ``label`` (Kind.group), ``namespace``
    (empty when cluster-scoped), ``name`` and ``id`` (``Kind.group/namespace/name``)."""
    label = f"{node.kind}.{node.group}" if node.group else node.kind
    return {
        "kind": node.kind,
        "group": node.group,
        "label": label,
        "namespace": node.namespace or "",
        "name": node.name,
        "id": f"{label}/{node.namespace or ''}/{node.name}",
    }


def _events(state: ClusterState, node: NodeId, last: int) -> list[dict[str, Any]]:
    return [r.to_json() for r in state.events_of(node)[-last:]][::-1]


def _health(
    state: ClusterState, obj: dict[str, Any], now: datetime
) -> tuple[str | None, str | None, list[Stuck]]:
    """Phase, Ready and stuck reasons of ``obj``, remembered per object (by identity:
    the state replaces an object's dict on every change) unless the answer depends on
    the time (a deletion or a generation not yet observed)."""
    cached = state.health_cache.get(id(obj))
    if cached is not None and cached[0] is obj:
        return cached[1], cached[2], cached[3]
    answer = (phase_of(obj), ready_of(obj), stuck_reasons(obj, now))
    meta = obj.get("metadata")
    # the grace periods are what makes an answer depend on the time: an object with no
    # deletion and no generation lag gets the same answer at any time
    timeless = (
        isinstance(meta, dict)
        and "deletionTimestamp" not in meta
        and stuck_reasons(obj, _FAR) == answer[2]
        and stuck_reasons(obj, _EPOCH) == answer[2]
    )
    if timeless:
        state.health_cache[id(obj)] = (obj, *answer)
    return answer


def summary(
    state: ClusterState, now: datetime | None = None, *, limit: int = STUCK_LIMIT
) -> dict[str, Any]:
    """The health summary (see the module doc) as a JSON object: ``cluster``,
    ``version``, ``generatedAt``, ``kinds`` (label, group, kind, plural, version,
    namespaced, total, phases, ready, stuck, error), ``stuck`` (at most ``limit``) and
    ``stuckTotal``."""
    now = now or datetime.now(UTC)
    kinds: list[dict[str, Any]] = []
    stuck: list[tuple[tuple[int, str, str], dict[str, Any]]] = []
    for key, info in state.kinds.items():
        objects = state.objects.get(key, {})
        phases: Counter[str] = Counter()
        ready: Counter[str] = Counter()
        stuck_here = 0
        for node, obj in objects.items():
            phase, ready_status, reasons = _health(state, obj, now)
            phases[phase or "(none)"] += 1
            ready[ready_status or "None"] += 1
            if not reasons:
                continue
            stuck_here += 1
            first = reasons[0]
            entry = {
                **ident(node),
                "phase": phase,
                "ready": ready_status,
                "reasons": [r.to_json() for r in reasons],
            }
            sort_key = (SEVERITY[first.code], key.label, f"{node.namespace or ''}/{node.name}")
            stuck.append((sort_key, entry))
        kinds.append(
            {
                "label": key.label,
                "group": key.group,
                "kind": key.kind,
                "plural": info.rt.plural,
                "version": info.rt.version,
                "namespaced": info.rt.namespaced,
                "total": len(objects),
                "phases": dict(sorted(phases.items())),
                "ready": {s: ready.get(s, 0) for s in ("True", "False", "Unknown", "None")},
                "stuck": stuck_here,
                "error": info.error,
            }
        )
    kinds.sort(key=lambda k: (-k["stuck"], k["error"] is None, k["label"].lower()))
    stuck.sort(key=lambda s: s[0])
    shown = [entry for _k, entry in stuck[:limit]]
    for entry in shown:
        node = NodeId(entry["group"], entry["kind"], entry["namespace"] or None, entry["name"])
        entry["events"] = _events(state, node, LAST_EVENTS)
    return {
        "cluster": state.name,
        "version": state.version,
        "generatedAt": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "kinds": kinds,
        "stuck": shown,
        "stuckTotal": len(stuck),
    }


def _state_of(state: ClusterState, node: NodeId) -> dict[str, Any]:
    obj = state.get(node)
    if obj is not None:
        return {**ident(node), "present": True, "phase": phase_of(obj), "ready": ready_of(obj)}
    watched = state.watched(node.group, node.kind)
    # an object of a kind the dashboard does not watch (a Secret) may well be there
    return {**ident(node), "present": False if watched else None, "phase": None, "ready": None}


def object_view(state: ClusterState, node: NodeId, now: datetime | None = None) -> dict[str, Any]:
    """One object's page as JSON: ``object`` (None when not there), ``conditions``,
    ``stuck``, ``phaseHistory`` (oldest first), ``events`` (newest first), ``owners``,
    ``children``, ``dependencies``, ``dependents`` and ``cycle`` (the members of the
    cycle through it, or empty)."""
    obj = state.get(node)
    events = state.events_of(node)
    history = [
        {"time": e.time, "message": e.message, "count": e.count}
        for e in events
        if e.reason == "PhaseChanged"
    ]
    owners: list[dict[str, Any]] = []
    children: list[dict[str, Any]] = []
    if obj is not None:
        raw_meta = obj.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        for ref in meta.get("ownerReferences") or []:
            if not isinstance(ref, dict):
                continue
            owner = state.uids.get(str(ref.get("uid", "")))
            if owner is not None:
                owners.append(
                    {**_state_of(state, owner), "controller": bool(ref.get("controller"))}
                )
            else:
                api_version = str(ref.get("apiVersion", ""))
                group = api_version.rpartition("/")[0] if "/" in api_version else ""
                owner = NodeId(
                    group, str(ref.get("kind", "")), node.namespace, str(ref.get("name", ""))
                )
                owners.append(
                    {
                        **ident(owner),
                        "present": None,
                        "phase": None,
                        "ready": None,
                        "controller": bool(ref.get("controller")),
                    }
                )
        uid = str(meta.get("uid", ""))
        children = [_state_of(state, c) for c in sorted(state.children.get(uid, ()))]
    dependencies = [
        {**_state_of(state, e.target), "path": e.path, "onDelete": e.on_delete.value}
        for e in sorted(state.graph.edges(node), key=lambda e: (e.path, e.target))
    ]
    dependents = [
        {**_state_of(state, src), "path": e.path, "onDelete": e.on_delete.value}
        for src, e in sorted(state.graph.dependent_edges(node), key=lambda p: (p[0], p[1].path))
    ]
    cycle = state.graph.cycle(node) if node in state.graph else None
    return {
        **ident(node),
        "object": obj,
        "phase": phase_of(obj) if obj is not None else None,
        "ready": ready_of(obj) if obj is not None else None,
        "conditions": conditions_of(obj) if obj is not None else [],
        "stuck": [s.to_json() for s in stuck_reasons(obj, now)] if obj is not None else [],
        "phaseHistory": history,
        "events": [e.to_json() for e in reversed(events)],
        "owners": owners,
        "children": children,
        "dependencies": dependencies,
        "dependents": dependents,
        "cycle": [ident(n)["id"] for n in cycle] if cycle else [],
    }


# -- the graph ---------------------------------------------------------------------------

X_STEP: Final = 240
Y_STEP: Final = 56
NODE_W: Final = 200
NODE_H: Final = 36


def _around(state: ClusterState, root: NodeId) -> set[NodeId]:
    """``root``, everything that depends on it (transitively), and everything those
    depend on (transitively): a tenant's stack and what it needs."""
    members = {root}
    todo = [root]
    while todo:
        node = todo.pop()
        for dep in state.graph.dependents(node):
            if dep not in members:
                members.add(dep)
                todo.append(dep)
    todo = list(members)
    while todo:
        node = todo.pop()
        for target in state.graph.targets(node):
            if target not in members:
                members.add(target)
                todo.append(target)
    return members


def _layers(nodes: list[NodeId], targets: dict[NodeId, list[NodeId]]) -> dict[NodeId, int]:
    """Layer of each node: 0 for what depends on nothing (within ``nodes``), else one
    more than the deepest target; edges that close a cycle are not followed."""
    layer: dict[NodeId, int] = {}
    visiting: set[NodeId] = set()
    for start in nodes:
        if start in layer:
            continue
        stack: list[tuple[NodeId, int]] = [(start, 0)]
        visiting.add(start)
        while stack:
            node, i = stack[-1]
            outs = targets.get(node, [])
            if i < len(outs):
                stack[-1] = (node, i + 1)
                nxt = outs[i]
                if nxt not in layer and nxt not in visiting:
                    visiting.add(nxt)
                    stack.append((nxt, 0))
                continue
            stack.pop()
            visiting.discard(node)
            layer[node] = 1 + max((layer[t] for t in outs if t in layer), default=-1)
    return layer


def graph_view(
    state: ClusterState,
    *,
    namespace: str | None = None,
    root: NodeId | None = None,
    limit: int = GRAPH_LIMIT,
) -> dict[str, Any]:
    """The graph of ``namespace`` (its objects and what they name), of the stack
    around ``root``, or of every object with refs (neither given), as JSON: ``nodes``
    (identity, phase, ready, present, x, y, onCycle), ``edges`` (from, to, path,
    onCycle), ``cycles`` (lists of ids), ``width``, ``height`` and ``truncated``."""
    if root is not None:
        members = _around(state, root)
    else:
        # every object that holds refs or is named by one, in the namespace
        members = {
            n
            for objects in state.objects.values()
            for n in objects
            if (namespace is None or n.namespace == namespace)
            and (n in state.graph or state.graph.dependents(n))
        }
        members |= {t for n in list(members) for t in state.graph.targets(n)}
    ordered = sorted(members)
    truncated = len(ordered) > limit
    ordered = ordered[:limit]
    kept = set(ordered)
    targets = {n: sorted(t for t in state.graph.targets(n) if t in kept) for n in ordered}
    layer = _layers(ordered, targets)
    columns: dict[int, list[NodeId]] = {}
    for node in ordered:
        columns.setdefault(layer[node], []).append(node)
    # one barycentre pass, left to right: a node near the rows of what it depends on
    row: dict[NodeId, float] = {}
    for col in sorted(columns):
        nodes = columns[col]
        if col > 0:

            def centre(n: NodeId) -> tuple[float, NodeId]:
                rows = [row[t] for t in targets[n] if t in row]
                return (sum(rows) / len(rows) if rows else float("inf"), n)

            nodes.sort(key=centre)
        for i, node in enumerate(nodes):
            row[node] = float(i)
    cycle_members: set[NodeId] = set()
    cycles: list[list[str]] = []
    for cycle in state.graph.cycles():
        if any(n in kept for n in cycle):
            cycle_members.update(cycle)
            cycles.append([ident(n)["id"] for n in cycle])
    out_nodes = []
    for node in ordered:
        x = 20 + layer[node] * X_STEP
        y = 20 + int(row[node]) * Y_STEP
        out_nodes.append(
            {**_state_of(state, node), "x": x, "y": y, "onCycle": node in cycle_members}
        )
    edges = []
    for node in ordered:
        comp = state.graph.component(node) if node in cycle_members else frozenset()
        for edge in sorted(state.graph.edges(node), key=lambda e: (e.path, e.target)):
            if edge.target in kept:
                edges.append(
                    {
                        "from": ident(node)["id"],
                        "to": ident(edge.target)["id"],
                        "path": edge.path,
                        "onCycle": edge.target in comp,
                    }
                )
    width = 40 + (max(layer.values(), default=0) + 1) * X_STEP
    height = 40 + max((len(c) for c in columns.values()), default=1) * Y_STEP
    return {
        "nodes": out_nodes,
        "edges": edges,
        "cycles": cycles,
        "width": width,
        "height": height,
        "nodeWidth": NODE_W,
        "nodeHeight": NODE_H,
        "truncated": truncated,
    }


@dataclass(frozen=True, slots=True)
class KindLookup:
    """What :func:`lookup_kind` found for a typed kind name."""

    key: KindKey | None
    """The watched kind it names (None: see :attr:`error`)."""
    served: ServedResource | None
    """The served resource it names, watched or not (None: no such resource type)."""
    warnings: tuple[str, ...] = ()
    """kubectl's warnings for the name (a short name other resources also declare)."""
    error: str | None = None
    """One line saying why there is no :attr:`key`: kubectl's ``the server doesn't have a
    resource type "x"``, or which resource the name is and that it is not watched."""


def _served(state: ClusterState) -> tuple[ServedResource, ...]:
    return state.served or served_from_types(info.rt for info in state.kinds.values())


def lookup_kind(state: ClusterState, text: str) -> KindLookup:
    """The watched kind ``text`` names, resolved as kubectl resolves a resource argument
    against the server's discovery (:attr:`ClusterState.served`; the watched kinds when it
    was not read): plural, singular, kind, short names, ``resource.group``,
    ``resource.version.group``, ``Kind.version.group``, group prefixes, kubectl's
    priority between groups — see :mod:`kubewerk.observe.resourcenames`. A name kubectl
    resolves to a kind that is not watched (``job`` is ``jobs.batch`` before any CRD's
    Job, as in ``kubectl get job``) has no key; its error names the resource and, when a
    watched kind also answers to the name, how to name that one."""
    found = resolve_resource_arg(_served(state), text)
    if found is None:
        return KindLookup(None, None, error=unknown_resource_type(text))
    served = found.served
    key = KindKey(served.group, served.kind)
    if key in state.kinds:
        return KindLookup(key, served, found.warnings)
    error = (
        f'"{go_quote(text)}" is {served.group_resource}, not a watched kind (only the kinds '
        "of CustomResourceDefinitions are)"
    )
    watched = [s for s in _served(state) if KindKey(s.group, s.kind) in state.kinds]
    other = resolve_resource_arg(watched, text)
    if other is not None:
        error += f"; {other.served.kind} of {other.served.group} is {other.served.group_resource}"
    return KindLookup(None, served, found.warnings, error)


def resolve_kind(state: ClusterState, text: str) -> KindKey | None:
    """The watched kind ``text`` names (:func:`lookup_kind`), or None when it names none."""
    return lookup_kind(state, text).key
