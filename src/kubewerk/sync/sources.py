"""Where objects come from: manifests on disk, a Git revision, or a cluster.

:func:`load` reads a source spec as ``kubewerk diff`` and ``kubewerk sync`` take it:

- ``git:REV:PATH`` — the manifests under ``PATH`` (a file or a directory, relative to
  the repository's top) at revision ``REV`` of the Git repository containing the
  current directory (or ``repo``), read with ``git ls-tree``/``git cat-file`` — nothing
  is checked out;
- ``cluster:`` / ``cluster:CONTEXT`` — a kubeconfig context (the current one when
  empty; ``kubeconfig`` names the file), and ``http://...``/``https://...`` — an API
  server by URL without credentials (the embedded server);
- anything else — a manifest file or a directory of them (``.yaml``, ``.yml``,
  ``.json``, recursively, in name order), multi-document YAML and ``List`` kinds
  expanded.

A manifest source answers with every object it holds; a cluster source lists the kinds
it is asked for (see :meth:`ClusterSource.objects`). Unreadable input raises
:class:`SourceError` with a message naming the file or the spec.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson
import yaml

from kubewerk.client import Client, ResourceType
from kubewerk.client.errors import ApiError, ConfigError, Forbidden, NotFound
from kubewerk.core.gvk import format_api_version
from kubewerk.core.inputs import InputTooLarge, max_input_bytes, read_file_bounded
from kubewerk.core.yamlgo import GoYAMLError, check_aliases, may_have_aliases
from kubewerk.sync.keys import GroupKind

__all__ = [
    "ClusterSource",
    "Entry",
    "ManifestSource",
    "Source",
    "SourceError",
    "load",
    "parse_manifests",
]

MANIFEST_SUFFIXES: Final = (".yaml", ".yml", ".json")
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SourceError(Exception):
    """A source that cannot be read (message names the file, revision or context)."""


@dataclass(slots=True)
class Entry:
    """One object and where it came from: ``path`` and ``index`` (the document's position
    in its file) for manifests; ``path`` None for cluster objects."""

    obj: dict[str, Any]
    path: str | None = None
    index: int = 0


def parse_manifests(text: str | bytes, origin: str) -> list[dict[str, Any]]:
    """The objects of a YAML or JSON text (multi-document, ``List`` kinds expanded).

    Raises :class:`SourceError` naming ``origin`` for text that does not parse or a
    document that is not an object with ``apiVersion`` and ``kind``."""
    docs: list[Any] | None = None
    if origin.endswith(".json"):
        try:
            docs = [orjson.loads(text)]
        except orjson.JSONDecodeError:
            docs = None  # JSON with YAML-only liberties: let the YAML reader say what is wrong
    if docs is None:
        try:
            _bound_aliases(text)
            docs = list(yaml.load_all(text, Loader=_Loader))
        except (yaml.YAMLError, GoYAMLError) as exc:
            raise SourceError(f"{origin}: not YAML: {exc}") from None
    out: list[dict[str, Any]] = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
            raise SourceError(
                f"{origin}: document {i + 1} is not an object with apiVersion and kind"
            )
        if str(doc["kind"]).endswith("List") and isinstance(doc.get("items"), list):
            out.extend(x for x in doc["items"] if isinstance(x, dict))
        else:
            out.append(doc)
    return out


def _bound_aliases(text: str | bytes) -> None:
    """Refuse what go-yaml refuses for its aliases (excessive aliasing, an anchor that
    contains itself: ``GoYAMLError``) before PyYAML's loader reads ``text``: its aliases
    become shared references that the comparison then walks once per reference, so a
    400-byte "billion laughs" held ``kubewerk diff`` for ever."""
    probe = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    if not may_have_aliases(probe):
        return
    for root in yaml.compose_all(text, Loader=_Loader):
        if root is not None:
            check_aliases(root)


class Source:
    """A place objects come from (see the module docstring)."""

    name: str = ""
    writable: bool = False
    is_cluster: bool = False

    async def objects(self, kinds: Mapping[GroupKind, str] | None = None) -> list[Entry]:
        """Every object of the source (a cluster: of ``kinds``, GroupKind -> apiVersion)."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release connections (idempotent)."""


