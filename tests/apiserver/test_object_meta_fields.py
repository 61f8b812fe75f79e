"""One list of ObjectMeta's JSON fields (``core.meta.OBJECT_META_FIELDS``) serves the
typed decode, the structural pruner and the policy type checker; the ObjectMeta schema the
server publishes names exactly those fields."""

from __future__ import annotations

from kubewerk.apiserver.openapi import OBJECT_META_SCHEMA
from kubewerk.core.meta import OBJECT_META_FIELDS


def test_the_published_object_meta_schema_has_exactly_the_fields() -> None:
    assert set(OBJECT_META_SCHEMA["properties"]) == OBJECT_META_FIELDS
