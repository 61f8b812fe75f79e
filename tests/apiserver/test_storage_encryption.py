"""Secrets (and listed resources) encrypted at rest in the SQLite store.

An EncryptionConfiguration as kube-apiserver reads it: aesgcm, secretbox and identity
providers, key rotation, kube's prefixes and error messages; the database file holds no
plaintext of an encrypted resource; the API reads back what was written, across restarts.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.storage import (
    EncryptionConfigError,
    SQLiteStore,
    StoreOpenError,
    UndecryptableValue,
    load_encryption_config,
    open_store,
)
from kubewerk.apiserver.storage.encryption import parse_encryption_config
from tests.apiserver.helpers import Api

SECRET_KEY = "/core/secrets/default/db-password"
CM_KEY = "/core/configmaps/default/settings"
PLAINTEXT = "s3cr3t-plaintext-marker"
K1 = base64.b64encode(b"k" * 32).decode()
K2 = base64.b64encode(b"K" * 32).decode()
K16 = base64.b64encode(b"x" * 16).decode()


def config(*providers: dict[str, Any], resources: tuple[str, ...] = ("secrets",)) -> dict[str, Any]:
    return {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "EncryptionConfiguration",
        "resources": [{"resources": list(resources), "providers": list(providers)}],
    }


def aesgcm(*keys: tuple[str, str]) -> dict[str, Any]:
    return {"aesgcm": {"keys": [{"name": n, "secret": s} for n, s in keys]}}


def secretbox(*keys: tuple[str, str]) -> dict[str, Any]:
    return {"secretbox": {"keys": [{"name": n, "secret": s} for n, s in keys]}}


IDENTITY: dict[str, Any] = {"identity": {}}


def secret(value: str = PLAINTEXT) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "db-password", "namespace": "default"},
        "data": {"password": base64.b64encode(value.encode()).decode()},
        "stringData": {"note": value},
    }


def configmap() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"},
        "data": {"note": "configmap-plaintext-marker"},
    }


def open_db(path: Path, cfg: dict[str, Any] | None) -> SQLiteStore:
    enc = None if cfg is None else parse_encryption_config(cfg)
    return SQLiteStore(path, encryption=enc)


def file_bytes(path: Path) -> bytes:
    """The database file and its WAL, as they are on disk."""
    out = b""
    for name in (path, Path(f"{path}-wal")):
        if name.exists():
            out += name.read_bytes()
    return out


def raw_values(path: Path, key: str) -> list[bytes]:
    """Every stored version of ``key``, as stored (read with a second connection)."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return [
            bytes(r[0])
            for r in conn.execute("SELECT value FROM log WHERE key = ? ORDER BY rev", (key,))
        ]
    finally:
        conn.close()


# -- configuration -------------------------------------------------------------------


def test_config_file_yaml(tmp_path: Path) -> None:
    f = tmp_path / "enc.yaml"
    f.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\n"
        "kind: EncryptionConfiguration\n"
        "resources:\n"
        "  - resources: [secrets, configmaps]\n"
        "    providers:\n"
        f"      - aesgcm: {{keys: [{{name: key1, secret: {K1}}}]}}\n"
        "      - identity: {}\n"
        "  - resources: ['*.example.com']\n"
        f"    providers: [{{secretbox: {{keys: [{{name: sb, secret: {K2}}}]}}}}]\n"
    )
    cfg = load_encryption_config(f)
    s = cfg.sealer_for(SECRET_KEY)
    assert s is not None and s.write_prefix == b"k8s:enc:aesgcm:v1:key1:"
    assert cfg.sealer_for(CM_KEY) is s or cfg.sealer_for(CM_KEY) is not None
    crd = cfg.sealer_for("/example.com/widgets/ns/w")
    assert crd is not None and crd.write_prefix == b"k8s:enc:secretbox:v1:sb:"
    assert cfg.sealer_for("/core/pods/default/p") is None
    assert cfg.sealer_for("/apps/deployments/default/d") is None


