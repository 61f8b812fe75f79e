"""Resource names as kubectl users type them (``db``, ``databases``, ``Database``,
``databases.platform.kubewerk.dev``, ``Database.v1.platform.kubewerk.dev``), resolved from
the server's discovery the way kubectl resolves a resource argument.

:func:`read_served` reads discovery (``/api``, ``/apis`` and every group version, in the
server's order); :func:`resolve_resource_arg` maps a typed name to one served resource.
What it guarantees is what kubectl does (cli-runtime's resource builder, client-go's
short-name expander and discovery REST mapper), checked against kubectl 1.32:

1. ``resource.version.group`` (two dots or more) is tried first, then ``resource.group``
   (split at the first dot), then ``Kind.version.group`` and ``Kind.group``;
2. a resource matches a plural or singular name, case-insensitively (a server that sends
   no singular gets the lower-cased kind, as kubectl guesses); a group given without a
   version matches every group it is a prefix of (``databases.platform`` is
   ``databases.platform.kubewerk.dev``), with a version only itself; a kind matches as
   written or lower-cased, in exactly the group given (``Pod``, no group, is the core
   group's — but ``database`` is any CRD's singular);
3. a name that is no plural or singular anywhere (in the given group) is tried as a short
   name, case-sensitively (``PO`` is no short name): the first resource in discovery
   order declaring it wins, any other one gives a warning (``short name "db" could also
   match lower priority resource databases.other.example.com``), and a version given
   with it is dropped; with a group given and no short name in it, a group *starting*
   with it is tried (``hpa.autoscal``). A plural or singular always beats a short name
   (``quota`` is a CRD's singular before it is resourcequotas' short name);
4. several resources for one name: the core group first, then the groups in discovery
   order, a group's preferred version before its others; two kinds in the one group
   version that comes first is ambiguous (no answer, as kubectl errors).

A name none of this resolves gets kubectl's error, :func:`unknown_resource_type`.
Nothing here does I/O except :func:`read_served`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from kubewerk.client.client import Client
from kubewerk.client.errors import ApiError
from kubewerk.client.resources import ResourceType

__all__ = [
    "Resolved",
    "ServedResource",
    "go_quote",
    "read_served",
    "resolve_resource_arg",
    "served_from_types",
    "unknown_resource_type",
]


@dataclass(frozen=True, slots=True)
class ServedResource:
    """One resource of one group version as discovery lists it (subresources left out)."""

    group: str
    version: str
    resource: str
    """The plural, as in URLs."""
    singular: str
    """The singular name (the lower-cased kind when discovery gave none)."""
    kind: str
    short_names: tuple[str, ...] = ()
    namespaced: bool = True

    @property
    def group_resource(self) -> str:
        """``resource.group`` (``resource`` for the core group), as kubectl prints it."""
        return f"{self.resource}.{self.group}" if self.group else self.resource


class Resolved(NamedTuple):
    """What a typed resource name named."""

    served: ServedResource
    """The resource (its group, its kind in the version kubectl would pick, its plural)."""
    warnings: tuple[str, ...] = ()
    """kubectl's warnings for it (a short name other resources also declare)."""


def unknown_resource_type(text: str) -> str:
    """kubectl's error for a name no served resource answers to: ``the server doesn't
    have a resource type "x"``, ``x`` the text before its first dot."""
    name = text.partition(".")[0]
    return f'the server doesn\'t have a resource type "{go_quote(name)}"'


