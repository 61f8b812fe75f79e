"""Discovery documents: ``/api``, ``/apis``, group and group-version resource lists, the
aggregated (``apidiscovery.k8s.io/v2``) form kubectl asks for first, and ``/version``."""

from __future__ import annotations

import platform
import re
import sys
from typing import Any

from kubewerk.apiserver.registry import Registry, ServedResource
from kubewerk.core.gvk import format_api_version

JSON = dict[str, Any]

KUBE_MAJOR = "1"
KUBE_MINOR = "33"
"""The Kubernetes release ``/version`` and both OpenAPI documents report (one version
everywhere). The vendored definitions are release-1.36's (``kinds/openapi_data/
SOURCE.md``), a superset of 1.33's for the served kinds; 1.33 is kept because kubectl
builds that dispatch on the server's minor version (gcloud's ``kubectl`` ships 1.27-1.33)
fall back to an older client, with a skew warning and another log format, for 1.34+."""

_VERSION_RE = re.compile(r"v([0-9]+)(?:(alpha|beta)([0-9]+))?")
_INT_MAX = 2**63 - 1
"""Go's ``int`` on 64-bit platforms: a larger number makes a version not kube-like."""


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key giving Kubernetes' version order (``CompareKubeAwareVersionStrings``):
    GA, then beta, then alpha, each by major then minor number, highest first; then every
    other string (not ``v<digits>[alpha|beta<digits>]`` in ASCII digits, the whole
    string, numbers within Go's int) in byte order. Versions the same to Kubernetes
    (``v01``, ``v1``) get the same key."""
    m = _VERSION_RE.fullmatch(version)
    if m is None:
        return (3, 0, 0, version)
    major = int(m.group(1))
    minor = 0 if m.group(3) is None else int(m.group(3))
    if major > _INT_MAX or minor > _INT_MAX:
        return (3, 0, 0, version)
    if m.group(2) is None:
        return (0, -major, 0, "")
    stage = 1 if m.group(2) == "beta" else 2
    return (stage, -major, -minor, "")


def sorted_versions(versions: list[str]) -> list[str]:
    return sorted(versions, key=version_priority)


def version_info(kubewerk_version: str) -> JSON:
    """``/version`` as kube-apiserver 1.33+ answers it: the served release (with the
    emulation and minimum-compatibility versions it reports), ``gitVersion`` carrying
    kubewerk's own version as semver build metadata."""
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "emulationMajor": KUBE_MAJOR,
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": KUBE_MAJOR,
        "minCompatibilityMinor": str(int(KUBE_MINOR) - 1),
        "gitVersion": f"v{KUBE_MAJOR}.{KUBE_MINOR}.0+kubewerk-{kubewerk_version}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": f"python{sys.version_info.major}.{sys.version_info.minor}",
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{platform.machine()}",
    }


def root_paths(registry: Registry) -> list[str]:
    """``/``'s path list, kept until the registry changes."""
    return registry.memo(("discovery.root",), lambda: _root_paths(registry))


def _root_paths(registry: Registry) -> list[str]:
    paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/openapi/v3", "/version"]
    for group in registry.group_names():
        if not group:
            continue
        paths.append(f"/apis/{group}")
        paths.extend(f"/apis/{group}/{v}" for v in group_versions(registry, group))
    return sorted(paths)


def group_versions(registry: Registry, group: str) -> list[str]:
    """The versions ``group`` serves in kube-apiserver's order (kept until it changes): by
    the ``VersionPriority`` of their APIService, highest first (``autoscaling/v2`` before
    ``v1``; every CRD version 100), then in Kubernetes' version order, then by name (only
    for versions Kubernetes finds equal, such as ``v01`` and ``v1``). The first is the
    group's preferred version."""

    def build() -> list[str]:
        served = {v for t in registry.group(group) for v in t.versions}
        return sorted(
            served,
            key=lambda v: (-registry.api_service_priority(group, v)[1], version_priority(v), v),
        )

    return registry.memo(("discovery.versions",), build, group)


def _group_entry(registry: Registry, group: str) -> JSON:
    def build() -> JSON:
        versions = group_versions(registry, group)
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"name": group, "versions": entries, "preferredVersion": entries[0]}

    return registry.memo(("discovery.group",), build, group)


def api_group_list(registry: Registry) -> JSON:
    """``/apis`` (``APIGroupList``) in kube-aggregator's order
    (``Registry.group_names_by_service``), rebuilt from the per-group entries after a
    change."""

    def build() -> JSON:
        groups = [_group_entry(registry, g) for g in registry.group_names_by_service() if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    return registry.memo(("discovery.groups",), build)


def api_group(registry: Registry, group: str) -> JSON | None:
    """``/apis/G`` (``APIGroup``); costs the size of ``group``."""
    if not group or not registry.group(group):
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(registry, group)}


def resource_list(registry: Registry, group: str, version: str) -> JSON | None:
    """``/api/v1`` or ``/apis/G/V`` (``APIResourceList``), kept until ``group`` changes."""
    return registry.memo(
        ("discovery.resources", version), lambda: _resource_list(registry, group, version), group
    )


