"""Comparing two sources object by object: :func:`diff_sources`.

Objects are matched by :class:`~kubewerk.sync.keys.ObjectKey` (group, kind, namespace,
name). Manifests are placed first as kubectl places them: one of a namespaced kind
without a namespace is in ``-n``'s namespace, else the cluster side's context namespace
(``default`` for a URL or two manifest sides); one of a cluster-scoped kind has its
namespace dropped. A kind's scope comes from its CRD (either side's), else the cluster
side's discovery, else the built-in table (an unknown kind counts as namespaced). Each
matched pair is compared after :mod:`~kubewerk.sync.normalize` removed server-managed
fields, with schema defaults applied to both sides:

- custom resources through the schema engine, from the CRD of the right side when it
  has one (the destination), else the left's;
- built-in kinds by the server itself when one side is a cluster and the other holds
  manifests: the manifest is sent to that cluster as a dry-run write (a replace
  guarded by the live ``resourceVersion`` when the object exists, a create otherwise)
  and the answer, which carries every default the server applies, is what is compared;
  two manifests of a built-in kind are compared as written;
- when the sides hold an object at different versions and one side is a cluster, the
  cluster's copy is read again at the other side's version (the server converts it).

Comparison shapes (list types, patch merge keys, by-value scalars) come from the CRDs and,
for built-in kinds, from a cluster side's ``/openapi/v2``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from kubewerk.client.errors import NotFound
from kubewerk.core.jsoncopy import copy_tree
from kubewerk.sync.apply import server_defaulted
from kubewerk.sync.diff import ObjectDiff, diff_objects, quick_equal
from kubewerk.sync.keys import GroupKind, ObjectKey, key_of
from kubewerk.sync.normalize import strip_server_fields
from kubewerk.sync.schemas import KindSchemas
from kubewerk.sync.sources import ClusterSource, Entry, Source, SourceError

__all__ = [
    "DiffReport",
    "ItemDiff",
    "Side",
    "check_namespace",
    "diff_sources",
    "index_entries",
    "manifest_namespace",
    "prepare_schemas",
]

_CONCURRENCY = 32
_CRD_GK: Final = GroupKind("apiextensions.k8s.io", "CustomResourceDefinition")


@dataclass(slots=True)
class ItemDiff:
    """One object's comparison (``diff.status``: added / removed / changed / equal)."""

    key: ObjectKey
    diff: ObjectDiff
    left_entry: Entry | None = None
    right_entry: Entry | None = None

    @property
    def status(self) -> str:
        return self.diff.status


@dataclass(slots=True)
class DiffReport:
    """Every object's comparison, sorted by key, the errors met on the way, and the
    warnings: what a side could not read and how the comparison did without it (see
    :attr:`ClusterSource.warnings <kubewerk.sync.sources.ClusterSource>`)."""

    items: list[ItemDiff] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        """Counts of ``added``, ``removed``, ``changed`` and ``equal`` objects."""
        counts = {"added": 0, "removed": 0, "changed": 0, "equal": 0}
        for item in self.items:
            counts[item.status] += 1
        return counts

    @property
    def different(self) -> bool:
        return any(item.status != "equal" for item in self.items)


@dataclass(slots=True)
class Side:
    """One side of a comparison: the source and its objects keyed."""

    source: Source
    entries: dict[ObjectKey, Entry] = field(default_factory=dict)


