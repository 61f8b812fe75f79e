"""core.gvk: apiVersion parsing as ``schema.ParseGroupVersion``, names, object keys."""

from __future__ import annotations

import pytest

from kubewerk.core.gvk import (
    GroupVersion,
    GroupVersionKind,
    GroupVersionResource,
    format_api_version,
    join_key,
    object_key,
    parse_api_version,
    qualified,
    split_api_version,
    split_key,
)


@pytest.mark.parametrize(
    ("text", "group", "version"),
    [
        ("v1", "", "v1"),
        ("apps/v1", "apps", "v1"),
        ("example.com/v1alpha1", "example.com", "v1alpha1"),
        ("", "", ""),
        ("/", "", ""),
        ("/v1", "", "v1"),
        ("apps/", "apps", ""),
    ],
)
def test_parse_api_version_as_parse_group_version(text: str, group: str, version: str) -> None:
    assert parse_api_version(text) == GroupVersion(group, version)
    assert split_api_version(text) == (group, version)


@pytest.mark.parametrize("text", ["a/b/c", "//", "apps/v1/", "/a/b"])
def test_more_than_one_slash_is_refused(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_api_version(text)
    assert str(info.value) == f"unexpected GroupVersion string: {text}"
    # FromAPIVersionAndKind's reading: the empty group version
    assert split_api_version(text) == GroupVersion("", "")


def test_format_and_qualified() -> None:
    assert format_api_version("", "v1") == "v1"
    assert format_api_version("apps", "v1") == "apps/v1"
    assert qualified("configmaps", "") == "configmaps"
    assert qualified("widgets", "example.com") == "widgets.example.com"
    for text in ("v1", "apps/v1"):
        assert parse_api_version(text).api_version == text


def test_name_tuples() -> None:
    gvk = GroupVersionKind("apps", "v1", "Deployment")
    assert gvk == ("apps", "v1", "Deployment")  # keys tables built with plain tuples
    assert gvk.api_version == "apps/v1"
    assert gvk.group_version == GroupVersion("apps", "v1")
    gvr = GroupVersionResource("", "v1", "configmaps")
    assert gvr.api_version == "v1"
    assert gvr.group_resource == "configmaps"
    assert (
        GroupVersionResource("example.com", "v1", "widgets").group_resource == "widgets.example.com"
    )


def test_object_keys() -> None:
    assert object_key({"metadata": {"namespace": "ns", "name": "a"}}) == "ns/a"
    assert object_key({"metadata": {"name": "a"}}) == "a"
    assert object_key({"metadata": {"namespace": "", "name": "a"}}) == "a"
    assert object_key({}) == ""
    assert join_key("ns", "a") == "ns/a"
    assert join_key(None, "a") == "a"
    assert join_key("", "a") == "a"
    assert split_key("ns/a") == ("ns", "a")
    assert split_key("a") == (None, "a")
    for key in ("ns/a", "a"):
        assert join_key(*split_key(key)) == key


def test_old_import_paths() -> None:
    from kubewerk.core.errors import qualified as errors_qualified
    from kubewerk.runtime import object_key as runtime_object_key
    from kubewerk.runtime import split_key as runtime_split_key

    assert errors_qualified is qualified
    assert runtime_object_key is object_key
    assert runtime_split_key is split_key
