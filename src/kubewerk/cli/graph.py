"""``kubewerk graph``: the dependency graph of manifests or of a live cluster.

``kubewerk graph PATH...`` reads files and directories (recursive), ``-`` (stdin) and
``git:REV:PATH``, YAML as a cluster reads it (:mod:`kubewerk.core.yamlgo`, through the
governance loader). The refs of a kind come from its CRD's ``kubewerk.dev/references``
annotation (written by ``kubewerk gen crd``, see :mod:`kubewerk.model.ref_fields`), so
the CRDs go with the objects; an object of a kind without such a CRD refers to nothing
but can be referred to. An object without ``metadata.namespace`` is in ``--namespace``
(default ``default``) unless its kind is cluster-scoped.

``kubewerk graph --cluster`` (implied by ``--kubeconfig`` or ``--context``) reads the
CRDs installed in the cluster, the objects of every kind that has refs and of every
kind they name (all namespaces, or ``--namespace``), and shows each object's phase.

Output (``--format``): ``text`` (default) — a tree from each object nothing depends on
down to what it depends on, ``(see above)`` where a subtree was already shown, then the
cycles, the unresolved references and a summary; ``dot`` (Graphviz), ``mermaid``
(a flowchart) and ``json``. Edges point from the object holding the ref to the object
it names; missing objects are drawn dashed, edges on cycles red.

Exit codes: 0 when the graph has no cycle (between objects, or of required refs between
kinds) and every ref names an object that is there; 1 when it has some; 2 for usage
errors and unreadable input (the message names the file, or the cluster and what
failed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubewerk.cli import UsageError, input_limit
from kubewerk.cli.atomic_write import write_atomic
from kubewerk.core.gvk import split_api_version
from kubewerk.lifecycle.depgraph import (
    Edge,
    InstanceGraph,
    KindEdge,
    NodeId,
    format_cycle,
    required_kind_cycle,
)
from kubewerk.model.ref_fields import REFERENCES_ANNOTATION, RefField, parse_references

if TYPE_CHECKING:
    from kubewerk.client import Client, ResourceType

__all__ = ["Inventory", "register", "run_graph"]

FORMATS = ("text", "dot", "json", "mermaid")

# cluster-scoped built-in kinds (group, kind): where a manifest without a namespace is
# not in the default namespace
_CLUSTER_SCOPED = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("storage.k8s.io", "StorageClass"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
    }
)


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "graph",
        help="show the dependency graph (refs) of manifests or of a cluster",
        description="Show the dependency graph between objects, from the refs their CRDs "
        "declare (the kubewerk.dev/references annotation): of manifests (files, "
        "directories, -, git:REV:PATH; give the CRDs with the objects) or of a live "
        "cluster (--cluster, --kubeconfig, --context). Exit code 1 when there are "
        "cycles or refs to objects that are not there.",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="file, directory, - (stdin) or git:REV:PATH"
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="read the cluster of the kubeconfig's current context (implied by "
        "--kubeconfig/--context)",
    )
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig (default: $KUBECONFIG or ~/.kube/config)"
    )
    parser.add_argument(
        "--context", metavar="NAME", help="kubeconfig context (default: the current context)"
    )
    parser.add_argument(
        "-n",
        "--namespace",
        metavar="NAME",
        help="manifests: the namespace of objects that name none (default: default); "
        "cluster: only this namespace (default: all)",
    )
    parser.add_argument(
        "--format", choices=FORMATS, default="text", help="output format (default: text)"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the graph to FILE instead of stdout (whole: a temporary file renamed)",
    )
    input_limit.add_option(parser)
    parser.set_defaults(func=run_graph)


# -- what was read ---------------------------------------------------------------------


@dataclass(slots=True)
class _Kind:
    group: str
    kind: str
    namespaced: bool
    refs: tuple[RefField, ...]
    """Every entry of the annotation (each may name the version it belongs to)."""

    def refs_for(self, version: str) -> tuple[RefField, ...]:
        return tuple(r for r in self.refs if r.version in (None, version))


@dataclass
class Inventory:
    """The kinds (from CRDs) and objects the graph is made of."""

    default_namespace: str = "default"
    kinds: dict[tuple[str, str], _Kind] = field(default_factory=dict)
    objects: dict[NodeId, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """Every object → (its version, the object)."""

    def add_crd(self, crd: dict[str, Any], where: str) -> None:
        """Take a CustomResourceDefinition's names, scope and refs (UsageError naming
        ``where`` for an annotation that cannot be read)."""
        spec = _mapping(crd.get("spec"))
        names = _mapping(spec.get("names"))
        group, kind = spec.get("group"), names.get("kind")
        if not isinstance(group, str) or not isinstance(kind, str) or not kind:
            return  # not a usable CRD; kubewerk lint says why
        meta = _mapping(crd.get("metadata"))
        annotations = _mapping(meta.get("annotations"))
        text = annotations.get(REFERENCES_ANNOTATION)
        refs: tuple[RefField, ...] = ()
        if text is not None:
            try:
                refs = parse_references(str(text))
            except ValueError as exc:
                raise UsageError(f"{where}: CRD {meta.get('name', kind)}: {exc}") from None
        namespaced = spec.get("scope", "Namespaced") != "Cluster"
        self.kinds[(group, kind)] = _Kind(group, kind, namespaced, refs)

    def add_object(self, obj: dict[str, Any]) -> None:
        """Take one object (anything with apiVersion, kind and metadata.name)."""
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        meta = obj.get("metadata")
        if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
            return
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            return
        try:
            group, version = split_api_version(api_version)
        except ValueError:
            return
        known = self.kinds.get((group, kind))
        if known is not None:
            namespaced = known.namespaced
        else:
            namespaced = bool(meta.get("namespace")) or (group, kind) not in _CLUSTER_SCOPED
        namespace = (meta.get("namespace") or self.default_namespace) if namespaced else None
        self.objects[NodeId(group, kind, namespace, meta["name"])] = (version, obj)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# -- the graph -------------------------------------------------------------------------


@dataclass
class GraphReport:
    """The graph of an inventory and what is wrong with it."""

    graph: InstanceGraph
    nodes: dict[NodeId, dict[str, Any] | None]
    """Every object shown → the object (None: named by a ref but not there)."""
    unresolved: list[tuple[NodeId, Edge]]
    cycles: list[tuple[NodeId, ...]]
    kind_cycles: list[list[KindEdge]]

    @property
    def references(self) -> int:
        return sum(len(self.graph.edges(n)) for n in self.graph.referrers())

    @property
    def failed(self) -> bool:
        return bool(self.unresolved or self.cycles or self.kind_cycles)


def build(inventory: Inventory) -> GraphReport:
    """The instance graph of the inventory's objects, their unresolved refs and cycles,
    and the cycle of required refs between its kinds (if any)."""
    graph = InstanceGraph()
    for node, (version, obj) in inventory.objects.items():
        known = inventory.kinds.get((node.group, node.kind))
        if known is None:
            continue
        edges: list[Edge] = []
        for ref in known.refs_for(version):
            for name, namespace in ref.names(obj):
                target_ns = None
                if ref.namespaced:
                    target_ns = namespace or node.namespace or inventory.default_namespace
                target = NodeId(ref.group, ref.kind, target_ns, name)
                edges.append(Edge(target, ref.field_path, ref.on_delete))
        graph.set_edges(node, edges)
    nodes: dict[NodeId, dict[str, Any] | None] = {n: o for n, (_v, o) in inventory.objects.items()}
    unresolved: list[tuple[NodeId, Edge]] = []
    for referrer in sorted(graph.referrers()):
        for edge in graph.edges(referrer):
            if edge.target not in inventory.objects:
                nodes.setdefault(edge.target, None)
                unresolved.append((referrer, edge))
    kind_edges = [
        KindEdge(k.kind, ref.kind, ref.field_path, ref.required)
        for k in inventory.kinds.values()
        for ref in k.refs
    ]
    kind_cycle = required_kind_cycle(kind_edges)
    return GraphReport(graph, nodes, unresolved, graph.cycles(), [kind_cycle] if kind_cycle else [])


# -- rendering -------------------------------------------------------------------------


def _phase(obj: dict[str, Any] | None) -> str | None:
    status = obj.get("status") if obj is not None else None
    phase = status.get("phase") if isinstance(status, dict) else None
    return phase if isinstance(phase, str) else None


def _shown(node: NodeId, obj: dict[str, Any] | None) -> str:
    if obj is None:
        return f"{node} [missing]"
    phase = _phase(obj)
    return f"{node} [{phase}]" if phase else str(node)


def _summary(report: GraphReport) -> str:
    def count(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    present = sum(1 for o in report.nodes.values() if o is not None)
    parts = [
        count(present, "object"),
        count(report.references, "reference"),
        count(len(report.cycles) + len(report.kind_cycles), "cycle"),
        count(len(report.unresolved), "unresolved reference"),
    ]
    return ", ".join(parts)


def render_text(report: GraphReport) -> str:
    """The tree view (see the module doc)."""
    graph = report.graph
    lines: list[str] = []
    expanded: set[NodeId] = set()

    def walk(node: NodeId, prefix: str) -> None:
        expanded.add(node)
        edges = sorted(graph.edges(node), key=lambda e: (e.path, e.target))
        for i, edge in enumerate(edges):
            last = i == len(edges) - 1
            branch, indent = ("└─ ", "   ") if last else ("├─ ", "│  ")
            target = edge.target
            text = f"{edge.path} → {_shown(target, report.nodes.get(target))}"
            if target in expanded and graph.edges(target):
                lines.append(f"{prefix}{branch}{text} (see above)")
                continue
            lines.append(f"{prefix}{branch}{text}")
            walk(target, prefix + indent)

    present = sorted(n for n, o in report.nodes.items() if o is not None)
    roots = [n for n in present if not graph.dependents(n)]
    for root in [*roots, *(n for n in present if n not in roots)]:
        if root in expanded:
            continue
        lines.append(_shown(root, report.nodes[root]))
        walk(root, "")
    if report.kind_cycles or report.cycles:
        lines.append("")
        lines.append("cycles:")
        for kind_cycle in report.kind_cycles:
            kinds = " -> ".join([*(e.source for e in kind_cycle), kind_cycle[0].source])
            lines.append(f"  kinds {kinds} (every ref on it is required)")
        lines.extend(f"  {format_cycle(cycle)}" for cycle in report.cycles)
    if report.unresolved:
        lines.append("")
        lines.append("unresolved references:")
        lines.extend(
            f"  {referrer} {edge.path} → {edge.target} (not found)"
            for referrer, edge in report.unresolved
        )
    lines.append("")
    lines.append(_summary(report))
    return "\n".join(lines) + "\n"


def _cycle_edges(report: GraphReport) -> set[tuple[NodeId, NodeId]]:
    out: set[tuple[NodeId, NodeId]] = set()
    for node in report.graph.referrers():
        members = report.graph.component(node)
        out.update((node, e.target) for e in report.graph.edges(node) if e.target in members)
    return out


def _all_edges(report: GraphReport) -> list[tuple[NodeId, Edge]]:
    return [
        (node, edge)
        for node in sorted(report.graph.referrers())
        for edge in sorted(report.graph.edges(node), key=lambda e: (e.path, e.target))
    ]


def _uid(node: NodeId) -> str:
    """An identifier unique across groups: ``Kind.group/namespace/name``."""
    return f"{node.label}/{node.key}"


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_dot(report: GraphReport) -> str:
    """Graphviz: edges from referrer to target, labelled with the field path."""
    on_cycle = _cycle_edges(report)
    lines = ["digraph dependencies {", "  node [shape=box];"]
    for node in sorted(report.nodes):
        obj = report.nodes[node]
        attrs = [f"label={_dot_quote(_shown(node, obj))}"]
        if obj is None:
            attrs.append('style=dashed, color="#cc0000"')
        lines.append(f"  {_dot_quote(_uid(node))} [{', '.join(attrs)}];")
    for node, edge in _all_edges(report):
        attrs = [f"label={_dot_quote(edge.path)}"]
        if (node, edge.target) in on_cycle:
            attrs.append('color="#cc0000"')
        source, target = _dot_quote(_uid(node)), _dot_quote(_uid(edge.target))
        lines.append(f"  {source} -> {target} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


def render_mermaid(report: GraphReport) -> str:
    """A Mermaid flowchart (left to right)."""
    ids = {node: f"n{i}" for i, node in enumerate(sorted(report.nodes))}
    on_cycle = _cycle_edges(report)
    lines = ["flowchart LR"]
    for node, ident in ids.items():
        lines.append(f'  {ident}["{_mermaid_text(_shown(node, report.nodes[node]))}"]')
    red: list[int] = []
    for i, (node, edge) in enumerate(_all_edges(report)):
        lines.append(f'  {ids[node]} -- "{_mermaid_text(edge.path)}" --> {ids[edge.target]}')
        if (node, edge.target) in on_cycle:
            red.append(i)
    missing = [ids[n] for n, o in report.nodes.items() if o is None]
    if missing:
        lines.append("  classDef missing stroke:#cc0000,stroke-dasharray:5 5;")
        lines.append(f"  class {','.join(sorted(missing, key=lambda s: int(s[1:])))} missing;")
    if red:
        lines.append(f"  linkStyle {','.join(map(str, red))} stroke:#cc0000;")
    return "\n".join(lines) + "\n"


def render_json(report: GraphReport) -> str:
    """Everything as one JSON document."""

    def ident(node: NodeId) -> dict[str, Any]:
        return {
            "id": _uid(node),
            "group": node.group,
            "kind": node.kind,
            "namespace": node.namespace,
            "name": node.name,
        }

    objects = []
    for node in sorted(report.nodes):
        obj = report.nodes[node]
        objects.append({**ident(node), "present": obj is not None, "phase": _phase(obj)})
    missing = {n for n, o in report.nodes.items() if o is None}
    doc = {
        "objects": objects,
        "references": [
            {
                "from": _uid(node),
                "to": _uid(edge.target),
                "path": edge.path,
                "onDelete": edge.on_delete.value,
                "resolved": edge.target not in missing,
            }
            for node, edge in _all_edges(report)
        ],
        "cycles": [[_uid(n) for n in cycle] for cycle in report.cycles],
        "kindCycles": [
            [{"kind": e.source, "path": e.path, "target": e.target} for e in cycle]
            for cycle in report.kind_cycles
        ],
        "unresolved": [
            {"from": _uid(referrer), "path": edge.path, "to": _uid(edge.target)}
            for referrer, edge in report.unresolved
        ],
        "summary": _summary(report),
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


_RENDERERS = {
    "text": render_text,
    "dot": render_dot,
    "json": render_json,
    "mermaid": render_mermaid,
}


# -- reading -----------------------------------------------------------------------------


def _read_manifests(paths: Sequence[str], inventory: Inventory) -> None:
    from kubewerk.govern.loader import InputError, iter_sources

    objects: list[dict[str, Any]] = []
    try:
        for docs in iter_sources(paths):
            for doc in docs:
                data = doc.data
                if not isinstance(data, dict):
                    continue
                if data.get("kind") == "CustomResourceDefinition" and str(
                    data.get("apiVersion", "")
                ).startswith("apiextensions.k8s.io/"):
                    inventory.add_crd(data, doc.source.name)  # a schema, not a node
                else:
                    objects.append(data)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    for obj in objects:  # after every CRD: an object may come before its CRD
        inventory.add_object(obj)


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _ClusterReads:
    """Reads a cluster through the API client; every failure is a one-line UsageError."""

    def __init__(self, client: Client, where: str) -> None:
        self.client = client
        self.where = where

    async def call(self, awaitable: Any, *, missing_ok: bool = False) -> Any:
        """Await one client call (None for a 404 when ``missing_ok``)."""
        from kubewerk.client import ApiError, ConfigError, NotFound, ServerUnreachable

        try:
            return await awaitable
        except NotFound as exc:
            if missing_ok:
                return None
            raise UsageError(f"{self.where}: {_one_line(exc.message or str(exc))}") from None
        except (ConfigError, ServerUnreachable) as exc:
            raise UsageError(f"{self.where}: {_one_line(str(exc))}") from None
        except ApiError as exc:
            text = exc.message or f"the API server answered {exc.code} {exc.reason}"
            raise UsageError(f"{self.where}: {_one_line(text)}") from None

    async def kind(self, group: str, kind: str) -> ResourceType | None:
        """A built-in (or aggregated) kind in its group's preferred version (None when
        the cluster does not serve it)."""
        version = "v1"
        if group:
            doc = await self.call(self.client.request("GET", f"/apis/{group}"), missing_ok=True)
            preferred = doc.get("preferredVersion") if isinstance(doc, dict) else None
            found = preferred.get("version") if isinstance(preferred, dict) else None
            if not isinstance(found, str):
                return None
            version = found
        api_version = f"{group}/{version}" if group else version
        rt: ResourceType | None = await self.call(
            self.client.resolve(api_version, kind), missing_ok=True
        )
        return rt


async def _read_cluster(
    kubeconfig: str | None, context: str | None, namespace: str | None, inventory: Inventory
) -> None:
    from kubewerk.client import CRD, Client, ConfigError, load_config

    try:
        config = load_config(kubeconfig, context)
    except ConfigError as exc:
        raise UsageError(_one_line(str(exc))) from None
    where = f"cluster:{config.context or 'in-cluster'}"
    async with Client(config) as client:
        reads = _ClusterReads(client, where)
        listed = await reads.call(client.list_all(CRD, page_size=100))
        from kubewerk.client import ResourceType

        versions: dict[tuple[str, str], ResourceType] = {}
        for crd in listed.items:
            inventory.add_crd(crd, where)
            spec = crd.get("spec") or {}
            names = spec.get("names") or {}
            served = [v for v in spec.get("versions") or [] if v.get("served")]
            storage = [v for v in served if v.get("storage")]
            chosen = (storage or served or [None])[0]
            if chosen is not None and names.get("kind") and names.get("plural"):
                versions[(spec.get("group", ""), names["kind"])] = ResourceType(
                    spec.get("group", ""),
                    chosen["name"],
                    names["kind"],
                    names["plural"],
                    spec.get("scope") != "Cluster",
                )
        wanted: set[tuple[str, str]] = set()
        for known in inventory.kinds.values():
            if known.refs:
                wanted.add((known.group, known.kind))
                wanted.update((r.group, r.kind) for r in known.refs)
        for group, kind in sorted(wanted):
            rt = versions.get((group, kind)) or await reads.kind(group, kind)
            if rt is None:
                continue  # a kind the cluster does not serve: refs to it are unresolved
            items = await reads.call(client.list_all(rt, namespace if rt.namespaced else None))
            for obj in items.items:
                obj.setdefault("apiVersion", rt.api_version)
                obj.setdefault("kind", rt.kind)
                inventory.add_object(obj)


# -- the command ---------------------------------------------------------------------------


def run_graph(args: argparse.Namespace) -> int:
    cluster = bool(args.cluster or args.kubeconfig or args.context)
    if cluster and args.paths:
        raise UsageError(
            "give manifests (PATH) or a cluster (--cluster, --kubeconfig, --context), not both"
        )
    if not cluster and not args.paths:
        raise UsageError("nothing to graph: give PATH arguments (CRDs and objects), or --cluster")
    inventory = Inventory(default_namespace=args.namespace or "default")
    if cluster:
        asyncio.run(_read_cluster(args.kubeconfig, args.context, args.namespace, inventory))
    else:
        _read_manifests(args.paths, inventory)
    report = build(inventory)
    text = _RENDERERS[args.format](report)
    _write(args.output, text)
    return 1 if report.failed else 0


def _write(path: str | None, text: str) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