def index_entries(
    entries: Sequence[Entry],
    schemas: KindSchemas,
    *,
    manifests: bool,
    default_namespace: str = "default",
) -> dict[ObjectKey, Entry]:
    """Entries keyed by identity (later duplicates win, as ``kubectl apply`` would).

    Manifests (``manifests=True``) are placed as kubectl places them before it sends
    them: an object of a namespaced kind without ``metadata.namespace`` (absent, null or
    ``""``) goes to ``default_namespace``, and an object of a cluster-scoped kind loses
    the namespace it names (kube-apiserver clears it too). The scope is
    :meth:`KindSchemas.namespaced`'s. The entry then holds a copy of its object with
    ``metadata.namespace`` so set (the input entries and objects are never changed), so
    that comparing or applying it sees the object the cluster would hold. Objects read
    from a cluster are keyed as they are."""
    out: dict[ObjectKey, Entry] = {}
    for entry in entries:
        obj = entry.obj
        gk = GroupKind(key_of_group(obj), str(obj.get("kind", "")))
        namespaced = schemas.namespaced(gk)
        key = key_of(obj, default_namespace if namespaced and manifests else "")
        if not namespaced and key.namespace:
            key = key._replace(namespace="")
        if manifests:
            entry = _placed(entry, key.namespace if namespaced else None)
        out[key] = entry
    return out


def _placed(entry: Entry, namespace: str | None) -> Entry:
    """``entry`` with its object's ``metadata.namespace`` set to ``namespace`` when it
    has none (None: a cluster-scoped kind, whose string namespace is removed); the
    same entry when nothing changes. A non-string namespace is left for the server to
    refuse."""
    meta = entry.obj.get("metadata")
    if not isinstance(meta, Mapping):
        return entry
    current = meta.get("namespace")
    if namespace is None:
        if "namespace" not in meta or not isinstance(current, str | None):
            return entry
        placed = {k: v for k, v in meta.items() if k != "namespace"}
    else:
        if current is not None and current != "":
            return entry
        placed = {**meta, "namespace": namespace}
    return Entry({**entry.obj, "metadata": placed}, entry.path, entry.index)


def key_of_group(obj: Mapping[str, Any]) -> str:
    from kubewerk.core.gvk import split_api_version

    return split_api_version(str(obj.get("apiVersion") or "")).group


async def prepare_schemas(
    left: Source, left_entries: Sequence[Entry], right: Source, right_entries: Sequence[Entry]
) -> KindSchemas:
    """Kind knowledge from both sides: the right side's CRDs preferred, a cluster's
    published OpenAPI for built-in kinds, and a cluster's discovery for the scope of
    each kind the objects hold that no CRD on either side defines (a kind a cluster
    does not serve is left to :meth:`KindSchemas.namespaced`'s fallbacks)."""
    schemas = KindSchemas()
    for source, entries in ((right, right_entries), (left, left_entries)):
        schemas.add_objects((e.obj for e in entries), prefer=False)
        if isinstance(source, ClusterSource):
            crds = await source.crds()
            if crds is not None:
                schemas.add_objects(crds, prefer=source is right)
                if source is right:
                    schemas.served_by_right.update(
                        GroupKind(c["spec"]["group"], c["spec"]["names"]["kind"]) for c in crds
                    )
            if not schemas.has_builtin_shapes:
                doc = await source.openapi_v2()
                if doc is not None:
                    schemas.add_openapi_v2(doc)
                elif crds is None:
                    source.warn(
                        "/openapi/v2 cannot be read either: lists of custom kinds compare in order"
                    )
    for source in (right, left):
        if isinstance(source, ClusterSource):
            await _discover_scopes(source, schemas, (*left_entries, *right_entries))
    return schemas


async def _discover_scopes(
    cluster: ClusterSource, schemas: KindSchemas, entries: Sequence[Entry]
) -> None:
    """Teach ``schemas`` the scope ``cluster`` serves each of the entries' kinds at, for
    the kinds no known CRD defines (built-in kinds come from the client's table without
    a request; other kinds from discovery, cached by the client)."""
    known: set[GroupKind] = set()
    versions = {(str(e.obj.get("apiVersion") or ""), str(e.obj.get("kind", ""))) for e in entries}
    for api_version, kind in versions:
        gk = GroupKind(key_of_group({"apiVersion": api_version}), kind)
        if gk in known or schemas.is_custom(gk):
            continue
        try:
            rt = await cluster.resource_type(api_version, kind)
        except NotFound:
            continue  # not served here (at this version): the scope stays unknown
        schemas.add_scope(gk, rt.namespaced)
        known.add(gk)


