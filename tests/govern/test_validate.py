"""``kubewerk validate``: offline validation with the schema engine, as the API server does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .helpers import crd, run_cli


def widget_crd() -> dict[str, Any]:
    data = crd(
        {
            "replicas": {"type": "integer", "maximum": 10, "default": 1},
            "mode": {"type": "string", "enum": ["fast", "safe"]},
            "owner": {
                "type": "string",
                "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "owner is immutable"}
                ],
            },
        },
        name="widgets.example.com",
    )
    return data


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


def write(path: Path, *docs: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return str(path)


def test_valid_and_invalid_objects(tmp_path: Path) -> None:
    crd_file = write(tmp_path / "crd.yaml", widget_crd())
    manifests = write(
        tmp_path / "m.yaml",
        widget("ok", mode="fast"),
        widget("bad", replicas=20, mode="slow", colour="red"),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
        {"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w2"}},
    )
    code, out, _ = run_cli(["validate", "--crd", crd_file, manifests, "--format", "json"])
    assert code == 1
    doc = json.loads(out)
    by = {(f["rule"], f["crd"]): f for f in doc["findings"]}
    invalid = by[("invalid", "Widget/bad")]
    assert invalid["message"] == (
        'Widget.example.com "bad" is invalid: [spec.replicas: Invalid value: 20: spec.replicas in '
        'body should be less than or equal to 10, spec.mode: Unsupported value: "slow": supported '
        'values: "fast", "safe", <nil>: Invalid value: "null": some validation rules were not '
        "checked because the object was invalid; correct the existing errors to complete "
        "validation]"
    )
    text = Path(manifests).read_text().splitlines()
    assert text[invalid["line"] - 1].strip().startswith("replicas:")
    assert by[("unknown-field", "Widget/bad")]["message"] == 'unknown field "spec.colour"'
    assert by[("no-match", "Widget/w2")]["severity"] == "error"
    assert by[("no-match", "ConfigMap/c")]["severity"] == "info"
    assert ("invalid", "Widget/ok") not in by
    assert doc["summary"]["objects"] == 4


def test_update_runs_transition_rules(tmp_path: Path) -> None:
    crd_file = write(tmp_path / "crd.yaml", widget_crd())
    old = write(tmp_path / "old.yaml", widget("w", owner="alice"))
    new = write(tmp_path / "new.yaml", widget("w", owner="bob"))
    code, out, _ = run_cli(["validate", "--crd", crd_file, "--old", old, new])
    assert code == 1
    assert (
        'Widget.example.com "w" is invalid: spec.owner: Invalid value: "string": owner is immutable'
        in out
    )
    # as a create, the transition rule does not run
    assert run_cli(["validate", "--crd", crd_file, new])[0] == 0


def test_validate_usage_errors(tmp_path: Path) -> None:
    manifests = write(tmp_path / "m.yaml", widget("w"))
    code, _, err = run_cli(["validate", "--crd", manifests, manifests])
    assert code == 2 and "no CustomResourceDefinition found" in err
