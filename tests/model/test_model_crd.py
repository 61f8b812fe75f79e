"""Generated CRDs: structural, accepted by the schema engine, stable, and the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubewerk.cli import main
from kubewerk.model import ConversionWebhook, KubeModel, Resource, crd_for, crd_yaml, crds_for
from kubewerk.schema import validate_crd

from . import corpus_models, test_model_conversion, test_model_markers, test_model_resource

TESTS_DIR = Path(__file__).resolve().parent.parent

ALL_KINDS: list[type[Resource[Any, Any]]] = [
    corpus_models.ScaledObject,
    corpus_models.ExternalSecret,
    corpus_models.GitRepository,
    test_model_markers.Marked,
    test_model_markers.Template,
    test_model_resource.Gadget,
    test_model_resource.Policy,
    test_model_resource.Lock,
    test_model_resource.Gateway,
    test_model_conversion.AppV1,
]


def assert_structural(schema: Any, path: str = "") -> None:
    """Every node typed (or int-or-string / preserve-unknown), no $ref, no free unions."""
    assert isinstance(schema, dict), path
    assert "$ref" not in schema and "oneOf" not in schema and "allOf" not in schema, path
    if schema.get("x-kubernetes-int-or-string"):
        assert schema.get("anyOf") == [{"type": "integer"}, {"type": "string"}], path
        assert "type" not in schema, path
    else:
        assert "anyOf" not in schema, path
        assert "type" in schema or schema.get("x-kubernetes-preserve-unknown-fields") is True, path
    for name, sub in schema.get("properties", {}).items():
        assert_structural(sub, f"{path}.{name}")
    if "items" in schema:
        assert_structural(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        assert_structural(schema["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("kind", ALL_KINDS, ids=lambda k: k.__name__)
def test_generated_crds_are_structural_and_accepted(kind: type[Resource[Any, Any]]) -> None:
    crd = crd_for(kind)
    for version in crd["spec"]["versions"]:
        assert_structural(version["schema"]["openAPIV3Schema"])
    assert [e.message() for e in validate_crd(crd)] == []
    assert "x-python-names" not in crd_yaml(kind)


def test_yaml_is_stable_and_round_trips() -> None:
    text = crd_yaml(corpus_models.ExternalSecret)
    assert text == crd_yaml(corpus_models.ExternalSecret)
    assert yaml.safe_load(text) == crd_for(corpus_models.ExternalSecret)
    assert "&id" not in text and "*id" not in text  # no YAML anchors for shared sub-schemas
    assert text.startswith("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n")


def test_crds_for_groups_versions_by_kind() -> None:
    crds = crds_for(
        [test_model_conversion.AppV1, test_model_conversion.AppV1alpha1, test_model_resource.Gadget]
    )
    assert [c["metadata"]["name"] for c in crds] == [
        "apps.conv.test.kubewerk.dev",
        "gadgets.res.test.kubewerk.dev",
    ]
    assert [v["name"] for v in crds[0]["spec"]["versions"]] == ["v1", "v1alpha1"]


def test_cli_writes_one_file_per_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(TESTS_DIR)
    out = tmp_path / "crds"
    assert main(["gen", "crd", "model.corpus_models", "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "external-secrets.io_externalsecrets.yaml",
        "keda.sh_scaledobjects.yaml",
        "source.toolkit.fluxcd.io_gitrepositories.yaml",
    ]
    written = (out / "keda.sh_scaledobjects.yaml").read_text()
    assert written == crd_yaml(corpus_models.ScaledObject)
    capsys.readouterr()
    assert main(["gen", "crd", "model.corpus_models:GitRepository"]) == 0
    assert capsys.readouterr().out == crd_yaml(corpus_models.GitRepository)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_such_module:Thing", "cannot import module 'no_such_module'"),
        ("model.corpus_models:Nope", "has no attribute 'Nope'"),
        ("model.corpus_models:ScaleTarget", "is not a kubewerk Resource class"),
        ("model.corpus_models:DNS_SUBDOMAIN", "is not a kubewerk Resource class"),
        ("json", "defines no kubewerk resource classes"),
    ],
)
def test_cli_usage_errors(
    target: str, message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(TESTS_DIR)
    assert main(["gen", "crd", target]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kubewerk: error: ") and message in err
    assert "Traceback" not in err


def test_cli_output_is_byte_identical_across_processes(tmp_path: Path) -> None:
    """Hash randomisation and import order do not change a byte of the output."""
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "kubewerk.cli",
                "gen",
                "crd",
                "model.corpus_models",
                "-o",
                str(tmp_path / seed),
            ],
            cwd=TESTS_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append({p.name: p.read_bytes() for p in (tmp_path / seed).iterdir()})
    assert outputs[0] == outputs[1] and len(outputs[0]) == 3


def test_optional_old_self_rule_is_accepted_and_ratchets() -> None:
    from typing import Annotated

    from kubewerk.model import KubeModel, Rule

    class RatchetSpec(KubeModel):
        level: (
            Annotated[
                int, Rule("!oldSelf.hasValue() || self >= oldSelf.value()", optional_old_self=True)
            ]
            | None
        ) = None

    class Ratchet(Resource[RatchetSpec, None], group="crd.test.kubewerk.dev"):
        pass

    version = crd_for(Ratchet)["spec"]["versions"][0]
    level = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["level"]
    assert level["x-kubernetes-validations"][0]["optionalOldSelf"] is True
    assert validate_crd(crd_for(Ratchet)) == []
    low = Ratchet.from_dict(
        {"apiVersion": "crd.test.kubewerk.dev/v1", "kind": "Ratchet", "spec": {"level": 1}}
    )
    high = Ratchet.from_dict(
        {"apiVersion": "crd.test.kubewerk.dev/v1", "kind": "Ratchet", "spec": {"level": 5}}
    )
    assert high.api_errors(old=low) == [] and low.api_errors() == []
    assert [e.field for e in low.api_errors(old=high)] == ["spec.level"]


# ---------------------------------------------------------------- conversion of multi-version kinds

CONV_GROUP = "webhook.test.kubewerk.dev"


class PlainSpec(KubeModel):
    """Version one's words."""

    size: int | None = None
    description: str | None = None