def _kinds_of(entries: Sequence[Entry]) -> dict[GroupKind, str]:
    kinds: dict[GroupKind, str] = {}
    for e in entries:
        kinds.setdefault(
            GroupKind(key_of_group(e.obj), str(e.obj.get("kind"))), str(e.obj.get("apiVersion"))
        )
    return kinds


async def load_pair(left: Source, right: Source) -> tuple[list[Entry], list[Entry]]:
    """Both sides' objects: a cluster lists the kinds the other side holds (both
    clusters: the left's default kinds, see :meth:`ClusterSource.default_kinds`)."""
    if not left.is_cluster:
        left_entries = await left.objects()
        right_entries = await right.objects(_kinds_of(left_entries) if right.is_cluster else None)
        return left_entries, right_entries
    if not right.is_cluster:
        right_entries = await right.objects()
        return await left.objects(_kinds_of(right_entries)), right_entries
    assert isinstance(left, ClusterSource)
    kinds = await left.default_kinds()
    if isinstance(right, ClusterSource):
        for gk, av in (await right.default_kinds()).items():
            kinds.setdefault(gk, av)
        if left.crds_forbidden or right.crds_forbidden:
            # one side may not read them: not comparable (each side's warning says so)
            kinds.pop(_CRD_GK, None)
    return await left.objects(kinds), await right.objects(kinds)


