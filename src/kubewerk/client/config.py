"""Client configuration: kubeconfig files and in-cluster service-account config.

:func:`load_kubeconfig` follows ``clientcmd``'s rules: ``$KUBECONFIG`` (a path list;
for each map, the first file that sets a key wins) else ``~/.kube/config``; the current
context unless one is named; relative file paths resolved against the file that names
them; ``*-data`` fields (base64) preferred over the matching file fields; a cluster's
``proxy-url`` (http or https; socks5 is refused as unsupported). Users can
authenticate with a bearer token, a token file (re-read when it changes, as projected
service-account tokens rotate), client certificates, basic auth, or an exec credential
plugin (``client.authentication.k8s.io`` v1/v1beta1) whose credentials are cached until
their ``expirationTimestamp`` and refreshed after a 401.

:func:`load_incluster` reads ``KUBERNETES_SERVICE_HOST``/``PORT`` and the mounted
service account (token, ``ca.crt``, namespace).

Every problem is reported as one :class:`~kubewerk.client.errors.ConfigError` sentence.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import datetime as dt
import os
import ssl
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from kubewerk.client.errors import ConfigError
from kubewerk.client.proxy import parse_proxy_url
from kubewerk.core.inputs import InputTooLarge, read_file_bounded

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_FILE_REREAD_SECONDS = 60.0
"""How long a token read from a file is trusted before the file is checked again
(client-go: 1 min)."""


@dataclass
class ExecConfig:
    """An exec credential plugin (``users[].user.exec``)."""

    command: str
    api_version: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    install_hint: str = ""
    provide_cluster_info: bool = False
    base_dir: Path = field(default_factory=Path.cwd)


@dataclass
class Credentials:
    """What an auth source yields: a bearer token and/or a client certificate (PEM)."""

    token: str | None = None
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    expires_at: float | None = None  # epoch seconds; None = no expiry


class Authenticator:
    """Produces request credentials; the base class uses static ones."""

    def __init__(self, creds: Credentials | None = None) -> None:
        self._static = creds or Credentials()

    async def credentials(self) -> Credentials:
        """Current credentials (may run a plugin or read a file)."""
        return self._static

    def invalidate(self) -> bool:
        """Drop cached credentials after a 401; True when a retry could help."""
        return False


class TokenFileAuthenticator(Authenticator):
    """A bearer token read from a file, re-read at most once a minute (rotation-safe)."""

    def __init__(self, path: Path, reread_seconds: float = TOKEN_FILE_REREAD_SECONDS) -> None:
        super().__init__()
        self.path = path
        self.reread_seconds = reread_seconds
        self._token: str | None = None
        self._read_at = 0.0

    def _read(self) -> str:
        try:
            token = self.path.read_text().strip()
        except OSError as exc:
            raise ConfigError(f"cannot read token file {self.path}: {exc.strerror}") from None
        if not token:
            raise ConfigError(f"token file {self.path} is empty")
        return token

    async def credentials(self) -> Credentials:
        now = time.monotonic()
        if self._token is None or now - self._read_at >= self.reread_seconds:
            self._token = self._read()
            self._read_at = now
        return Credentials(token=self._token)

    def invalidate(self) -> bool:
        old = self._token
        self._token = None
        with contextlib.suppress(ConfigError):
            return self._read() != old
        return False


class ExecAuthenticator(Authenticator):
    """Runs an exec credential plugin; caches its answer until it expires or a 401 arrives."""

    def __init__(self, config: ExecConfig, cluster_info: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.config = config
        self.cluster_info = cluster_info
        self._cached: Credentials | None = None
        self._lock = asyncio.Lock()
        self.runs = 0  # how many times the plugin ran (observable for tests and debugging)

    async def credentials(self) -> Credentials:
        async with self._lock:
            cached = self._cached
            if cached is not None and (
                cached.expires_at is None or cached.expires_at > time.time() + 10
            ):
                return cached
            self._cached = await self._run()
            return self._cached

    def invalidate(self) -> bool:
        self._cached = None
        return True

    async def _run(self) -> Credentials:
        cfg = self.config
        exec_info: dict[str, Any] = {
            "apiVersion": cfg.api_version,
            "kind": "ExecCredential",
            "spec": {"interactive": False},
        }
        if cfg.provide_cluster_info and self.cluster_info is not None:
            exec_info["spec"]["cluster"] = self.cluster_info
        env = dict(os.environ)
        env.update(cfg.env)
        env["KUBERNETES_EXEC_INFO"] = orjson.dumps(exec_info).decode()
        command = cfg.command
        # a command with a path separator is relative to the kubeconfig's directory
        if os.sep in command and not os.path.isabs(command):
            command = str(cfg.base_dir / command)
        self.runs += 1
        try:
            proc = await asyncio.create_subprocess_exec(
                command,
                *cfg.args,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            hint = f" ({cfg.install_hint.strip()})" if cfg.install_hint else ""
            raise ConfigError(
                f"exec credential plugin {cfg.command!r} could not be started: {exc.strerror}{hint}"
            ) from None
        out, err = await proc.communicate()
        if proc.returncode != 0:
            detail = err.decode(errors="replace").strip().splitlines()
            last = f": {detail[-1]}" if detail else ""
            raise ConfigError(
                f"exec credential plugin {cfg.command!r} exited with code {proc.returncode}{last}"
            )
        try:
            doc = orjson.loads(out)
        except orjson.JSONDecodeError:
            raise ConfigError(
                f"exec credential plugin {cfg.command!r} printed something that is not JSON"
            ) from None
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise ConfigError(
                f"exec credential plugin {cfg.command!r} did not print an ExecCredential"
            )
        if doc.get("apiVersion") != cfg.api_version:
            raise ConfigError(
                f"exec credential plugin {cfg.command!r} answered apiVersion "
                f"{doc.get('apiVersion')!r}, the kubeconfig asked for {cfg.api_version!r}"
            )
        status = doc.get("status") or {}
        token = status.get("token") or None
        cert = status.get("clientCertificateData")
        key = status.get("clientKeyData")
        if not token and not (cert and key):
            raise ConfigError(
                f"exec credential plugin {cfg.command!r} returned "
                "neither a token nor a client certificate"
            )
        if bool(cert) != bool(key):
            raise ConfigError(
                f"exec credential plugin {cfg.command!r} returned a "
                "client certificate without its key (or the reverse)"
            )
        expires_at = None
        if status.get("expirationTimestamp"):
            expires_at = parse_time(str(status["expirationTimestamp"]))
        return Credentials(
            token=token,
            client_cert_pem=cert.encode() if cert else None,
            client_key_pem=key.encode() if key else None,
            expires_at=expires_at,
        )


def parse_time(value: str) -> float:
    """RFC 3339 timestamp (``Z`` or offset, optional fraction) to epoch seconds."""
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise ConfigError(f"invalid RFC 3339 timestamp {value!r}") from None


@dataclass
class ClientConfig:
    """Everything needed to talk to one API server.

    ``server`` is the base URL. TLS: ``ca_pem`` (None = system trust store),
    ``insecure`` skips verification, ``tls_server_name`` overrides SNI/verification
    name, ``client_cert_pem``/``client_key_pem`` for mTLS. ``auth`` yields bearer
    tokens (and exec-plugin certificates); ``basic`` is (user, password).
    ``proxy_url`` (a kubeconfig cluster's ``proxy-url``): every request goes through this
    http(s) proxy; None: the proxy environment variables decide (see
    :mod:`kubewerk.client.proxy`).
    """

    server: str
    namespace: str = "default"
    ca_pem: bytes | None = None
    insecure: bool = False
    tls_server_name: str | None = None
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    auth: Authenticator = field(default_factory=Authenticator)
    basic: tuple[str, str] | None = None
    context: str | None = None
    source: str = ""
    proxy_url: str | None = None

    def ssl_context(self, extra: Credentials | None = None) -> ssl.SSLContext | None:
        """The TLS context for this config (None for plain http://)."""
        if not self.server.startswith("https://"):
            return None
        if self.insecure:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            try:
                ctx = ssl.create_default_context(
                    cadata=self.ca_pem.decode() if self.ca_pem else None
                )
            except (ssl.SSLError, ValueError) as exc:
                raise ConfigError(
                    f"{self._where()}certificate authority data is not valid PEM: {exc}"
                ) from None
        cert = self.client_cert_pem
        key = self.client_key_pem
        if extra is not None and extra.client_cert_pem and extra.client_key_pem:
            cert, key = extra.client_cert_pem, extra.client_key_pem
        if cert and key:
            _load_cert_chain(ctx, cert, key, self._where())
        return ctx

    def _where(self) -> str:
        return f"{self.source}: " if self.source else ""


def _load_cert_chain(ctx: ssl.SSLContext, cert: bytes, key: bytes, where: str) -> None:
    # ssl only loads certificates from files: write them to private temp files briefly
    with tempfile.TemporaryDirectory(prefix="kubewerk-tls-") as tmp:
        cert_path = Path(tmp) / "cert.pem"
        key_path = Path(tmp) / "key.pem"
        cert_path.write_bytes(cert)
        key_path.write_bytes(key)
        os.chmod(key_path, 0o600)
        try:
            ctx.load_cert_chain(str(cert_path), str(key_path))
        except ssl.SSLError as exc:
            raise ConfigError(
                f"{where}client certificate or key is not valid: {exc.reason or exc}"
            ) from None


def _b64(value: str, what: str, where: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{where}{what} is not valid base64") from None


def _read_file(base: Path, value: str, what: str, where: str) -> bytes:
    path = Path(os.path.expanduser(value))
    if not path.is_absolute():
        path = base / path
    try:
        return read_file_bounded(path)
    except OSError as exc:
        raise ConfigError(f"{where}cannot read {what} {path}: {exc.strerror}") from None
    except InputTooLarge as exc:
        raise ConfigError(f"{where}cannot read {what} {path}: {exc.size_text}") from None


def default_kubeconfig_paths() -> list[Path]:
    """``$KUBECONFIG`` split on the path separator, else ``~/.kube/config``."""
    env = os.environ.get("KUBECONFIG", "")
    paths = [Path(p) for p in env.split(os.pathsep) if p]
    return paths or [Path.home() / ".kube" / "config"]


def _load_docs(paths: list[Path], explicit: bool) -> list[tuple[Path, dict[str, Any]]]:
    docs: list[tuple[Path, dict[str, Any]]] = []
    for path in paths:
        try:
            text = read_file_bounded(path).decode("utf-8-sig")
        except FileNotFoundError:
            if explicit:
                raise ConfigError(f"kubeconfig {path} does not exist") from None
            continue
        except OSError as exc:
            raise ConfigError(f"cannot read kubeconfig {path}: {exc.strerror}") from None
        except InputTooLarge as exc:
            raise ConfigError(f"cannot read kubeconfig {path}: {exc.size_text}") from None
        except UnicodeDecodeError:
            raise ConfigError(f"kubeconfig {path} is not UTF-8 text") from None
        try:
            # libyaml where built in: as fast, and it refuses deep nesting at once
            doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise ConfigError(f"kubeconfig {path} is not valid YAML{where}") from None
        except RecursionError:  # PyYAML's parser recurses once per level of nesting
            raise ConfigError(f"kubeconfig {path} is not valid YAML (nested too deeply)") from None
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ConfigError(f"kubeconfig {path} is not a mapping")
        docs.append((path, doc))
    return docs


def _named(
    docs: list[tuple[Path, dict[str, Any]]], section: str, inner: str
) -> dict[str, tuple[Path, dict[str, Any]]]:
    out: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path, doc in docs:
        entries = doc.get(section) or []
        if not isinstance(entries, list):
            raise ConfigError(f"kubeconfig {path}: {section} must be a list")
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise ConfigError(f"kubeconfig {path}: every entry of {section} needs a name")
            body = entry.get(inner) or {}
            if not isinstance(body, dict):
                raise ConfigError(
                    f"kubeconfig {path}: {section} {entry['name']!r} has no {inner} mapping"
                )
            out.setdefault(entry["name"], (path, body))  # first file wins
    return out


def load_kubeconfig(
    path: str | os.PathLike[str] | None = None,
    context: str | None = None,
) -> ClientConfig:
    """Load a kubeconfig (``path`` or the default chain) and resolve one context."""
    explicit = path is not None
    paths = [Path(path)] if path is not None else default_kubeconfig_paths()
    if path is None and os.environ.get("KUBECONFIG"):
        explicit = False
    docs = _load_docs(paths, explicit)
    if not docs:
        raise ConfigError(
            "no kubeconfig found (looked at "
            + ", ".join(str(p) for p in paths)
            + "); pass --kubeconfig or set KUBECONFIG"
        )
    current = context
    if current is None:
        for _, doc in docs:
            value = doc.get("current-context")
            if value:
                current = str(value)
                break
    if not current:
        raise ConfigError(f"kubeconfig {docs[0][0]} has no current-context; pass a context name")
    contexts = _named(docs, "contexts", "context")
    clusters = _named(docs, "clusters", "cluster")
    users = _named(docs, "users", "user")
    if current not in contexts:
        known = ", ".join(sorted(contexts)) or "none"
        raise ConfigError(f"context {current!r} not found in kubeconfig (known contexts: {known})")
    ctx_path, ctx = contexts[current]
    cluster_name = ctx.get("cluster")
    if not cluster_name or cluster_name not in clusters:
        raise ConfigError(
            f"context {current!r} refers to cluster {cluster_name!r}, which is not defined"
        )
    cluster_path, cluster = clusters[cluster_name]
    user_name = ctx.get("user")
    user: dict[str, Any] = {}
    user_path = ctx_path
    if user_name:
        if user_name not in users:
            raise ConfigError(
                f"context {current!r} refers to user {user_name!r}, which is not defined"
            )
        user_path, user = users[user_name]
    where = f"kubeconfig {cluster_path} cluster {cluster_name!r}: "
    server = cluster.get("server")
    if not server or not isinstance(server, str):
        raise ConfigError(f"{where}no server URL")
    if not server.startswith(("http://", "https://")):
        raise ConfigError(f"{where}server {server!r} is not an http(s) URL")
    cfg = ClientConfig(
        server=server.rstrip("/"),
        namespace=str(ctx.get("namespace") or "default"),
        context=current,
        source=f"kubeconfig {ctx_path} context {current!r}",
    )
    base = cluster_path.parent
    if cluster.get("certificate-authority-data"):
        cfg.ca_pem = _b64(
            str(cluster["certificate-authority-data"]), "certificate-authority-data", where
        )
    elif cluster.get("certificate-authority"):
        cfg.ca_pem = _read_file(
            base, str(cluster["certificate-authority"]), "certificate authority", where
        )
    cfg.insecure = bool(cluster.get("insecure-skip-tls-verify", False))
    if cfg.insecure and cfg.ca_pem is not None:
        # clientcmd refuses this combination
        raise ConfigError(
            f"{where}certificate-authority and insecure-skip-tls-verify cannot both be set"
        )
    cfg.tls_server_name = cluster.get("tls-server-name") or None
    cfg.proxy_url = _proxy_url(cluster.get("proxy-url"), where)
    _apply_user(cfg, user, user_path, str(user_name or ""), cluster)
    return cfg


def _proxy_url(value: Any, where: str) -> str | None:
    """A cluster's ``proxy-url``, checked as clientcmd checks it (http, https or socks5;
    socks5 is refused as unsupported here); None when not set."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{where}proxy-url must be a string")
    try:
        parse_proxy_url(value)
    except ValueError as exc:
        raise ConfigError(f"{where}invalid proxy-url {value!r}: {exc}") from None
    return value


def _apply_user(
    cfg: ClientConfig, user: Mapping[str, Any], path: Path, name: str, cluster: Mapping[str, Any]
) -> None:
    where = f"kubeconfig {path} user {name!r}: "
    base = path.parent
    if user.get("client-certificate-data"):
        cfg.client_cert_pem = _b64(
            str(user["client-certificate-data"]), "client-certificate-data", where
        )
    elif user.get("client-certificate"):
        cfg.client_cert_pem = _read_file(
            base, str(user["client-certificate"]), "client certificate", where
        )
    if user.get("client-key-data"):
        cfg.client_key_pem = _b64(str(user["client-key-data"]), "client-key-data", where)
    elif user.get("client-key"):
        cfg.client_key_pem = _read_file(base, str(user["client-key"]), "client key", where)
    if bool(cfg.client_cert_pem) != bool(cfg.client_key_pem):
        raise ConfigError(f"{where}a client certificate needs a client key (and the reverse)")
    methods = [m for m in ("token", "tokenFile", "exec", "username") if user.get(m)]
    if user.get("auth-provider"):
        provider = (user.get("auth-provider") or {}).get("name", "?")
        raise ConfigError(
            f"{where}auth-provider {provider!r} is not supported "
            "(it was removed from client-go); use an exec plugin"
        )
    if len([m for m in methods if m != "tokenFile" or not user.get("token")]) > 1:
        raise ConfigError(f"{where}more than one authentication method ({', '.join(methods)})")
    if user.get("token"):
        cfg.auth = Authenticator(Credentials(token=str(user["token"])))
    elif user.get("tokenFile"):
        token_path = Path(os.path.expanduser(str(user["tokenFile"])))
        if not token_path.is_absolute():
            token_path = base / token_path
        auth = TokenFileAuthenticator(token_path)
        auth._read()  # fail early with a clear message
        cfg.auth = auth
    elif user.get("exec"):
        cfg.auth = ExecAuthenticator(
            _exec_config(user["exec"], base, where), _cluster_info(cluster)
        )
    elif user.get("username"):
        cfg.basic = (str(user["username"]), str(user.get("password", "")))


def _exec_config(raw: Any, base: Path, where: str) -> ExecConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}exec must be a mapping")
    command = raw.get("command")
    if not command:
        raise ConfigError(f"{where}exec needs a command")
    api_version = raw.get("apiVersion")
    if api_version not in (
        "client.authentication.k8s.io/v1",
        "client.authentication.k8s.io/v1beta1",
    ):
        raise ConfigError(
            f"{where}exec apiVersion {api_version!r} is not "
            "supported (use client.authentication.k8s.io/v1)"
        )
    env: dict[str, str] = {}
    for item in raw.get("env") or []:
        if not isinstance(item, dict) or "name" not in item:
            raise ConfigError(f"{where}exec env entries need a name and a value")
        env[str(item["name"])] = str(item.get("value", ""))
    return ExecConfig(
        command=str(command),
        api_version=str(api_version),
        args=[str(a) for a in raw.get("args") or []],
        env=env,
        install_hint=str(raw.get("installHint") or ""),
        provide_cluster_info=bool(raw.get("provideClusterInfo", False)),
        base_dir=base,
    )


def _cluster_info(cluster: Mapping[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = {"server": cluster.get("server", "")}
    if cluster.get("certificate-authority-data"):
        info["certificate-authority-data"] = cluster["certificate-authority-data"]
    if cluster.get("insecure-skip-tls-verify"):
        info["insecure-skip-tls-verify"] = True
    if cluster.get("tls-server-name"):
        info["tls-server-name"] = cluster["tls-server-name"]
    if cluster.get("proxy-url"):
        info["proxy-url"] = cluster["proxy-url"]
    return info


def load_incluster(
    sa_dir: Path = SERVICE_ACCOUNT_DIR, environ: Mapping[str, str] | None = None
) -> ClientConfig:
    """Config for a pod: the API server from the environment, the mounted service account."""
    env = os.environ if environ is None else environ
    host = env.get("KUBERNETES_SERVICE_HOST")
    port = env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise ConfigError(
            "not running in a cluster: KUBERNETES_SERVICE_HOST "
            "and KUBERNETES_SERVICE_PORT are not set"
        )
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # IPv6
    token = TokenFileAuthenticator(sa_dir / "token")
    token._read()
    cfg = ClientConfig(server=f"https://{host}:{port}", auth=token, source="in-cluster config")
    ca = sa_dir / "ca.crt"
    try:
        cfg.ca_pem = ca.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the service-account CA {ca}: {exc.strerror}") from None
    with contextlib.suppress(OSError):
        ns = (sa_dir / "namespace").read_text().strip()
        if ns:
            cfg.namespace = ns
    return cfg


def load_config(
    kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None
) -> ClientConfig:
    """The usual order: an explicit kubeconfig; else in-cluster when in a pod; else the
    default kubeconfig chain."""
    if (
        kubeconfig is None
        and context is None
        and os.environ.get("KUBERNETES_SERVICE_HOST")
        and not os.environ.get("KUBECONFIG")
    ):
        try:
            return load_incluster()
        except ConfigError:
            pass
    return load_kubeconfig(kubeconfig, context)
