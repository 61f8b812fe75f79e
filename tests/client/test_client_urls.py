"""Request URLs: paths and queries reach the embedded server exactly as meant."""

from __future__ import annotations

import pytest

from kubewerk.client import CONFIGMAP, Client, NotFound


async def test_selectors_with_reserved_characters(client: Client) -> None:
    # selectors with spaces, parentheses, commas and "!" go out percent-encoded
    for name, tier in (("a", "web"), ("b", "db"), ("c", "cache")):
        await client.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"tier": tier}},
            }
        )
    got = await client.list(CONFIGMAP, "default", label_selector="tier in (web, db),tier!=db")
    assert [o["metadata"]["name"] for o in got.items] == ["a"]
    got = await client.list(
        CONFIGMAP, "default", field_selector="metadata.name!=a", label_selector="tier notin (web)"
    )
    assert sorted(o["metadata"]["name"] for o in got.items) == ["b", "c"]


async def test_names_reach_the_server_as_sent(client: Client) -> None:
    # ":" (as RBAC names carry) is a plain path character; a space and "%" are percent-encoded
    for name in ("system:x", "no such", "50%", "a+b"):
        with pytest.raises(NotFound) as err:
            await client.get(CONFIGMAP, name, "default")
        assert err.value.message == f'configmaps "{name}" not found'