def go_quote(text: str) -> str:
    """``text`` as Go's %q writes it between its quotes (backslash, quote and control
    characters escaped): an error line quoting it stays one line whatever was typed."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def served_from_types(types: Iterable[ResourceType]) -> tuple[ServedResource, ...]:
    """Served resources for kinds known only as :class:`ResourceType` (no discovery at
    hand): singular is the lower-cased kind, no short names; in the given order."""
    return tuple(
        ServedResource(t.group, t.version, t.plural, t.kind.lower(), t.kind, (), t.namespaced)
        for t in types
    )


# -- discovery ---------------------------------------------------------------------------


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _resources(group: str, version: str, doc: Any) -> list[ServedResource]:
    found = []
    for res in _mapping(doc).get("resources") or []:
        res = _mapping(res)
        name, kind = res.get("name"), res.get("kind")
        if not isinstance(name, str) or not name or "/" in name or not isinstance(kind, str):
            continue
        singular = res.get("singularName")
        shorts = res.get("shortNames") or []
        found.append(
            ServedResource(
                group,
                version,
                name,
                singular if isinstance(singular, str) and singular else kind.lower(),
                kind,
                tuple(s for s in shorts if isinstance(s, str) and s),
                bool(res.get("namespaced")),
            )
        )
    return found


async def read_served(client: Client) -> tuple[ServedResource, ...]:
    """Every resource the server serves, in kubectl's priority order: the core group
    first, then the groups in the order ``/apis`` lists them, in each its preferred
    version first and then the others as listed. A group version whose document cannot
    be read (404, an aggregated API that is down) is left out, as kubectl leaves it out;
    errors reading ``/api`` or ``/apis`` themselves are raised."""
    versions: list[tuple[str, str]] = []
    core = await client.request("GET", "/api")
    versions += [("", v) for v in _mapping(core).get("versions") or [] if isinstance(v, str)]
    groups = await client.request("GET", "/apis")
    for entry in _mapping(groups).get("groups") or []:
        name = _mapping(entry).get("name")
        if not isinstance(name, str) or not name:
            continue
        listed = [v for v in (_mapping(v).get("version") for v in entry.get("versions") or []) if v]
        listed = [v for v in listed if isinstance(v, str)]
        preferred = _mapping(entry.get("preferredVersion")).get("version")
        if isinstance(preferred, str) and preferred in listed:
            listed.remove(preferred)
            listed.insert(0, preferred)
        versions += [(name, v) for v in listed]

    async def one(group: str, version: str) -> list[ServedResource]:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            return _resources(group, version, await client.request("GET", path))
        except ApiError:
            return []

    docs = await asyncio.gather(*(one(g, v) for g, v in versions))
    return tuple(r for doc in docs for r in doc)


# -- resolution --------------------------------------------------------------------------


def _kind_for(
    served: Sequence[ServedResource], resource: str, group: str | None, version: str | None
) -> tuple[ServedResource | None, tuple[str, ...]]:
    """kubectl's ``KindFor`` on a (group, version, resource) with its short-name expander:
    the resource it names and the expander's warnings (None: no match or ambiguous)."""
    warnings: list[str] = []
    in_group = [s for s in served if group is None or s.group == group]
    exact = any(resource in (s.resource, s.singular) for s in in_group)
    if not exact:
        shorts = [s for s in in_group if resource in s.short_names]
        if shorts:
            first = shorts[0]
            for other in shorts[1:]:
                if (other.group, other.resource) == (first.group, first.resource):
                    continue  # the same resource in another version: not ambiguous
                message = (
                    f'short name "{resource}" could also match lower priority resource '
                    f"{other.group_resource}"
                )
                if message not in warnings:
                    warnings.append(message)
            # the expander keeps only group and resource: any version of it
            resource, group, version = first.resource, first.group, None
        elif group:
            prefixed = next(
                (s for s in served if s.group.startswith(group) and resource in s.short_names),
                None,
            )
            if prefixed is not None:
                resource, group = prefixed.resource, prefixed.group
    wanted = resource.lower()
    matches = [
        s
        for s in served
        if wanted in (s.resource, s.singular)
        and (
            (group is None or s.group.startswith(group))  # a group prefix ("apps" too)
            if version is None
            else ((group is None or s.group == group) and s.version == version)
        )
    ]
    return _by_priority(matches), tuple(warnings)


def _by_priority(matches: list[ServedResource]) -> ServedResource | None:
    """The match of the first group version (in ``served``'s priority order) that has
    one; None for none, or for two different kinds in that group version."""
    if not matches:
        return None
    first = matches[0]
    tier = [m for m in matches if (m.group, m.version) == (first.group, first.version)]
    return first if len({m.kind for m in tier}) == 1 else None


def _mapping_for_kind(
    served: Sequence[ServedResource], kind: str, group: str, version: str | None
) -> ServedResource | None:
    """kubectl's ``RESTMapping`` for a kind: the kind exactly or lower-cased, in exactly
    ``group`` (and ``version`` when given)."""
    matches = [
        s
        for s in served
        if s.group == group
        and (version is None or s.version == version)
        and kind in (s.kind, s.kind.lower())
    ]
    return _by_priority(matches)


def _kubectl(served: Sequence[ServedResource], text: str) -> Resolved | None:
    """cli-runtime's ``mappingFor``: the resource forms, then the kind forms."""
    parts = text.split(".", 2)
    name, _, rest = text.partition(".")
    if len(parts) == 3:  # resource.version.group
        found, warnings = _kind_for(served, parts[0], parts[2] or None, parts[1] or None)
        if found is not None:
            return Resolved(found, warnings)
    found, warnings = _kind_for(served, name, rest or None, None)
    if found is not None:
        return Resolved(found, warnings)
    if len(parts) == 3:  # Kind.version.group
        by_kind = _mapping_for_kind(served, parts[0], parts[2], parts[1] or None)
        if by_kind is not None:
            return Resolved(by_kind)
    by_kind = _mapping_for_kind(served, name, rest, None)
    return Resolved(by_kind) if by_kind is not None else None


def resolve_resource_arg(served: Sequence[ServedResource], text: str) -> Resolved | None:
    """The served resource ``text`` names (see the module doc), or None where kubectl
    answers :func:`unknown_resource_type`. ``served`` is in priority order
    (:func:`read_served`)."""
    if not text:
        return None
    return _kubectl(served, text)