def test_resource_matching_exact_then_group_then_all() -> None:
    doc = {
        "apiVersion": "apiserver.config.k8s.io/v1",
        "kind": "EncryptionConfiguration",
        "resources": [
            {"resources": ["deployments.apps"], "providers": [aesgcm(("exact", K1))]},
            {"resources": ["*.apps"], "providers": [aesgcm(("group", K1))]},
            {"resources": ["*."], "providers": [aesgcm(("core", K1))]},
            {"resources": ["*.*"], "providers": [aesgcm(("all", K1))]},
        ],
    }
    cfg = parse_encryption_config(doc)

    def prefix(key: str) -> bytes:
        s = cfg.sealer_for(key)
        assert s is not None
        return s.write_prefix

    assert prefix("/apps/deployments/ns/x") == b"k8s:enc:aesgcm:v1:exact:"
    assert prefix("/apps/statefulsets/ns/x") == b"k8s:enc:aesgcm:v1:group:"
    assert prefix("/core/secrets/ns/x") == b"k8s:enc:aesgcm:v1:core:"
    assert prefix("/example.com/widgets/ns/x") == b"k8s:enc:aesgcm:v1:all:"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            config(aesgcm(("k", base64.b64encode(b"short").decode()))),
            'resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": '
            "secret is not of the expected length, got 5, expected one of [16 24 32]",
        ),
        (
            config(secretbox(("k", K16))),
            'resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": '
            "secret is not of the expected length, got 16, expected one of [32]",
        ),
        (
            config(aesgcm(("k", "not base64!"))),
            'resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": '
            "secrets must be base64 encoded",
        ),
        (
            config(aesgcm(("", K1))),
            "resources[0].providers[0].aesgcm.keys[0].name: Required value: "
            "name is a mandatory field for a key",
        ),
        (
            config({"aescbc": {"keys": [{"name": "k", "secret": K1}]}}),
            "resources[0].providers[0].aescbc: Forbidden: the aescbc provider is not supported",
        ),
        (
            config({"kms": {"name": "x", "endpoint": "unix:///tmp/kms.sock"}}),
            "resources[0].providers[0].kms: Forbidden: the kms provider is not supported",
        ),
        (
            config({"aesgcm": {"keys": [{"name": "k", "secret": K1}]}, "identity": {}}),
            "more than one provider specified in a single element, should split into "
            "different list elements",
        ),
        (
            config({}),
            "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, "
            "Secretbox, Identity",
        ),
        (
            config(IDENTITY, resources=("secrets", "*.")),
            "using overlapping resources such as 'secrets' and '*.' in the same resource list "
            "is not allowed as they will be masked",
        ),
        (
            config(IDENTITY, resources=("secrets", "secrets")),
            "the same resource cannot be specified multiple times",
        ),
        (
            config(IDENTITY, resources=("*",)),
            "use '*.' to encrypt all the resources from core API group or *.* to encrypt all "
            "resources",
        ),
        (config(IDENTITY, resources=("Secrets",)), "should not contain capital letters"),
        (
            config(IDENTITY, resources=("secrets.*",)),
            "encrypting the same resource across groups is not supported",
        ),
        (
            config(IDENTITY, resources=("events.events.k8s.io",)),
            "objects are stored using the 'events' API group",
        ),
        (config(), "resources[0].providers: Required value"),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, "expected kind EncryptionConfiguration"),
    ],
)
def test_config_refused_with_kube_messages(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(EncryptionConfigError) as err:
        parse_encryption_config(doc, source="enc.yaml")
    assert message in str(err.value)
    assert "enc.yaml" in str(err.value)
    assert K1 not in str(err.value)


def test_open_store_refuses_a_bad_file_before_opening(tmp_path: Path) -> None:
    bad = tmp_path / "enc.yaml"
    bad.write_text("kind: [unclosed\n")
    db = tmp_path / "db.sqlite"
    with pytest.raises(ValueError, match="error while parsing encryption provider configuration"):
        open_store(f"sqlite:{db}", encryption_config=bad)
    assert not db.exists()
    with pytest.raises(ValueError, match="cannot read encryption provider config"):
        open_store("memory", encryption_config=tmp_path / "missing.yaml")


# -- at rest -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "prefix"),
    [
        (aesgcm(("key1", K1)), b"k8s:enc:aesgcm:v1:key1:"),
        (aesgcm(("short", K16)), b"k8s:enc:aesgcm:v1:short:"),
        (secretbox(("box", K2)), b"k8s:enc:secretbox:v1:box:"),
    ],
)
def test_secret_encrypted_at_rest_and_read_back(
    tmp_path: Path, provider: dict[str, Any], prefix: bytes
) -> None:
    db = tmp_path / "db.sqlite"
    store = open_db(db, config(provider))
    created = store.create(SECRET_KEY, secret())
    store.create(CM_KEY, configmap())
    updated = store.update(SECRET_KEY, {**secret("second-plaintext-marker")})
    assert store.get(SECRET_KEY) == updated
    assert store.list("/core/secrets/")[0] == [(SECRET_KEY, updated)]
    events = store.events_since("/core/secrets/", 0)
    assert [e.obj for e in events] == [created, updated]
    assert events[1].prev == created
    # on disk, in the WAL before a checkpoint: no plaintext of the Secret, the ConfigMap
    # (not listed) in plaintext
    on_disk = file_bytes(db)
    assert PLAINTEXT.encode() not in on_disk
    assert base64.b64encode(PLAINTEXT.encode()) not in on_disk
    assert b"second-plaintext-marker" not in on_disk
    assert b"configmap-plaintext-marker" in on_disk
    store.close()
    on_disk = file_bytes(db)
    assert PLAINTEXT.encode() not in on_disk and b'db-password"' not in on_disk
    values = raw_values(db, SECRET_KEY)
    assert len(values) == 2 and all(v.startswith(prefix) for v in values)
    # restart: the same configuration reads everything back
    again = open_db(db, config(provider))
    assert again.get(SECRET_KEY) == updated
    assert [e.obj for e in again.events_since("/core/secrets/", 0)] == [created, updated]
    deleted = again.delete(SECRET_KEY)
    assert deleted["data"] == updated["data"]
    again.close()
    assert [v[: len(prefix)] for v in raw_values(db, SECRET_KEY)] == [prefix] * 3


