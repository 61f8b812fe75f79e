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

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key giving Kubernetes' version priority (GA > beta > alpha > other; higher first)."""
    m = _VERSION_RE.match(version)
    if not m:
        return (3, 0, 0, version)
    major = int(m.group(1))
    if m.group(2) is None:
        return (0, -major, 0, "")
    stage = 1 if m.group(2) == "beta" else 2
    return (stage, -major, -int(m.group(3)), "")


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
    paths = ["/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/openapi/v3", "/version"]
    for group, types in registry.groups().items():
        if not group:
            continue
        paths.append(f"/apis/{group}")
        versions = {v for t in types for v in t.versions}
        paths.extend(f"/apis/{group}/{v}" for v in sorted_versions(list(versions)))
    return sorted(paths)


def _group_versions(types: list[ServedResource]) -> list[str]:
    return sorted_versions(list({v for t in types for v in t.versions}))


def _group_entry(group: str, types: list[ServedResource]) -> JSON:
    versions = _group_versions(types)
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> JSON:
    groups = [_group_entry(g, types) for g, types in registry.groups().items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> JSON | None:
    types = registry.groups().get(group)
    if not group or not types:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, types)}


def resource_list(registry: Registry, group: str, version: str) -> JSON | None:
    types = [t for t in registry.groups().get(group, []) if version in t.versions]
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
        if t.status_subresource:
            resources.append(
                {
                    "name": f"{t.resource}/status",
                    "singularName": "",
                    "namespaced": t.namespaced,
                    "kind": t.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if t.scale is not None:
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
            resources.append(
                {
                    "name": f"{t.resource}/{sub}",
                    "singularName": "",
                    "namespaced": t.namespaced,
                    "kind": t.kind,
                    "verbs": list(verbs),
                }
            )
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
    if t.status_subresource:
        subs.append(
            {
                "subresource": "status",
                "responseKind": {"group": t.group, "version": version, "kind": t.kind},
                "verbs": ["get", "patch", "update"],
            }
        )
    if t.scale is not None:
        subs.append(
            {
                "subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": ["get", "patch", "update"],
            }
        )
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated(registry: Registry, legacy: bool, agg_version: str) -> tuple[JSON, str]:
    """The ``APIGroupDiscoveryList`` for ``/api`` (legacy) or ``/apis``, and its content type."""
    items: list[JSON] = []
    for group, types in registry.groups().items():
        if legacy != (group == ""):
            continue
        versions = []
        for v in _group_versions(types):
            resources = [_aggregated_resource(t, v) for t in types if v in t.versions]
            versions.append({"version": v, "resources": resources, "freshness": "Current"})
        meta: JSON = (
            {"name": group, "creationTimestamp": None} if group else {"creationTimestamp": None}
        )
        items.append({"metadata": meta, "versions": versions})
    body = {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": _AGG_VERSIONS[agg_version],
        "metadata": {},
        "items": items,
    }
    ctype = f"application/json;g=apidiscovery.k8s.io;v={agg_version};as=APIGroupDiscoveryList"
    return body, ctype