@dataclass
class ManifestSource(Source):
    """Manifests in a file or directory, or in a Git revision (``files`` maps each
    manifest's path to its text, read once)."""

    name: str
    root: Path | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    writable: bool = False

    async def objects(self, kinds: Mapping[GroupKind, str] | None = None) -> list[Entry]:
        out: list[Entry] = []
        for path, text in self.files.items():
            for i, obj in enumerate(parse_manifests(text, path)):
                out.append(Entry(obj, path, i))
        return out


def _read_tree(root: Path) -> dict[str, bytes]:
    """The manifests ``root`` names, each read whole up to the input limit
    (:mod:`kubewerk.core.inputs`). A directory is walked for regular files alone (a FIFO
    or device found there would block or never end; symbolic links to directories are
    not followed, so a link loop ends); anything else named is read as it is, so a pipe
    (``<(kustomize build)``) works and ``/dev/zero`` is refused at the limit."""
    if root.is_dir():
        paths = sorted(p for p in root.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    else:
        paths = [root]
    files: dict[str, bytes] = {}
    for p in paths:
        try:
            files[str(p)] = read_file_bounded(p)
        except FileNotFoundError:
            raise SourceError(f"{p}: no such file or directory") from None
        except OSError as exc:
            raise SourceError(f"{p}: {exc.strerror or exc}") from None
        except InputTooLarge as exc:
            raise SourceError(f"{p}: {exc}") from None
    return files


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], input=stdin, capture_output=True, check=False
        )
    except FileNotFoundError:
        raise SourceError("git is not installed") from None
    if done.returncode != 0:
        raise SourceError(
            f"git {' '.join(args[:2])}: {done.stderr.decode(errors='replace').strip()}"
        )
    return done.stdout