class PlainSpecV2(KubeModel):
    """Other words, same shape."""

    size: int | None = None
    """How big."""
    description: str | None = None


class SameV1(Resource[PlainSpec, None], group=CONV_GROUP, kind="Same", storage=True):
    """Same shape as v2."""


class SameV2(Resource[PlainSpecV2, None], group=CONV_GROUP, kind="Same", version="v2"):
    """Described differently."""


class OldSpec(KubeModel):
    length: int | None = None


class MovedV1(Resource[PlainSpec, None], group=CONV_GROUP, kind="Moved", storage=True):
    """The current shape."""


class MovedV1alpha1(
    Resource[OldSpec, None], group=CONV_GROUP, kind="Moved", version="v1alpha1", served=False
):
    """A retired shape, no longer served."""


class SizeOnly(KubeModel):
    size: int | None = None


class DescribedV1(Resource[PlainSpec, None], group=CONV_GROUP, kind="Described", storage=True):
    """Has a field named description."""


class DescribedV2(Resource[SizeOnly, None], group=CONV_GROUP, kind="Described", version="v2"):
    """Has not."""


def test_versions_that_differ_only_in_descriptions_need_no_conversion() -> None:
    assert "conversion" not in crd_for(SameV1)["spec"]
    assert "conversion" not in crd_for(MovedV1)["spec"]  # the other version is not served
    # a field called description is part of the shape, not a description
    assert crd_for(DescribedV1)["spec"]["conversion"]["strategy"] == "Webhook"


def test_versions_with_different_schemas_convert_through_the_webhook_given() -> None:
    assert crd_for(test_model_conversion.AppV1)["spec"]["conversion"]["webhook"][
        "clientConfig"
    ] == {"service": {"name": "webhook-service", "namespace": "system", "path": "/convert"}}
    webhook = ConversionWebhook(namespace="ops", name="apps-webhook", path="/", port=8443)
    crd = crd_for(test_model_conversion.AppV1, webhook=webhook)
    assert crd["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {
                "service": {"name": "apps-webhook", "namespace": "ops", "path": "/", "port": 8443}
            },
            "conversionReviewVersions": ["v1"],
        },
    }
    assert [e.message() for e in validate_crd(crd)] == []
    assert "conversion" not in crd_for(SameV1, webhook=webhook)["spec"]
    [apps, gadgets] = crds_for(
        [test_model_conversion.AppV1, test_model_resource.Gadget], webhook=webhook
    )
    assert apps["spec"]["conversion"] == crd["spec"]["conversion"]
    assert "conversion" not in gadgets["spec"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ops/hook", ConversionWebhook("ops", "hook", "/convert", None)),
        ("ops/hook:9443", ConversionWebhook("ops", "hook", "/convert", 9443)),
        ("ops/hook/api/v1.convert/", ConversionWebhook("ops", "hook", "/api/v1.convert/", None)),
        ("ops/hook:1/", ConversionWebhook("ops", "hook", "/", 1)),
    ],
)
def test_conversion_webhook_from_text(text: str, expected: ConversionWebhook) -> None:
    assert ConversionWebhook.parse(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ops", "expected NAMESPACE/NAME"),
        ("/hook", "expected NAMESPACE/NAME"),
        ("ops/hook:http", "expected NAMESPACE/NAME"),
        ("ops/hook:0", "not between 1 and 65535"),
        ("ops/hook:70000", "not between 1 and 65535"),
        ("ops/hook/Convert", "DNS-1123 subdomain"),
        ("ops/hook/a//b", "DNS-1123 subdomain"),
    ],
)
def test_conversion_webhook_refuses_what_the_api_server_would(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ConversionWebhook.parse(text)
