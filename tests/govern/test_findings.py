"""Locations in findings: JSON Pointers and Kubernetes field paths."""

from __future__ import annotations

from kubewerk.govern.findings import field_to_location, pointer


def test_pointer_escapes_tokens_as_rfc_6901_says() -> None:
    assert pointer(()) == ""
    assert pointer(("spec", "versions", 0, "schema")) == "/spec/versions/0/schema"
    assert pointer(("metadata", "annotations", "a/b~c")) == "/metadata/annotations/a~1b~0c"
    assert pointer(("~1",)) == "/~01"  # "~" first, so "~1" stays a literal tilde-one


def test_field_path_to_location() -> None:
    assert field_to_location("") == ()
    assert field_to_location("spec.versions[0].schema.openAPIV3Schema.properties[spec]") == (
        "spec",
        "versions",
        0,
        "schema",
        "openAPIV3Schema",
        "properties",
        "spec",
    )
    assert field_to_location("metadata.labels[app.kubernetes.io/name]") == (
        "metadata",
        "labels",
        "app.kubernetes.io/name",
    )