class Normalizer:
    """Turns a pair of objects into their comparable forms (see the module docstring)."""

    def __init__(self, schemas: KindSchemas, keep_status: bool = False) -> None:
        self.schemas = schemas
        self.keep_status = keep_status

    def strip(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        return strip_server_fields(obj, keep_status=self.keep_status)

    def defaulted(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """A deep copy of ``obj`` with its CRD's schema defaults applied (if a CRD)."""
        out: dict[str, Any] = copy_tree(dict(obj))
        compiled = self.schemas.defaulter(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
        if compiled is not None:
            compiled.apply_defaults(out)
        return out


def manifest_namespace(
    left: Source, right: Source, namespace: str | None = None
) -> tuple[str, bool]:
    """The namespace manifests without one are placed in when ``left`` is compared with
    ``right``, and whether it is enforced (kubectl's ``-n``: a manifest of a namespaced
    kind naming another namespace is refused). ``namespace`` (``-n``) first, enforced;
    else a cluster side's own ``namespace`` (the right one first), enforced; else that
    cluster's context namespace (``default`` for a URL), not enforced; else ``default``."""
    if namespace:
        return namespace, True
    clusters = [s for s in (right, left) if isinstance(s, ClusterSource)]
    for c in clusters:
        if c.namespace:
            return c.namespace, True
    if clusters:
        return clusters[0].client.namespace or "default", False
    return "default", False


_DONE: Final = {"compare": "compared", "sync": "synced"}


def check_namespace(
    entries: Mapping[ObjectKey, Entry],
    namespace: str,
    action: Literal["compare", "sync"] = "compare",
) -> None:
    """Raise :class:`~kubewerk.sync.sources.SourceError` naming the manifest of the first
    (in key order) namespaced object that is not in ``namespace`` (as kubectl refuses a
    manifest in another namespace than its ``-n``); the one-line message names the file,
    the object, both namespaces and ``action`` (``compare`` or ``sync``)."""
    for key in sorted(entries):
        if key.namespace and key.namespace != namespace:
            where = entries[key].path or "the source"
            raise SourceError(
                f"{where}: {key} is in namespace {key.namespace!r}, not in {namespace!r} "
                f"(the namespace {_DONE[action]}): pass -n {key.namespace} to {action} it"
            )


async def diff_sources(
    left: Source, right: Source, *, keep_status: bool = False, namespace: str | None = None
) -> DiffReport:
    """Compare ``left`` with ``right`` (patches go from left to right).

    Manifests are placed in the namespace :func:`manifest_namespace` names (see
    :func:`index_entries`); when it is enforced (``namespace``, or a cluster side narrowed
    to one namespace), a manifest of a namespaced kind in another namespace raises
    :class:`~kubewerk.sync.sources.SourceError`."""
    left_entries, right_entries = await load_pair(left, right)
    schemas = await prepare_schemas(left, left_entries, right, right_entries)
    default_ns, enforced = manifest_namespace(left, right, namespace)
    lk = index_entries(
        left_entries, schemas, manifests=not left.is_cluster, default_namespace=default_ns
    )
    rk = index_entries(
        right_entries, schemas, manifests=not right.is_cluster, default_namespace=default_ns
    )
    if enforced:
        for side, keyed in ((left, lk), (right, rk)):
            if not side.is_cluster:
                check_namespace(keyed, default_ns)
    norm = Normalizer(schemas, keep_status)
    report = DiffReport()
    sem = asyncio.Semaphore(_CONCURRENCY)
    slow: list[tuple[ObjectKey, Entry, Entry]] = []
    for key in sorted(set(lk) | set(rk)):
        le, re_ = lk.get(key), rk.get(key)
        if le is None or re_ is None:
            lo = norm.strip(le.obj) if le is not None else None
            ro = norm.strip(re_.obj) if re_ is not None else None
            report.items.append(ItemDiff(key, ObjectDiff(lo, ro), le, re_))
            continue
        a, b = norm.strip(le.obj), norm.strip(re_.obj)
        if quick_equal(a, b):
            report.items.append(ItemDiff(key, ObjectDiff(a, b), le, re_))
        else:
            slow.append((key, le, re_))

    async def compare(key: ObjectKey, le: Entry, re_: Entry) -> ItemDiff:
        async with sem:
            a_obj, b_obj = await _aligned(left, le.obj, right, re_.obj, schemas)
        a = norm.defaulted(norm.strip(a_obj))
        b = norm.strip(b_obj)
        if key.group_kind not in schemas.served_by_right:
            # a cluster on the right already defaulted its objects with the CRD used here
            b = norm.defaulted(b)
        d = diff_objects(a, b, schemas.shape(str(b.get("apiVersion", "")), key.kind))
        return ItemDiff(key, d, le, re_)

    if slow:
        results = await asyncio.gather(*(compare(*s) for s in slow), return_exceptions=True)
        for s, r in zip(slow, results, strict=True):
            if isinstance(r, BaseException):
                if not isinstance(r, Exception):
                    raise r
                report.errors.append(f"{s[0]}: {r}")
                continue
            report.items.append(r)
        report.items.sort(key=lambda i: i.key)
    for side in (left, right):
        if isinstance(side, ClusterSource):
            report.warnings.extend(w for w in side.warnings if w not in report.warnings)
    return report


async def _aligned(
    left: Source, a: dict[str, Any], right: Source, b: dict[str, Any], schemas: KindSchemas
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pair at one version, built-in manifests defaulted by a cluster side."""
    av, bv = a.get("apiVersion"), b.get("apiVersion")
    kind = str(a.get("kind"))
    meta = b.get("metadata") or {}
    name, ns = str(meta.get("name", "")), str(meta.get("namespace", "") or "")
    if av != bv:
        if isinstance(right, ClusterSource):
            b = await right.get(str(av), kind, name, ns) or b
        elif isinstance(left, ClusterSource):
            a = await left.get(str(bv), kind, name, ns) or a
    gk = GroupKind(key_of_group(a), kind)
    if not schemas.is_custom(gk) and left.is_cluster != right.is_cluster:
        if isinstance(right, ClusterSource):
            a = await server_defaulted(right.client, a, b, warn=right.warn) or a
        elif isinstance(left, ClusterSource):
            b = await server_defaulted(left.client, b, a, warn=left.warn) or b
    return a, b
