"""Running rules over CRDs: each rule's CRD-level checks, and the single walk over each
distinct schema that feeds every rule's :meth:`~kubewerk.govern.rules.base.Rule.visit`.

A CRD's versions are grouped by identical schema and subresources; each group's schema
is walked once, whatever the number of rules, and each node is handed only to the rules
whose :class:`~kubewerk.govern.rules.base.Nodes` select it. That selection is worked out
into tables (by section, depth and node type) once per linter, so during the walk a node
costs two lookups before its visits are called.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubewerk.govern.crd_view import CRDView, SchemaNode, VersionView, walk
from kubewerk.govern.rules.base import DEEPEST, Emit, Nodes, Rule, SchemaScope, Section

# the API server defines these; no rule looks inside them
_SKIPPED_TOPS = frozenset({"metadata", "apiVersion", "kind"})

_Visit = Callable[[SchemaNode], None]
# what a node gets: plain visits, and (keyword, visit) pairs for keyword-selected ones
_Visits = tuple[tuple[_Visit, ...], tuple[tuple[str, _Visit], ...]]
# node type -> what a node of that type gets, and what a node of any other type gets
_Table = tuple[dict[str, _Visits], _Visits]
# the tables for each depth (deeper nodes use the last), in status and elsewhere
_Tables = tuple[int, list[_Table], list[_Table]]


def _same_schema(a: VersionView, b: VersionView) -> bool:
    return (a.schema is b.schema or a.schema == b.schema) and a.subresources == b.subresources


def version_groups(view: CRDView) -> list[list[VersionView]]:
    """Versions grouped by identical schema and subresources, in declaration order."""
    groups: list[list[VersionView]] = []
    for v in view.versions:
        for g in groups:
            if _same_schema(g[0], v):
                g.append(v)
                break
        else:
            groups.append([v])
    return groups


def _visits(selected: Sequence[tuple[Rule, Nodes]], node_type: str | None) -> _Visits:
    chosen = [
        (rule, nodes.keyword)
        for rule, nodes in selected
        if nodes.types is None or (node_type is not None and node_type in nodes.types)
    ]
    return (
        tuple(rule.visit for rule, keyword in chosen if keyword is None),
        tuple((keyword, rule.visit) for rule, keyword in chosen if keyword is not None),
    )


def _table(walkers: Sequence[Rule], in_status: bool, depth: int) -> _Table:
    wanted = Section.STATUS if in_status else Section.NOT_STATUS
    selected: list[tuple[Rule, Nodes]] = []
    for rule in walkers:
        nodes = rule.nodes
        assert nodes is not None
        if nodes.section is not Section.ANY and nodes.section is not wanted:
            continue
        if nodes.min_depth <= depth <= nodes.max_depth:
            selected.append((rule, nodes))
    named = sorted({t for _, nodes in selected if nodes.types is not None for t in nodes.types})
    return {t: _visits(selected, t) for t in named}, _visits(selected, None)


def _tables(walkers: Sequence[Rule]) -> _Tables:
    bounds = [0]
    for rule in walkers:
        nodes = rule.nodes
        assert nodes is not None
        bounds += [b for b in (nodes.min_depth, nodes.max_depth + 1) if b < DEEPEST]
    last = max(bounds)
    return (
        last,
        [_table(walkers, True, depth) for depth in range(last + 1)],
        [_table(walkers, False, depth) for depth in range(last + 1)],
    )


class Linter:
    """Given rules, ready to lint any number of CRDs, one at a time.

    Holds one instance of each rule for all CRDs (rules keep per-schema state, so a
    linter lints one CRD at a time: use one per thread). Rules run in the given order.
    """

    def __init__(self, rules: Sequence[type[Rule]]) -> None:
        self.rules = tuple(rules)
        self._walkers = [rule() for rule in self.rules if rule.nodes is not None]
        # which walkers apply to a CRD (by Rule.applies) -> their tables
        self._tables: dict[tuple[bool, ...], tuple[list[Rule], _Tables]] = {}

    def lint(self, view: CRDView, emit: Emit) -> None:
        """Every rule's CRD-level checks, then one walk per distinct schema."""
        for rule in self.rules:
            rule.check_crd(view, emit)
        if not self._walkers:
            return
        applies = tuple(type(w).applies(view) for w in self._walkers)
        prepared = self._tables.get(applies)
        if prepared is None:
            walkers = [w for w, yes in zip(self._walkers, applies, strict=True) if yes]
            prepared = self._tables[applies] = (walkers, _tables(walkers))
        walkers, tables = prepared
        if not walkers:
            return
        for group in version_groups(view):
            first = group[0]
            if first.schema is not None:
                scope = SchemaScope(view, first, tuple(v.name for v in group), emit)
                _walk(first.schema, scope, walkers, tables)


def _walk(schema: dict[str, Any], scope: SchemaScope, walkers: list[Rule], tables: _Tables) -> None:
    """One walk over ``schema``, each node handed to the walkers the tables give it."""
    for rule in walkers:
        rule.start(scope)
    last, status_tables, other_tables = tables
    for node in walk(schema):
        top = node.top
        if top in _SKIPPED_TOPS:
            continue
        depth = node.depth
        by_type, other = (status_tables if top == "status" else other_tables)[
            depth if depth < last else last
        ]
        s = node.schema
        t = s.get("type")
        visits, keyed = by_type.get(t, other) if t.__class__ is str else other
        for visit in visits:
            visit(node)
        for keyword, visit in keyed:
            if keyword in s:
                visit(node)
    for rule in walkers:
        rule.finish()
