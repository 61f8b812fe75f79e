"""Versions of one kind: the multi-version CRD and hub-and-spoke conversion."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
import pytest
from pydantic import Field

from kubewerk.model import (
    ConversionError,
    KubeModel,
    ModelDefinitionError,
    Resource,
    convert,
    convert_dict,
    converter,
    crd_for,
)

GROUP = "conv.test.kubewerk.dev"
LOST = "conv.test.kubewerk.dev/v1-fields"


class SpecV1alpha1(KubeModel):
    """The first cut: a single image string."""

    image: str
    replicas: int | None = None


class SpecV1beta1(KubeModel):
    repository: str
    tag: str = "latest"
    replicas: int | None = None


class ImageRef(KubeModel):
    repository: str
    tag: str = "latest"


class SpecV1(KubeModel):
    image: ImageRef
    replicas: Annotated[int, Field(ge=0)] | None = None
    paused: bool | None = None  # new in v1: older versions keep it in an annotation


class StatusV1(KubeModel):
    ready: bool | None = None


class AppV1alpha1(
    Resource[SpecV1alpha1, StatusV1],
    group=GROUP,
    version="v1alpha1",
    deprecated=True,
    deprecation_warning="conv.test.kubewerk.dev/v1alpha1 App is deprecated",
):
    """App, first version."""


class AppV1beta1(Resource[SpecV1beta1, StatusV1], group=GROUP, version="v1beta1", served=True):
    """App, second version."""


class AppV1(Resource[SpecV1, StatusV1], group=GROUP, version="v1", storage=True):
    """App, the storage version."""


def _split(image: str) -> tuple[str, str]:
    repository, _, tag = image.rpartition(":")
    return (repository, tag) if repository else (image, "latest")


def _keep_lost(src: AppV1) -> dict[str, str] | None:
    annotations = dict(src.metadata.annotations or {})
    if src.spec.paused is not None:
        annotations[LOST] = orjson.dumps({"paused": src.spec.paused}).decode()
    return annotations or None


def _restore_lost(
    annotations: dict[str, str] | None,
) -> tuple[dict[str, Any], dict[str, str] | None]:
    rest = dict(annotations or {})
    lost = orjson.loads(rest.pop(LOST)) if LOST in rest else {}
    return lost, (rest or None)


@converter
def alpha_to_v1(src: AppV1alpha1) -> AppV1:
    repository, tag = _split(src.spec.image)
    lost, annotations = _restore_lost(src.metadata.annotations)
    spec = SpecV1(image=ImageRef(repository=repository, tag=tag), **lost)
    if "replicas" in src.spec.model_fields_set:
        spec.replicas = src.spec.replicas
        spec.model_fields_set.add("replicas")
    meta = src.metadata.model_copy()
    meta.annotations = annotations
    return AppV1(metadata=meta, spec=spec, status=src.status)


@converter
def v1_to_alpha(src: AppV1) -> AppV1alpha1:
    spec = SpecV1alpha1(image=f"{src.spec.image.repository}:{src.spec.image.tag}")
    if "replicas" in src.spec.model_fields_set:
        spec.replicas = src.spec.replicas
        spec.model_fields_set.add("replicas")
    meta = src.metadata.model_copy()
    meta.annotations = _keep_lost(src)
    return AppV1alpha1(metadata=meta, spec=spec, status=src.status)


@converter
def beta_to_v1(src: AppV1beta1) -> AppV1:
    return AppV1(
        spec=SpecV1(
            image=ImageRef(repository=src.spec.repository, tag=src.spec.tag),
            replicas=src.spec.replicas,
        ),
        status=src.status,
    )


@converter
def v1_to_beta(src: AppV1) -> AppV1beta1:
    return AppV1beta1(
        spec=SpecV1beta1(
            repository=src.spec.image.repository, tag=src.spec.image.tag, replicas=src.spec.replicas
        ),
        status=src.status,
    )


def alpha_obj() -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "App",
        "metadata": {"name": "web", "namespace": "prod", "uid": "u-1", "labels": {"tier": "front"}},
        "spec": {"image": "nginx:1.27", "replicas": 3},
        "status": {"ready": True},
    }


def test_crd_lists_every_version_in_priority_order() -> None:
    crd = crd_for(AppV1alpha1)
    versions = crd["spec"]["versions"]
    assert [v["name"] for v in versions] == ["v1", "v1beta1", "v1alpha1"]
    assert [v["storage"] for v in versions] == [True, False, False]
    assert all(v["served"] for v in versions)
    assert versions[2]["deprecated"] is True
    assert versions[2]["deprecationWarning"] == "conv.test.kubewerk.dev/v1alpha1 App is deprecated"
    assert "deprecated" not in versions[0]
    assert (
        versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["image"][
            "type"
        ]
        == "object"
    )
    assert (
        versions[2]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["image"][
            "type"
        ]
        == "string"
    )
    assert crd == crd_for(AppV1, AppV1beta1, AppV1alpha1)


def test_spoke_to_hub_to_spoke_is_lossless() -> None:
    alpha = AppV1alpha1.from_dict(alpha_obj())
    v1 = convert(alpha, "v1")
    assert isinstance(v1, AppV1)
    assert v1.spec.image == ImageRef(repository="nginx", tag="1.27")
    assert v1.metadata.name == "web" and v1.metadata.labels == {"tier": "front"}
    assert v1.to_dict()["apiVersion"] == f"{GROUP}/v1"
    back = convert(v1, AppV1alpha1)
    assert back.to_dict() == alpha_obj()


def test_fields_only_the_hub_has_survive_via_annotations() -> None:
    v1 = AppV1.from_dict(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "App",
            "metadata": {"name": "web"},
            "spec": {"image": {"repository": "nginx", "tag": "1.27"}, "paused": True},
        }
    )
    alpha = convert(v1, f"{GROUP}/v1alpha1")
    assert LOST in (alpha.metadata.annotations or {})
    again = convert(alpha, AppV1)
    assert again.to_dict() == v1.to_dict()


def test_spoke_to_spoke_goes_through_the_hub() -> None:
    beta = convert(AppV1alpha1.from_dict(alpha_obj()), "v1beta1")
    assert isinstance(beta, AppV1beta1)
    assert (beta.spec.repository, beta.spec.tag, beta.spec.replicas) == ("nginx", "1.27", 3)
    # metadata is carried over by convert() even though the converter did not set it
    assert beta.metadata.uid == "u-1" and beta.metadata.namespace == "prod"


def test_convert_dict_for_webhooks() -> None:
    out = convert_dict(alpha_obj(), f"{GROUP}/v1beta1")
    assert out["apiVersion"] == f"{GROUP}/v1beta1"
    assert out["spec"] == {"repository": "nginx", "tag": "1.27", "replicas": 3}
    assert convert_dict(out, f"{GROUP}/v1alpha1") == alpha_obj()


def test_same_version_is_a_copy() -> None:
    alpha = AppV1alpha1.from_dict(alpha_obj())
    copied = convert(alpha, "v1alpha1")
    assert copied == alpha and copied is not alpha


def test_conversion_errors() -> None:
    alpha = AppV1alpha1.from_dict(alpha_obj())
    with pytest.raises(ConversionError, match="no version 'v2'"):
        convert(alpha, "v2")
    with pytest.raises(ConversionError, match="group"):
        convert(alpha, "other.example.com/v1")

    class Lonely(Resource[SpecV1alpha1, None], group=GROUP, kind="Lonely", version="v1"):
        pass

    class LonelyV2(
        Resource[SpecV1alpha1, None], group=GROUP, kind="Lonely", version="v2", storage=True
    ):
        pass

    with pytest.raises(ConversionError, match="no converter registered from Lonely"):
        convert(Lonely(spec=SpecV1alpha1(image="x")), "v2")


def test_converter_may_not_change_identity() -> None:
    class Thing(Resource[SpecV1alpha1, None], group=GROUP, version="v1", storage=True):
        pass

    class ThingV2(Resource[SpecV1alpha1, None], group=GROUP, kind="Thing", version="v2"):
        pass

    @converter
    def rename(src: Thing) -> ThingV2:
        return ThingV2(metadata={"name": "other"}, spec=src.spec)  # type: ignore[arg-type]

    with pytest.raises(ConversionError, match=r"changed metadata.name"):
        convert(Thing(metadata={"name": "a"}, spec=SpecV1alpha1(image="x")), ThingV2)  # type: ignore[arg-type]


def test_converter_signatures_are_checked() -> None:
    with pytest.raises(TypeError, match="typed"):
        converter(lambda src: src)

    def cross(src: AppV1) -> Resource[SpecV1, StatusV1]:
        return src

    with pytest.raises(TypeError, match="not a concrete resource class"):
        converter(cross)


def test_multi_version_crd_needs_one_storage_version() -> None:
    class Dup(Resource[SpecV1alpha1, None], group=GROUP, version="v1"):
        pass

    class DupV2(Resource[SpecV1alpha1, None], group=GROUP, kind="Dup", version="v2"):
        pass

    with pytest.raises(ModelDefinitionError, match="exactly one of the versions"):
        crd_for(Dup)

    class DupV3(
        Resource[SpecV1alpha1, None],
        group=GROUP,
        kind="Dup",
        version="v3",
        plural="dupz",
        storage=True,
    ):
        pass

    with pytest.raises(ModelDefinitionError, match="plural 'dups' differs"):
        crd_for(Dup, DupV2, DupV3)


def test_labels_and_annotations_assigned_after_building_survive() -> None:
    # a converter that builds the target without metadata= and then assigns to
    # out.metadata's labels/annotations (the default metadata object) keeps them;
    # a change to anything else that way is still refused
    class Late(Resource[SpecV1alpha1, None], group=GROUP, version="v1", storage=True):
        pass

    class LateV2(Resource[SpecV1alpha1, None], group=GROUP, kind="Late", version="v2"):
        pass

    @converter
    def up(src: LateV2) -> Late:
        out = Late(spec=src.spec)
        out.metadata.annotations = {**(src.metadata.annotations or {}), "seen": "v2"}
        out.metadata.labels = {"converted": "yes"}
        return out

    @converter
    def down(src: Late) -> LateV2:
        out = LateV2(spec=src.spec)
        out.metadata.name = "renamed"
        return out

    src = LateV2.from_dict(
        {
            "apiVersion": f"{GROUP}/v2",
            "kind": "Late",
            "metadata": {"name": "a", "uid": "u-9", "annotations": {"keep": "1"}},
            "spec": {"image": "x"},
        }
    )
    got = convert(src, Late).to_dict()["metadata"]
    assert got == {
        "name": "a",
        "uid": "u-9",
        "annotations": {"keep": "1", "seen": "v2"},
        "labels": {"converted": "yes"},
    }
    with pytest.raises(ConversionError, match=r"changed metadata.name"):
        convert(Late.from_dict({"metadata": {"name": "a"}, "spec": {"image": "x"}}), LateV2)