def _read_git(spec: str, repo: Path | None) -> ManifestSource:
    rest = spec[len("git:") :]
    rev, sep, path = rest.partition(":")
    if not sep or not rev:
        raise SourceError(f"{spec}: expected git:REV:PATH")
    start = repo or Path.cwd()
    top = Path(_git(start, "rev-parse", "--show-toplevel").decode().strip())
    path = path.strip("/")
    listing = _git(
        top,
        "ls-tree",
        "-r",
        "-z",
        "--format=%(objecttype) %(objectname) %(objectsize)\t%(path)",
        rev,
        "--",
        path or ".",
    )
    blobs: list[tuple[str, str]] = []
    limit = max_input_bytes()
    for row in listing.split(b"\0"):
        if not row:
            continue
        head, _, name = row.decode().partition("\t")
        otype, oid, blob_size = [*head.split(" "), "", ""][:3]
        if otype == "blob" and (name == path or name.endswith(MANIFEST_SUFFIXES)):
            if blob_size.isdigit() and int(blob_size) > limit:
                raise SourceError(f"{rev}:{name}: {InputTooLarge(limit)}")
            blobs.append((name, oid))
    if not blobs:
        raise SourceError(f"{spec}: no manifests at {path or '.'} in {rev}")
    batch = _git(top, "cat-file", "--batch", stdin="".join(f"{oid}\n" for _, oid in blobs).encode())
    files: dict[str, bytes] = {}
    pos = 0
    for name, _oid in blobs:
        end = batch.index(b"\n", pos)
        size = int(batch[pos:end].split()[2])
        files[f"{rev}:{name}"] = batch[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return ManifestSource(spec, None, dict(sorted(files.items())))


_SYSTEM_NAMESPACES: Final = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
_CRD_RT: Final = ResourceType(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
)
_NAMESPACE_RT: Final = ResourceType("", "v1", "Namespace", "namespaces", False)


def _system_object(obj: Mapping[str, Any]) -> bool:
    """Objects every cluster makes for itself, never part of a desired state."""
    meta = obj.get("metadata") or {}
    kind = obj.get("kind")
    name = meta.get("name")
    if meta.get("ownerReferences"):
        return True
    if kind == "Namespace":
        return name in _SYSTEM_NAMESPACES
    if kind == "ConfigMap" and name == "kube-root-ca.crt":
        return True
    if kind == "ServiceAccount" and name == "default":
        return True
    if kind in ("Service", "Endpoints", "EndpointSlice") and name == "kubernetes":
        return meta.get("namespace") == "default"
    return str(meta.get("namespace", "")) in _SYSTEM_NAMESPACES - {"default"}


def _reserved_group(group: str) -> bool:
    """Whether ``group`` is one of Kubernetes' own API groups: the core group, the
    dotless legacy ones (``apps``, ``batch``, ``policy``, ``autoscaling``) and the
    ``k8s.io`` / ``kubernetes.io`` domains a CRD may use only with API approval."""
    return (
        "." not in group
        or group in ("k8s.io", "kubernetes.io")
        or group.endswith((".k8s.io", ".kubernetes.io"))
    )


class ClusterSource(Source):
    """A cluster through a :class:`~kubewerk.client.Client` (owned: closed by :meth:`close`
    unless ``owns_client`` is False). ``namespace`` narrows namespaced kinds to one.

    ``warnings`` collects, once each, what could not be read and what is degraded for it
    (a user who may not list CustomResourceDefinitions: see :meth:`crds`); each names
    the source."""

    is_cluster = True
    writable = True

    def __init__(
        self, name: str, client: Client, *, owns_client: bool = True, namespace: str | None = None
    ) -> None:
        self.name = name
        self.client = client
        self.namespace = namespace
        self._owns = owns_client
        self.warnings: list[str] = []
        self.crds_forbidden = False

    def warn(self, text: str) -> None:
        """Record a warning about this source (each text once), prefixed by its name."""
        line = f"{self.name}: {text}"
        if line not in self.warnings:
            self.warnings.append(line)

    async def crds(self) -> list[dict[str, Any]] | None:
        """The cluster's CustomResourceDefinitions, or None when the user may not list
        them (403): a warning then says what is degraded. Without them a custom kind's
        scope comes from discovery, its list types from the server's ``/openapi/v2``
        and its defaults from a server dry run, as for a built-in kind; its CRD's
        ``kubewerk.dev/references`` do not order the sync. Other errors raise."""
        try:
            listed = await self.client.list_all(_CRD_RT)
        except Forbidden:
            self.crds_forbidden = True
            self.warn(
                "may not list CustomResourceDefinitions (403 Forbidden): custom kinds are "
                "read as built-in ones are (scope from discovery, list types from "
                "/openapi/v2, defaults from a server dry run)"
            )
            return None
        self.crds_forbidden = False
        items: list[dict[str, Any]] = listed.items
        return items

    async def close(self) -> None:
        if self._owns:
            await self.client.close()

    async def resource_type(self, api_version: str, kind: str) -> ResourceType:
        """The served resource for ``apiVersion``/``kind`` (NotFound when not served)."""
        return await self.client.resolve(api_version, kind)

    async def default_kinds(self) -> dict[GroupKind, str]:
        """What a cluster-to-cluster diff compares when not told: Namespaces, CRDs and
        every custom resource kind (at its storage version)."""
        kinds: dict[GroupKind, str] = {GroupKind("", "Namespace"): "v1"}
        crds = await self.crds()
        if crds is None:
            kinds.update(await self._discovered_custom_kinds())
            self.warn(
                "CustomResourceDefinitions are not compared; the custom kinds compared are "
                "those discovery serves in groups outside Kubernetes' own (k8s.io, "
                "kubernetes.io)"
            )
            return kinds
        kinds[GroupKind("apiextensions.k8s.io", "CustomResourceDefinition")] = (
            "apiextensions.k8s.io/v1"
        )
        for crd in crds:
            spec = crd.get("spec") or {}
            versions = [v for v in spec.get("versions") or () if v.get("served")]
            stored = [v for v in versions if v.get("storage")] or versions
            if stored:
                kinds[GroupKind(spec["group"], spec["names"]["kind"])] = format_api_version(
                    spec["group"], stored[0]["name"]
                )
        return kinds

    async def _discovered_custom_kinds(self) -> dict[GroupKind, str]:
        """The kinds discovery serves at each group's preferred version, for the groups
        outside Kubernetes' own (see :func:`_reserved_group`): the custom kinds a user
        who may not list CRDs can still find."""
        found: dict[GroupKind, str] = {}
        doc = await self.client.request("GET", "/apis")
        for group in (doc or {}).get("groups") or ():
            name = str(group.get("name", ""))
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            if _reserved_group(name) or not isinstance(preferred, str):
                continue
            try:
                listing = await self.client.request("GET", f"/apis/{preferred}")
            except (NotFound, Forbidden):
                continue
            for res in (listing or {}).get("resources") or ():
                if "/" not in str(res.get("name", "")) and res.get("kind"):
                    found.setdefault(GroupKind(name, str(res["kind"])), preferred)
        return found

    async def objects(self, kinds: Mapping[GroupKind, str] | None = None) -> list[Entry]:
        wanted = dict(kinds) if kinds is not None else await self.default_kinds()
        out: list[Entry] = []
        for gk, api_version in wanted.items():
            try:
                rt = await self.client.resolve(api_version, gk.kind)
            except NotFound:
                continue  # a kind this cluster does not serve has no objects here
            try:
                listed = await self.client.list_all(rt, self.namespace if rt.namespaced else None)
            except Forbidden as exc:
                if rt.namespaced and not self.namespace:
                    # a user whose rights end at a namespace: say how to narrow to it
                    raise SourceError(
                        f"{self.name}: may not list {rt.plural} in every namespace "
                        f"(403 Forbidden: {exc.message}): pass -n NAMESPACE to read one"
                    ) from None
                raise
            out.extend(Entry(obj) for obj in listed.items if not _system_object(obj))
        return out

    async def get(
        self, api_version: str, kind: str, name: str, namespace: str
    ) -> dict[str, Any] | None:
        """One object at ``apiVersion`` (converted by the server), None when absent."""
        rt = await self.client.resolve(api_version, kind)
        try:
            found: dict[str, Any] = await self.client.get(rt, name, namespace or None)
        except NotFound:
            return None
        found.setdefault("apiVersion", api_version)
        found.setdefault("kind", kind)
        return found

    async def openapi_v2(self) -> dict[str, Any] | None:
        """The server's ``/openapi/v2`` document, or None when it does not serve one."""
        try:
            doc = await self.client.request("GET", "/openapi/v2")
        except ApiError:
            return None
        return doc if isinstance(doc, dict) else None


def cluster(
    spec: str,
    *,
    kubeconfig: str | None = None,
    namespace: str | None = None,
    client: Client | None = None,
) -> ClusterSource:
    """A :class:`ClusterSource` for ``cluster:[CONTEXT]`` or an ``http(s)://`` URL."""
    if client is not None:
        return ClusterSource(spec, client, owns_client=False, namespace=namespace)
    try:
        if spec.startswith(("http://", "https://")):
            made = Client.from_url(spec)
        else:
            context = spec[len("cluster:") :] if spec.startswith("cluster:") else spec
            made = Client.from_kubeconfig(kubeconfig, context or None)
    except ConfigError as exc:
        raise SourceError(f"{spec}: {exc}") from None
    return ClusterSource(spec, made, namespace=namespace)


def is_cluster_spec(spec: str) -> bool:
    """Whether ``spec`` names a cluster rather than manifests."""
    return spec.startswith(("cluster:", "http://", "https://"))


def load(
    spec: str,
    *,
    kubeconfig: str | None = None,
    namespace: str | None = None,
    repo: Path | None = None,
) -> Source:
    """The source ``spec`` names (see the module docstring). Manifests and Git
    revisions are read here (:class:`SourceError` when they cannot be); a cluster is
    contacted on first use."""
    if spec.startswith("git:"):
        return _read_git(spec, repo)
    if is_cluster_spec(spec):
        return cluster(spec, kubeconfig=kubeconfig, namespace=namespace)
    root = Path(spec)
    return ManifestSource(spec, root, _read_tree(root), writable=True)


def dump_manifests(objects: Iterable[Mapping[str, Any]]) -> str:
    """Objects as one multi-document YAML text (keys in their given order)."""
    return "---\n".join(
        yaml.safe_dump(
            orjson.loads(orjson.dumps(dict(o))), sort_keys=False, default_flow_style=False
        )
        for o in objects
    )