def _resource_list(registry: Registry, group: str, version: str) -> JSON | None:
    types = [t for t in registry.group(group) if version in t.versions]
    if not types:
        return None
    resources: list[JSON] = []
    for t in types:
        entry: JSON = {
            "name": t.resource,
            "singularName": t.singular,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": list(t.verbs),
        }
        if t.short_names:
            entry["shortNames"] = list(t.short_names)
        if t.categories:
            entry["categories"] = list(t.categories)
        resources.append(entry)
        if t.has_status(version):
            resources.append(
                {
                    "name": f"{t.resource}/status",
                    "singularName": "",
                    "namespaced": t.namespaced,
                    "kind": t.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if t.scale_of(version) is not None:
            resources.append(
                {
                    "name": f"{t.resource}/scale",
                    "singularName": "",
                    "namespaced": t.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
        for sub, verbs in t.strategy.subresources.items():
            sub_entry: JSON = {
                "name": f"{t.resource}/{sub}",
                "singularName": "",
                "namespaced": t.namespaced,
            }
            other = t.strategy.subresource_kinds.get(sub)
            if other is not None:
                sub_entry["group"], sub_entry["version"] = other[0], other[1]
            sub_entry["kind"] = t.kind if other is None else other[2]
            sub_entry["verbs"] = list(verbs)
            resources.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format_api_version(group, version),
        "resources": resources,
    }


# -- aggregated discovery ---------------------------------------------------------

_AGG_VERSIONS = {"v2": "apidiscovery.k8s.io/v2", "v2beta1": "apidiscovery.k8s.io/v2beta1"}


def negotiate_aggregated(accept: str) -> str | None:
    """The aggregated discovery version the client prefers (``v2``/``v2beta1``), if any."""
    for entry in accept.split(","):
        params = {}
        parts = [p.strip() for p in entry.split(";")]
        media = parts[0].lower()
        for p in parts[1:]:
            if "=" in p:
                k, _, v = p.partition("=")
                params[k.strip().lower()] = v.strip()
        if media in ("application/json", "*/*") and not params:
            return None
        if (
            media == "application/json"
            and params.get("g") == "apidiscovery.k8s.io"
            and params.get("as") == "APIGroupDiscoveryList"
            and params.get("v") in _AGG_VERSIONS
        ):
            return params["v"]
    return None


def _aggregated_resource(t: ServedResource, version: str) -> JSON:
    entry: JSON = {
        "resource": t.resource,
        "responseKind": {"group": t.group, "version": version, "kind": t.kind},
        "scope": "Namespaced" if t.namespaced else "Cluster",
        "singularResource": t.singular,
        "verbs": list(t.verbs),
    }
    if t.short_names:
        entry["shortNames"] = list(t.short_names)
    if t.categories:
        entry["categories"] = list(t.categories)
    subs: list[JSON] = []
    if t.has_status(version):
        subs.append(
            {
                "subresource": "status",
                "responseKind": {"group": t.group, "version": version, "kind": t.kind},
                "verbs": ["get", "patch", "update"],
            }
        )
    if t.scale_of(version) is not None:
        subs.append(
            {
                "subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": ["get", "patch", "update"],
            }
        )
    for sub, verbs in t.strategy.subresources.items():
        group, kind_version, kind = t.strategy.subresource_kinds.get(
            sub, (t.group, version, t.kind)
        )
        subs.append(
            {
                "subresource": sub,
                "responseKind": {"group": group, "version": kind_version, "kind": kind},
                "verbs": list(verbs),
            }
        )
    if subs:
        entry["subresources"] = subs
    return entry


def _aggregated_group(registry: Registry, group: str) -> JSON:
    def build() -> JSON:
        types = registry.group(group)
        versions = []
        for v in group_versions(registry, group):
            resources = [_aggregated_resource(t, v) for t in types if v in t.versions]
            versions.append({"version": v, "resources": resources, "freshness": "Current"})
        meta: JSON = (
            {"name": group, "creationTimestamp": None} if group else {"creationTimestamp": None}
        )
        return {"metadata": meta, "versions": versions}

    return registry.memo(("discovery.aggregated",), build, group)


def aggregated(registry: Registry, legacy: bool, agg_version: str) -> tuple[JSON, str]:
    """The ``APIGroupDiscoveryList`` for ``/api`` (legacy) or ``/apis``, and its content
    type, groups in ``Registry.group_names`` order (group priority, then name). Each
    group's entry is kept until that group changes; the list itself until any group does
    (assembling it costs one reference per group)."""

    def build() -> JSON:
        items = [
            _aggregated_group(registry, g) for g in registry.group_names() if legacy == (g == "")
        ]
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": _AGG_VERSIONS[agg_version],
            "metadata": {},
            "items": items,
        }

    body = registry.memo(("discovery.aggregated", legacy, agg_version), build)
    ctype = f"application/json;g=apidiscovery.k8s.io;v={agg_version};as=APIGroupDiscoveryList"
    return body, ctype