def test_two_writes_of_the_same_value_differ_on_disk(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    store = open_db(db, config(aesgcm(("key1", K1))))
    store.create(SECRET_KEY, secret())
    store.update(SECRET_KEY, secret())
    store.close()
    a, b = raw_values(db, SECRET_KEY)
    assert a[:40] != b[:40]  # a fresh nonce per write


def test_value_copied_to_another_key_does_not_open(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    cfg = parse_encryption_config(config(aesgcm(("key1", K1))))
    store = SQLiteStore(db, encryption=cfg)
    store.create(SECRET_KEY, secret())
    store.close()
    (value,) = raw_values(db, SECRET_KEY)
    sealer = cfg.sealer_for(SECRET_KEY)
    assert sealer is not None
    assert sealer.open(SECRET_KEY, value)[0].startswith(b"{")
    other = "/core/secrets/default/other"
    with pytest.raises(UndecryptableValue) as err:
        sealer.open(other, value)
    assert str(err.value) == (
        f'unable to transform key "{other}": cipher: message authentication failed'
    )


def test_rotation_add_first_restart_remove_old(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    store = open_db(db, config(aesgcm(("key1", K1))))
    first = store.create(SECRET_KEY, secret())
    second = store.update(SECRET_KEY, secret("rotated-plaintext-marker"))
    store.close()
    # 1. the new key is added second: nothing changes on disk, everything reads
    store = open_db(db, config(aesgcm(("key1", K1), ("key2", K2))))
    assert store.get(SECRET_KEY) == second
    store.close()
    assert all(v.startswith(b"k8s:enc:aesgcm:v1:key1:") for v in raw_values(db, SECRET_KEY))
    # 2. the new key first: every version is rewritten with it at open
    store = open_db(db, config(aesgcm(("key2", K2), ("key1", K1))))
    assert store.rewrite_stale() == 0  # done at open already
    third = store.update(SECRET_KEY, secret("third-plaintext-marker"))
    store.close()
    assert all(v.startswith(b"k8s:enc:aesgcm:v1:key2:") for v in raw_values(db, SECRET_KEY))
    # 3. the old key removed: the whole history still reads
    store = open_db(db, config(aesgcm(("key2", K2))))
    assert store.get(SECRET_KEY) == third
    assert [e.obj for e in store.events_since(SECRET_KEY, 0)] == [first, second, third]
    assert store.list("/core/secrets/", at_revision=first["metadata"]["resourceVersion"] and 1)[
        0
    ] == [(SECRET_KEY, first)]
    store.close()
    assert b"rotated-plaintext-marker" not in file_bytes(db)


def test_rotation_between_providers_and_to_plaintext(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    store = open_db(db, None)
    plain = store.create(SECRET_KEY, secret())
    store.close()
    assert PLAINTEXT.encode() in file_bytes(db)
    # encryption turned on: plaintext written before is rewritten at open
    store = open_db(db, config(secretbox(("box", K2)), IDENTITY))
    assert store.get(SECRET_KEY) == plain
    store.close()
    assert raw_values(db, SECRET_KEY)[0].startswith(b"k8s:enc:secretbox:v1:box:")
    store = open_db(db, config(aesgcm(("gcm", K1)), secretbox(("box", K2))))
    store.close()
    assert raw_values(db, SECRET_KEY)[0].startswith(b"k8s:enc:aesgcm:v1:gcm:")
    # decrypting everything: identity first
    store = open_db(db, config(IDENTITY, aesgcm(("gcm", K1))))
    assert store.get(SECRET_KEY) == plain
    store.close()
    assert raw_values(db, SECRET_KEY)[0].startswith(b"{")
    store = open_db(db, None)
    assert store.get(SECRET_KEY) == plain
    store.close()


def test_missing_or_wrong_key_is_kubes_error(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite"
    store = open_db(db, config(aesgcm(("key1", K1))))
    store.create(SECRET_KEY, secret())
    store.close()
    (value,) = raw_values(db, SECRET_KEY)
    identity = "identity transformer tried to read encrypted data"
    cases = [
        (config(aesgcm(("other", K2))), "no matching prefix found"),
        (config(aesgcm(("key1", K2))), "cipher: message authentication failed"),
        (config(secretbox(("key1", K2))), "no matching prefix found"),
        # kube: an identity-only chain skips encrypted data, then finds no prefix
        (config(IDENTITY), "no matching prefix found"),
        # kube: a resource no rule names is read by the identity check
        (config(IDENTITY, resources=("configmaps",)), identity),
        (None, identity),
    ]
    for cfg, cause in cases:
        expected = f'unable to transform key "{SECRET_KEY}": {cause}'
        if cfg is not None:
            sealer = parse_encryption_config(cfg).sealer_for(SECRET_KEY)
            if sealer is not None:
                with pytest.raises(UndecryptableValue) as err:
                    sealer.open(SECRET_KEY, value)
                assert str(err.value) == expected
        # the store refuses to open a file it could not read, and says why
        with pytest.raises(StoreOpenError) as open_err:
            open_db(db, cfg)
        assert expected in str(open_err.value)
        assert "give the encryption provider configuration the provider and key" in str(
            open_err.value
        )
    # nothing was rewritten or lost: the right key still reads it
    assert raw_values(db, SECRET_KEY) == [value]
    store = open_db(db, config(aesgcm(("key1", K1))))
    assert store.get(SECRET_KEY) is not None
    store.close()


def test_memory_store_takes_the_same_configuration() -> None:
    cfg = parse_encryption_config(config(aesgcm(("key1", K1))))
    store = open_store("memory", encryption_config=cfg)
    created = store.create(SECRET_KEY, secret())
    assert store.get(SECRET_KEY) == created


# -- through the API -----------------------------------------------------------------


async def test_api_reads_back_encrypted_secrets_across_restart(tmp_path: Path) -> None:
    import yaml

    enc = tmp_path / "enc.yaml"
    enc.write_text(yaml.safe_dump(config(aesgcm(("key1", K1)))))
    db = tmp_path / "db.sqlite"
    body = secret()
    del body["stringData"]
    path = "/api/v1/namespaces/default/secrets"
    async with EmbeddedServer(f"sqlite:{db}", encryption_config=str(enc)) as srv:
        api = Api(srv.url)
        try:
            status, created = await api.post(path, body)
            assert status == 201, created
            status, got = await api.get(f"{path}/db-password")
            assert status == 200 and got["data"] == body["data"]
            status, listed = await api.get(path)
            assert [i["data"] for i in listed["items"]] == [body["data"]]
        finally:
            await api.close()
    assert PLAINTEXT.encode() not in file_bytes(db)
    assert base64.b64encode(PLAINTEXT.encode()) not in file_bytes(db)
    async with EmbeddedServer(f"sqlite:{db}", encryption_config=str(enc)) as srv:
        api = Api(srv.url)
        try:
            status, got = await api.get(f"{path}/db-password")
            assert status == 200 and got["data"] == body["data"], got
        finally:
            await api.close()
    # restarted with another key: refused before serving, naming the key and kube's cause
    enc.write_text(yaml.safe_dump(config(aesgcm(("key2", K2)))))
    with pytest.raises(StoreOpenError) as err:
        EmbeddedServer(f"sqlite:{db}", encryption_config=str(enc))
    assert (
        'unable to transform key "/core/secrets/default/db-password": no matching prefix found'
        in str(err.value)
    )
