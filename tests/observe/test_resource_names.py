"""Kind names as kubectl users type them, resolved from discovery as kubectl resolves a
resource argument (kubewerk.observe.resourcenames, views.lookup_kind).

The expected answers in ``KUBECTL`` are what kubectl 1.32 did (``kubectl get NAME -v=6``,
the URL it listed) against ``kubewerk up`` serving the platform example's CRDs plus a
second ``databases`` CRD in ``other.example.com`` declaring short names ``db`` and
``quota``; ``SERVED`` is that server's discovery, in its order."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kubewerk.client import CRD, Client, ResourceType
from kubewerk.observe.resourcenames import (
    ServedResource,
    read_served,
    resolve_resource_arg,
    served_from_types,
    unknown_resource_type,
)
from kubewerk.observe.state import ClusterState, KindInfo, KindKey
from kubewerk.observe.views import lookup_kind, resolve_kind
from kubewerk.observe.watcher import snapshot
from kubewerk.testing import wait_for
from kubewerk.testing.helpers import crd_established

from .scenario import CRDS

PLATFORM = "platform.kubewerk.dev"
OTHER = "other.example.com"


def res(
    group: str, version: str, plural: str, kind: str, *shorts: str, singular: str = ""
) -> ServedResource:
    return ServedResource(group, version, plural, singular or kind.lower(), kind, shorts)


SERVED = (
    res("", "v1", "configmaps", "ConfigMap", "cm"),
    res("", "v1", "events", "Event", "ev"),
    res("", "v1", "pods", "Pod", "po"),
    res("", "v1", "resourcequotas", "ResourceQuota", "quota"),
    res("", "v1", "services", "Service", "svc"),
    res("apps", "v1", "deployments", "Deployment", "deploy"),
    res("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", "hpa"),
    res("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", "hpa"),
    res("batch", "v1", "jobs", "Job"),
    res("events.k8s.io", "v1", "events", "Event", "ev"),
    res(OTHER, "v1", "databases", "Database", "db", "quota"),
    res(PLATFORM, "v1", "applications", "Application", "app"),
    res(PLATFORM, "v1", "databases", "Database", "db"),
    res(PLATFORM, "v1", "dnsrecords", "DNSRecord", "dns"),
    res(PLATFORM, "v1", "jobs", "Job"),
    res(PLATFORM, "v1", "quotas", "Quota"),
)

# typed name -> (group, version, plural) kubectl listed, and its warning (or None)
KUBECTL: dict[str, tuple[str, str, str, str | None]] = {
    "db": (OTHER, "v1", "databases", f"databases.{PLATFORM}"),
    "quota": (PLATFORM, "v1", "quotas", None),  # a singular beats a short name
    "Quota": (PLATFORM, "v1", "quotas", None),
    "job": ("batch", "v1", "jobs", None),  # the first group in discovery order
    "Pod": ("", "v1", "pods", None),
    "DATABASES": (OTHER, "v1", "databases", None),
    "databases.platform": (PLATFORM, "v1", "databases", None),  # a group prefix
    "databases.plat": (PLATFORM, "v1", "databases", None),
    "Database.plat": (PLATFORM, "v1", "databases", None),
    "database.other": (OTHER, "v1", "databases", None),
    "deploy.app": ("apps", "v1", "deployments", None),  # a short name's group prefix
    "hpa.autoscal": ("autoscaling", "v2", "horizontalpodautoscalers", None),
    "hpa": ("autoscaling", "v2", "horizontalpodautoscalers", None),  # the preferred version
    "hpa.v1.autoscaling": ("autoscaling", "v2", "horizontalpodautoscalers", None),
    "horizontalpodautoscalers.v1.autoscaling": (
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        None,
    ),
    f"Database.v1.{PLATFORM}": (PLATFORM, "v1", "databases", None),
    f"databases.v1.{OTHER}": (OTHER, "v1", "databases", None),
    f"db.{OTHER}": (OTHER, "v1", "databases", None),
    f"db.{PLATFORM}": (PLATFORM, "v1", "databases", None),
    f"Database.{PLATFORM}": (PLATFORM, "v1", "databases", None),
    "dnsrecord": (PLATFORM, "v1", "dnsrecords", None),
    "DNSRecord": (PLATFORM, "v1", "dnsrecords", None),
    "dns": (PLATFORM, "v1", "dnsrecords", None),
    "app.platform": (PLATFORM, "v1", "applications", None),
    "pods.v1.": ("", "v1", "pods", None),
    "cm.": ("", "v1", "configmaps", None),
    "ev": ("", "v1", "events", "events.events.k8s.io"),
    "event": ("", "v1", "events", None),
    "events": ("", "v1", "events", None),
}

# typed names kubectl answered with: the server doesn't have a resource type "<quoted>"
KUBECTL_UNKNOWN = {"PO": "PO", "DB": "DB", "nope.x": "nope", "quotas.v1": "quotas"}


@pytest.mark.parametrize("text", sorted(KUBECTL))
def test_names_resolve_as_kubectl_resolves_them(text: str) -> None:
    group, version, plural, warned = KUBECTL[text]
    found = resolve_resource_arg(SERVED, text)
    assert found is not None
    assert (found.served.group, found.served.version, found.served.resource) == (
        group,
        version,
        plural,
    )
    expected = (
        ()
        if warned is None
        else (f'short name "{text}" could also match lower priority resource {warned}',)
    )
    assert found.warnings == expected


@pytest.mark.parametrize("text", sorted(KUBECTL_UNKNOWN))
def test_unknown_names_get_kubectls_error(text: str) -> None:
    assert resolve_resource_arg(SERVED, text) is None
    quoted = KUBECTL_UNKNOWN[text]
    assert unknown_resource_type(text) == f'the server doesn\'t have a resource type "{quoted}"'


def test_the_error_quotes_like_go_and_stays_one_line() -> None:
    assert unknown_resource_type('a"b\\c\nd\x1b.x') == (
        'the server doesn\'t have a resource type "a\\"b\\\\c\\nd\\x1b"'
    )
    assert resolve_resource_arg(SERVED, "") is None


def test_two_kinds_for_one_name_in_the_first_group_version_is_ambiguous() -> None:
    served = (
        res("a.io", "v1", "foos", "Foo"),
        res("a.io", "v1", "bars", "Bar", singular="foos"),
        res("b.io", "v1", "foos", "Foo"),
    )
    assert resolve_resource_arg(served, "foos") is None
    # in another group first, the same name is not ambiguous
    assert resolve_resource_arg(served[2:] + served[:2], "foos") is not None
    # one resource whose plural and singular are the same name is one match
    same = (res("", "v1", "endpoints", "Endpoints", "ep", singular="endpoints"),)
    found = resolve_resource_arg(same, "endpoints")
    assert found is not None and found.served.kind == "Endpoints"


def test_a_short_name_in_two_versions_of_one_resource_warns_of_nothing() -> None:
    found = resolve_resource_arg(SERVED, "hpa")
    assert found is not None and found.warnings == ()


def test_a_kind_is_matched_as_written_or_lower_cased_in_its_group_only() -> None:
    served = (res("x.io", "v1", "widgets", "Widget", singular="gadget"),)
    found = resolve_resource_arg(served, "Widget.x.io")
    assert found is not None and found.served.kind == "Widget"
    assert resolve_resource_arg(served, "widget.x.io") is not None
    assert resolve_resource_arg(served, "WIDGET.x.io") is None  # neither, nor a singular
    assert resolve_resource_arg(served, "Widget") is None  # a kind without group: core's
    assert resolve_resource_arg(served, "gadget") is not None  # the singular
    assert resolve_resource_arg(served, "Widget.v2.x.io") is None  # no such version


def platform_state(served: tuple[ServedResource, ...] = SERVED) -> ClusterState:
    state = ClusterState(served=served)
    for s in SERVED:
        if s.group == PLATFORM:
            state.set_kind(KindInfo(ResourceType(s.group, s.version, s.kind, s.resource)))
    return state


def test_lookup_gives_the_watched_kind() -> None:
    state = platform_state()
    for text in ("quota", f"db.{PLATFORM}", "databases.platform", "app", "dns"):
        found = lookup_kind(state, text)
        assert found.key is not None and found.key.group == PLATFORM and found.error is None
    assert resolve_kind(state, "app") == KindKey(PLATFORM, "Application")


def test_a_name_of_a_kind_that_is_not_watched_says_what_it_names() -> None:
    state = platform_state()
    found = lookup_kind(state, "job")
    assert found.key is None and found.served is not None
    assert found.error == (
        '"job" is jobs.batch, not a watched kind (only the kinds of '
        f"CustomResourceDefinitions are); Job of {PLATFORM} is jobs.{PLATFORM}"
    )
    found = lookup_kind(state, "db")
    assert found.key is None
    assert found.warnings == (
        f'short name "db" could also match lower priority resource databases.{PLATFORM}',
    )
    assert found.error is not None and found.error.startswith(f'"db" is databases.{OTHER}, ')
    assert found.error.endswith(f"; Database of {PLATFORM} is databases.{PLATFORM}")
    found = lookup_kind(state, "svc")
    assert found.error == (
        '"svc" is services, not a watched kind (only the kinds of CustomResourceDefinitions are)'
    )
    found = lookup_kind(state, "widgets")
    assert (found.key, found.served) == (None, None)
    assert found.error == 'the server doesn\'t have a resource type "widgets"'


def test_without_discovery_the_watched_kinds_stand_in() -> None:
    state = platform_state(served=())
    assert resolve_kind(state, "databases") == KindKey(PLATFORM, "Database")
    assert resolve_kind(state, "Database") == KindKey(PLATFORM, "Database")
    assert resolve_kind(state, "job") == KindKey(PLATFORM, "Job")
    assert resolve_kind(state, "db") is None  # short names come only from discovery
    types = [ResourceType("g.io", "v1", "DNSRecord", "dnsrecords", False)]
    assert served_from_types(types) == (
        ServedResource("g.io", "v1", "dnsrecords", "dnsrecord", "DNSRecord", (), False),
    )


async def install(client: Client, *docs: dict[str, Any]) -> None:
    for doc in docs:
        await client.create(doc)
    names = {d["metadata"]["name"] for d in docs}

    async def established() -> bool:
        listed = await client.list(CRD)
        return names <= {c["metadata"]["name"] for c in listed.items if crd_established(c)}

    await wait_for(established, timeout=20)


def other_databases() -> dict[str, Any]:
    crd: dict[str, Any] = yaml.safe_load((CRDS / f"{PLATFORM}_databases.yaml").read_text())
    crd["metadata"] = {"name": f"databases.{OTHER}"}
    crd["spec"]["group"] = OTHER
    crd["spec"]["names"]["shortNames"] = ["db", "quota"]
    return crd


async def test_discovery_of_the_embedded_server_resolves_as_kubectl(kube_client: Client) -> None:
    platform = [
        yaml.safe_load((CRDS / f"{PLATFORM}_{plural}.yaml").read_text())
        for plural in ("databases", "jobs", "quotas")
    ]
    await install(kube_client, *platform, other_databases())
    served = await read_served(kube_client)
    assert served[0].group == "" and served[0].version == "v1"  # the core group first
    hpa = [s.version for s in served if s.resource == "horizontalpodautoscalers"]
    assert hpa[0] == "v2"  # the preferred version first
    by_name = {(s.group, s.resource): s for s in served}
    assert by_name[(PLATFORM, "databases")] == ServedResource(
        PLATFORM, "v1", "databases", "database", "Database", ("db",), True
    )
    assert by_name[("", "pods")].short_names == ("po",)
    assert all("/" not in s.resource for s in served)  # no subresources
    for text in ("db", "quota", "job", "databases.plat", "Pod", "ev", "hpa.autoscal"):
        group, version, plural, _ = KUBECTL[text]
        found = resolve_resource_arg(served, text)
        assert found is not None, text
        assert (found.served.group, found.served.version, found.served.resource) == (
            group,
            version,
            plural,
        ), text

    # the plugin's snapshot reads it too; a watched kind resolves from its short name
    state = await snapshot(kube_client)
    assert state.served == served
    assert resolve_kind(state, f"db.{PLATFORM}") == KindKey(PLATFORM, "Database")
    assert resolve_kind(state, "db") == KindKey(OTHER, "Database")  # a CRD too: watched
    assert resolve_kind(state, "quota") == KindKey(PLATFORM, "Quota")
    assert resolve_kind(state, "job") is None  # jobs.batch
    assert (await snapshot(kube_client, discovery=False)).served == ()
