"""docs/webhook.md stays true: its example module is run as written (after the
``kubewerk webhook certs`` command the page gives), its handlers answer what the
comments say on the paths they name, and the command synopses list the real options."""

from __future__ import annotations

import base64
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from kubewerk.cli import build_parser, main

from ..webhook.conftest import review
from .pages import fenced, page, section, subparser, synopsis_mismatch

DOC = page("webhook")
MODULE = "dbhook"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The page's first Python block, saved as dbhook.py beside the certificates made by
    the command its first comment gives, and imported as a newcomer would."""
    [first, *_] = [b for b in fenced(DOC) if b.lang == "python"]
    assert first.text.startswith(f"# {MODULE}.py"), first.text
    work = tmp_path_factory.mktemp("webhook-docs")
    (work / f"{MODULE}.py").write_text(first.text, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        mp.syspath_prepend(str(work))
        comment = " ".join(line.lstrip("# ") for line in first.text.splitlines()[:3])
        argv = re.findall(r"`kubewerk (webhook certs [^`]*)`", comment)[0].split()
        assert main(argv) == 0
        importlib.invalidate_caches()
        try:
            yield importlib.import_module(MODULE)
        finally:
            sys.modules.pop(MODULE, None)


def _request(obj: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "7f0e4b1a-0000-4000-8000-000000000001",
            "kind": {"group": "example.com", "version": "v1", "kind": "Database"},
            "resource": {"group": "example.com", "version": "v1", "resource": "databases"},
            "operation": "CREATE" if old is None else "UPDATE",
            "name": "db",
            "namespace": "default",
            "userInfo": {"username": "alice"},
            "object": obj,
            "oldObject": old,
        },
    }


def _db(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Database",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"engine": "postgres", **spec},
    }


def _patch(response: dict[str, Any]) -> Any:
    assert response["patchType"] == "JSONPatch"
    return orjson.loads(base64.b64decode(response["patch"]))


def test_the_example_serves_the_paths_its_comments_name(example: ModuleType) -> None:
    assert example.server.port == 9443
    source = Path(example.__file__ or "").read_text(encoding="utf-8")
    named = set(re.findall(r"# path (/\S+)", source))
    assert named == {"/validate-example-com-v1-database", "/mutate-example-com-v1-database"}
    assert set(example.app.paths) == named | {"/label-database", "/convert"}


async def test_the_validating_handler_warns_and_denies_as_written(example: ModuleType) -> None:
    app = example.app
    response = await review(app, "/validate-example-com-v1-database", _request(_db()))
    assert response["allowed"] is True and response["warnings"] == ["no backup configured"]
    response = await review(
        app, "/validate-example-com-v1-database", _request(_db(engine="mysql"), _db())
    )
    assert response["allowed"] is False
    assert response["status"]["code"] == 422 and response["status"]["reason"] == "Invalid"
    assert response["status"]["message"] == "spec.engine is immutable"


async def test_the_mutating_handler_is_answered_as_a_json_patch(example: ModuleType) -> None:
    response = await review(example.app, "/mutate-example-com-v1-database", _request(_db()))
    assert _patch(response) == [{"op": "add", "path": "/spec/replicas", "value": 1}]


async def test_the_patching_handler_sends_only_what_it_states(example: ModuleType) -> None:
    response = await review(example.app, "/label-database", _request(_db()))
    assert _patch(response) == [
        {
            "op": "add",
            "path": "/metadata/labels",
            "value": {"app.kubernetes.io/managed-by": "kubewerk"},
        }
    ]


def test_the_webhook_certs_synopsis_lists_every_option() -> None:
    [synopsis] = [b.text for b in fenced(section(DOC, "### `kubewerk webhook certs`"))]
    assert synopsis_mismatch(synopsis, subparser(build_parser(), "webhook", "certs")) == []


def test_the_webhook_serve_synopsis_lists_every_option() -> None:
    text = section(DOC, "## Running")
    start = text.index("`kubewerk webhook serve")
    synopsis = text[start : text.index("imports `APP`", start)]
    assert synopsis_mismatch(synopsis, subparser(build_parser(), "webhook", "serve")) == []


def test_webhook_certs_writes_what_the_page_says(
    example: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "webhook-certs"
    argv = ["webhook", "certs", "--service", "db-webhook", "--namespace", "ops", "--out", str(out)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
    assert {p.stat().st_mode & 0o777 for p in out.iterdir()} == {0o600}
    assert out.stat().st_mode & 0o777 == 0o700  # a new directory
    assert base64.b64decode(captured.out.strip()) == (out / "ca.crt").read_bytes()
    assert "tls.key" in captured.err


@pytest.mark.parametrize("missing", ["cert", "key", "client-ca"])
def test_serve_with_a_missing_file_is_one_error_line_naming_it(
    example: ModuleType, missing: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """docs/webhook.md: a file that cannot be loaded fails the start naming the files,
    and ``kubewerk webhook serve`` says so in one ``kubewerk: error:`` line (exit 2)."""
    files = {"cert": "certs/tls.crt", "key": "certs/tls.key", "client-ca": "certs/ca.crt"}
    files[missing] = str(tmp_path / "absent.pem")
    argv = ["webhook", "serve", f"{MODULE}:app", "--host", "127.0.0.1", "--port", "0"]
    for flag, path in files.items():
        argv += [f"--{flag}", path]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("kubewerk: error: ") and err.count("\n") == 1, err
    assert str(tmp_path / "absent.pem") in err and "[Errno" not in err, err
