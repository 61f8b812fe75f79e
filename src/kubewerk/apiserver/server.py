"""Run the embedded API server: in-process (``async with EmbeddedServer()``), in a thread
(``EmbeddedServer().start_in_thread()``), or from the CLI (``kubewerk up``).

The server binds before it reports ready, so ``url`` is usable as soon as ``start``
returns; ``write_kubeconfig`` gives a kubeconfig with a ``kubewerk`` context that kubectl,
the official clients and kopf use unchanged, readable by its owner only.

``tls=True`` serves HTTPS with a CA and serving certificate kept beside the store (see
``kubewerk.apiserver.auth.certs``), and turns authentication on: client certificates
signed by that CA (the kubeconfig ``write_kubeconfig`` writes uses the admin certificate,
group ``system:masters``), ``token_auth_file`` tokens and ServiceAccount tokens.
Without authentication the server binds to loopback unless
``insecure_bind_non_loopback=True`` (and then warns on every start); with it, any address
is allowed. Connections have kube-apiserver's HTTP bounds (header size, header-read,
idle and body timeouts; see ``kubewerk.apiserver.httpproto``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import logging
import shutil
import socket
import ssl
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import yaml

from kubewerk.apiserver import listen
from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.audit import Auditor, LogWriter, load_policy
from kubewerk.apiserver.auth.authn import AuthenticationConfig
from kubewerk.apiserver.auth.certs import ServerPki, pki_directory_for
from kubewerk.apiserver.auth.tokens import DEFAULT_ISSUER, SigningKey, StaticTokens
from kubewerk.apiserver.auth.types import Authorizer
from kubewerk.apiserver.httpproto import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_HEADER_BYTES,
    DEFAULT_READ_HEADER_TIMEOUT,
    DEFAULT_REQUEST_BODY_TIMEOUT,
    HttpLimits,
    protocol_class,
)
from kubewerk.apiserver.kinds.services import (
    DEFAULT_SERVICE_CLUSTER_IP_RANGE,
    DEFAULT_SERVICE_NODE_PORT_RANGE,
    ServiceNetwork,
)
from kubewerk.apiserver.storage import Store, open_store
from kubewerk.apiserver.watch import DEFAULT_MAX_BACKLOG_BYTES
from kubewerk.core.atomicfile import replace_file
from kubewerk.core.openfiles import raise_open_file_limit

if TYPE_CHECKING:
    from kubewerk.apiserver.simulate import Simulation, SimulationConfig

log = logging.getLogger("kubewerk.apiserver.server")

# descriptors kept back from the connection cap for the server's own files and for accept
_RESERVED_DESCRIPTORS = 128

try:  # uvloop is optional (not on Windows)
    import uvloop  # noqa: F401

    _LOOP = "uvloop"
except ImportError:  # pragma: no cover
    _LOOP = "asyncio"


def kubeconfig_text(
    url: str,
    context: str = "kubewerk",
    namespace: str = "default",
    *,
    ca_pem: bytes | None = None,
    client_cert_pem: bytes | None = None,
    client_key_pem: bytes | None = None,
    token: str | None = None,
) -> str:
    """A kubeconfig (YAML) pointing at ``url`` with one context named ``context``:
    ``certificate-authority-data`` from ``ca_pem``, and the user's client certificate
    and key or bearer ``token`` when given."""
    cluster: dict[str, Any] = {"server": url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode("ascii")
    user: dict[str, Any] = {}
    if client_cert_pem is not None and client_key_pem is not None:
        user["client-certificate-data"] = base64.b64encode(client_cert_pem).decode("ascii")
        user["client-key-data"] = base64.b64encode(client_key_pem).decode("ascii")
    if token is not None:
        user["token"] = token
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "users": [{"name": context, "user": user}],
        "contexts": [
            {
                "name": context,
                "context": {"cluster": context, "user": context, "namespace": namespace},
            }
        ],
        "current-context": context,
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def write_private_file(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` so that no one but its owner can ever read it.

    Missing directories are created 0700; the content goes to a new file created 0600 (never
    through the umask's wider default) next to the target, which then replaces the target in
    one step, so readers see the old file or the whole new one. A symlink is followed and its
    target replaced. Returns ``path`` with ``~`` expanded.
    """
    target = Path(path).expanduser()
    real = target.resolve()
    missing = [d for d in (real.parent, *real.parent.parents) if not d.exists()]
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
    replace_file(real, text.encode("utf-8"), 0o600)
    return target


class EmbeddedServer:
    """The embedded control plane on a real HTTP socket.

    ``store`` is a ``Store`` or a spec for ``open_store`` (``"memory"``,
    ``"sqlite:PATH"``). ``port=0`` picks a free port.

    Security (kube-apiserver's flags of the same names): ``tls`` serves HTTPS with the
    material ``auth.certs.ServerPki`` keeps in ``pki_dir`` (default: ``PATH.pki`` beside a
    SQLite store, a private temporary directory for a memory store), or with
    ``tls_cert_file``/``tls_private_key_file``; ``client_ca_file`` adds CAs whose client
    certificates authenticate; ``token_auth_file`` is kube's static token CSV;
    ``authentication`` (default: on with TLS, a token file or a client CA) turns the
    authenticators on (ServiceAccount tokens included), ``anonymous_auth`` lets requests
    without credentials in as ``system:anonymous``; ``authorizer`` decides requests
    (``"RBAC"``, ``"AlwaysAllow"`` or an ``Authorizer``; default: everything allowed).
    Whatever the authorizer, the RBAC kinds (with the bootstrap policy) and the
    ``authorization.k8s.io`` access reviews are served, as kube-apiserver serves them.
    ServiceAccount tokens carry ``service_account_issuer`` and are accepted for
    ``api_audiences`` (default: the issuer). A malformed or unreadable file is a
    ``SecurityConfigError`` (a ``ValueError``) before anything is opened.

    ``host`` must be a loopback address or name unless authentication is on or
    ``insecure_bind_non_loopback`` is true; otherwise ``ValueError`` says why, before
    anything is opened. With authentication on every ``Host`` is answered; without it,
    ``allowed_hosts`` names the extra ``Host`` header values the API
    answers besides loopback ones (``"*"``: every one), and the extra hosts whose web pages
    (``Origin``) it answers besides loopback ones (``"*"`` adds none); the bound address,
    and the name it was given as, are added when it is a specific non-loopback one.
    Connection bounds: ``max_header_bytes`` (431 beyond it plus Go's 4 KiB slop),
    ``read_header_timeout``, ``idle_timeout``, ``request_body_timeout`` (seconds) and
    ``max_connections`` (``None``: the descriptor limit less a reserve).
    ``watch_backlog_bytes`` bounds each watcher's undelivered events; ``store_policy``
    (``retain_events``, ``retain_seconds``, ``retain_bytes``, ``encryption_config``: kube's
    EncryptionConfiguration file for Secrets at rest) goes to ``open_store``.

    ``audit_policy_file`` and ``audit_log_path`` (kube's ``--audit-policy-file`` and
    ``--audit-log-path``, given together) write the audit log (``apiserver.audit``): a
    malformed policy is an ``AuditPolicyError`` (a ``ValueError``) before anything is
    opened; the log is flushed and closed by ``stop``.

    ``service_cluster_ip_range`` (a CIDR) and ``service_node_port_range`` (``BASE-MAX``) are
    where Services' cluster IPs and node ports come from, as kube-apiserver's flags of
    those names (defaults ``10.96.0.0/12`` and ``30000-32767``); a malformed one is a
    ``ValueError`` before anything is opened.

    ``simulate`` runs a simulated cluster inside the server (``True``: the default
    ``SimulationConfig``; see ``kubewerk.apiserver.simulate`` and docs/simulate.md):
    fake Nodes, a scheduler, kubelets and the workload controllers, started with the
    server and reachable as ``simulation`` (None without it).
    """

    def __init__(
        self,
        store: Store | str = "memory",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_requests: bool = False,
        bookmark_interval: float = 60.0,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
        read_header_timeout: float = DEFAULT_READ_HEADER_TIMEOUT,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        request_body_timeout: float = DEFAULT_REQUEST_BODY_TIMEOUT,
        max_connections: int | None = None,
        insecure_bind_non_loopback: bool = False,
        allowed_hosts: Iterable[str] = (),
        watch_backlog_bytes: int = DEFAULT_MAX_BACKLOG_BYTES,
        simulate: SimulationConfig | bool | None = None,
        service_cluster_ip_range: str = DEFAULT_SERVICE_CLUSTER_IP_RANGE,
        service_node_port_range: str = DEFAULT_SERVICE_NODE_PORT_RANGE,
        tls: bool = False,
        tls_cert_file: str | Path | None = None,
        tls_private_key_file: str | Path | None = None,
        client_ca_file: str | Path | None = None,
        token_auth_file: str | Path | None = None,
        authentication: bool | None = None,
        anonymous_auth: bool = False,
        authorizer: Authorizer | str | None = None,
        service_account_issuer: str = DEFAULT_ISSUER,
        api_audiences: Sequence[str] = (),
        pki_dir: str | Path | None = None,
        audit_policy_file: str | Path | None = None,
        audit_log_path: str | Path | None = None,
        **store_policy: Any,
    ) -> None:
        # everything that can refuse the arguments runs before the store is opened
        if (tls_cert_file is None) != (tls_private_key_file is None):
            raise SecurityConfigError(
                "tls_cert_file and tls_private_key_file must be given together"
            )
        self.tls = bool(tls or tls_cert_file is not None)
        try:
            given_pki = (
                ServerPki.given(tls_cert_file, tls_private_key_file)
                if tls_cert_file is not None and tls_private_key_file is not None
                else None
            )
            self.client_ca_file = (
                None if client_ca_file is None else Path(client_ca_file).expanduser()
            )
            if self.client_ca_file is not None:
                _check_ca_file(self.client_ca_file)
            tokens = StaticTokens.load(token_auth_file) if token_auth_file is not None else None
        except ValueError as exc:
            raise SecurityConfigError(str(exc)) from None
        except OSError as exc:
            raise SecurityConfigError(
                f"cannot read {exc.filename}: {exc.strerror or exc}"
            ) from None
        if authentication is None:
            authentication = self.tls or tokens is not None or client_ca_file is not None
        self.authentication = (
            AuthenticationConfig(
                tokens=tokens, client_certificates=self.tls, anonymous=anonymous_auth
            )
            if authentication
            else None
        )
        if isinstance(authorizer, str) and authorizer not in ("RBAC", "AlwaysAllow"):
            raise SecurityConfigError(
                f"authorizer must be RBAC or AlwaysAllow (or an Authorizer), not {authorizer!r}"
            )
        self.bind = listen.resolve(host)
        listen.check_bind(
            self.bind,
            allowed=insecure_bind_non_loopback or self.authentication is not None,
            opt_in="insecure_bind_non_loopback=True",
        )
        self.limits = HttpLimits(
            max_header_bytes=max_header_bytes,
            read_header_timeout=read_header_timeout,
            idle_timeout=idle_timeout,
            request_body_timeout=request_body_timeout,
            max_connections=max_connections,
        )
        self.allowed_hosts = _allowed_hosts(self.bind, allowed_hosts)
        ServiceNetwork.parse(service_cluster_ip_range, service_node_port_range)
        if (audit_policy_file is None) != (audit_log_path is None):
            raise ValueError("audit_policy_file and audit_log_path must be given together")
        audit_policy = None if audit_policy_file is None else load_policy(audit_policy_file)
        self.store = open_store(store, **store_policy) if isinstance(store, str) else store
        self._owns_store = isinstance(store, str)
        self._temp_pki: Path | None = None
        self._pki_dir = Path(pki_dir).expanduser() if pki_dir is not None else None
        if self._pki_dir is None:
            store_path = getattr(self.store, "path", "")
            if isinstance(store_path, str) and store_path not in ("", ":memory:"):
                self._pki_dir = pki_directory_for(store_path)
        self.pki: ServerPki | None = given_pki
        if self.tls and self.pki is None:
            self.pki = ServerPki.ensure(self._private_pki_dir(), [host, self.bind.address])
        resolved_authorizer: Authorizer | None
        if authorizer == "RBAC":
            from kubewerk.apiserver.auth.authorizer import rbac_authorizer

            resolved_authorizer = rbac_authorizer(self.store)
        elif isinstance(authorizer, str):
            resolved_authorizer = None
        else:
            resolved_authorizer = authorizer
        self.app = ApiServer(
            self.store,
            log_requests=log_requests,
            bookmark_interval=bookmark_interval,
            allowed_hosts=None if self.authentication is not None else self.allowed_hosts,
            watch_backlog_bytes=watch_backlog_bytes,
            service_cluster_ip_range=service_cluster_ip_range,
            service_node_port_range=service_node_port_range,
            authentication=self.authentication,
            authorizer=resolved_authorizer,
            service_account_key=self._signing_key,
            service_account_issuer=service_account_issuer,
            api_audiences=api_audiences,
        )
        if self.tls and self.pki is not None and self.pki.ca_pem:
            # kube-root-ca.crt in every namespace: the CA clients verify this server with
            self.app.controllers.root_ca = self.pki.ca_pem.decode("ascii")
        # the audit log sees every request the socket serves (apiserver.audit)
        self.auditor: Auditor | None = None
        self._asgi: Any = self.app
        if audit_policy is not None and audit_log_path is not None:
            self.auditor = Auditor(audit_policy, LogWriter(audit_log_path))
            self._asgi = self.auditor.wrap(self.app)
        # the RBAC kinds, bootstrap policy, aggregation controller and access reviews,
        # whatever the authorizer: kube-apiserver serves rbac.authorization.k8s.io and
        # authorization.k8s.io under AlwaysAllow too (Helm charts write Roles, kubectl
        # auth can-i asks a SelfSubjectAccessReview); only RBAC mode enforces them
        from kubewerk.apiserver.kinds.rbac import install_rbac

        self._rbac: Any = install_rbac(self.app)
        self.simulation: Simulation | None = None
        if simulate:
            from kubewerk.apiserver.simulate import Simulation, SimulationConfig

            config = simulate if isinstance(simulate, SimulationConfig) else SimulationConfig()
            self.simulation = Simulation(self.app, config)
        self.host = host
        self.port = port
        self.effective_limits = self.limits  # with the connection cap filled in once started
        self._server: Any = None
        self._serve_task: asyncio.Task[None] | None = None
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    def _private_pki_dir(self) -> Path:
        """Where TLS material and the signing key live: ``pki_dir``, beside the store, or a
        private temporary directory removed on ``stop``."""
        if self._pki_dir is not None:
            return self._pki_dir
        if self._temp_pki is None:
            self._temp_pki = Path(tempfile.mkdtemp(prefix="kubewerk-pki-"))
        return self._temp_pki

    def _signing_key(self) -> SigningKey:
        """The ServiceAccount token key: kept beside the store (or ``pki_dir``) when there
        is one, else a new key for this server's life."""
        if self._pki_dir is None and (self.pki is None or self.pki.directory is None):
            return SigningKey.generate()
        directory = self._pki_dir or (self.pki.directory if self.pki else None)
        assert directory is not None
        if not directory.exists():
            directory.mkdir(mode=0o700, parents=True)
        return ServerPki(directory / "-", directory / "-", b"", directory=directory).signing_key()

    @property
    def url(self) -> str:
        """The URL a client on this machine uses: never a wildcard (0.0.0.0 becomes
        127.0.0.1, :: ::1); ``https`` with TLS."""
        host = self.bind.client_host()
        host = f"[{host}]" if ":" in host else host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    def write_kubeconfig(
        self,
        path: str | Path,
        context: str = "kubewerk",
        *,
        token: str | None = None,
        user: str | None = None,
        groups: Iterable[str] = (),
    ) -> Path:
        """Write a kubeconfig for ``url`` to ``path``, created 0600 (its new directories
        0700). With TLS it carries the CA; its user is ``token`` when given, else a new
        client certificate for ``user`` in ``groups`` when given, else (with this server's
        own CA) the admin certificate (group ``system:masters``)."""
        pki = self.pki
        cert = key = None
        if token is None and pki is not None and pki.ca is not None:
            if user is not None:
                cert, key = pki.client_certificate(user, groups, days=365)
            elif pki.admin is not None:
                cert, key = pki.admin
        return write_private_file(
            path,
            kubeconfig_text(
                self.url,
                context,
                ca_pem=pki.ca_pem if pki is not None else None,
                client_cert_pem=cert,
                client_key_pem=key,
                token=token,
            ),
        )

    def service_account_token(
        self,
        namespace: str,
        name: str,
        *,
        audiences: Sequence[str] = (),
        expiration_seconds: int = 3600,
    ) -> str:
        """A token for ServiceAccount ``namespace/name`` (as a TokenRequest issues it);
        ``LookupError`` when no such ServiceAccount is stored."""
        account = self.app._lookup("serviceaccounts", namespace, name)
        if account is None:
            raise LookupError(f'serviceaccounts "{name}" not found in namespace "{namespace}"')
        tokens = self.app.service_accounts
        token, _ = tokens.issue(
            account, list(audiences) or list(tokens.audiences), expiration_seconds
        )
        return token

    def ssl_context(self) -> ssl.SSLContext:
        """The server's TLS context: its serving certificate, TLS 1.2 or newer, client
        certificates requested and, when sent, verified against this server's CA and
        ``client_ca_file`` (a certificate from another CA fails the handshake)."""
        pki = self.pki
        assert pki is not None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(str(pki.cert_file), str(pki.key_file))
        cas = [p for p in (pki.ca_file, self.client_ca_file) if p is not None]
        if cas and self.authentication is not None:
            for ca in cas:
                context.load_verify_locations(cafile=str(ca))
            context.verify_mode = ssl.CERT_OPTIONAL
        return context

    # -- asyncio -------------------------------------------------------------------

    async def start(self) -> None:
        """Bind, serve, and return once the server accepts connections.

        Lifts the soft descriptor limit to the hard one first (as Go programs do), and warns
        (log ``kubewerk.apiserver.server``) when listening on a non-loopback address.
        """
        import uvicorn

        soft, _ = raise_open_file_limit()
        limits = self.limits
        if limits.max_connections is None and soft > 0:
            cap = soft - min(_RESERVED_DESCRIPTORS, soft // 2)
            limits = dataclasses.replace(limits, max_connections=cap)
        self.effective_limits = limits
        # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only
        # when the socket says so; without it every response waits ~40 ms (Nagle + delayed ACK)
        sock = socket.socket(self.bind.family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.bind.address, self.port))
        except OSError:
            sock.close()
            raise
        sock.listen(2048)
        sock.setblocking(False)
        self._sock = sock
        self.port = sock.getsockname()[1]
        # default/kubernetes (Service, Endpoints, EndpointSlice) names this address at once
        self.app.advertise(self.bind.client_host(), self.port)
        if not self.bind.is_loopback:
            log.warning("%s", listen.exposure_warning(self.bind, self.port))
        tls_context = self.ssl_context() if self.tls else None
        config = uvicorn.Config(
            self._asgi,
            ssl_context_factory=(
                (lambda _config, _default: tls_context) if tls_context is not None else None
            ),
            lifespan="on",
            http=protocol_class(limits),
            # nothing upgrades: a WebSocket or SPDY upgrade request is answered as the plain
            # HTTP request it also is (kube's non-upgrading handlers), through the limits and
            # authentication above, whichever WebSocket library happens to be installed
            ws="none",
            loop="none",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=2,
            timeout_keep_alive=max(
                1, int(limits.idle_timeout)
            ),  # the protocol uses the exact value
            backlog=2048,
            proxy_headers=False,  # no proxy in front; skip X-Forwarded-* handling per request
        )
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # the caller owns signals
        self._serve_task = asyncio.get_running_loop().create_task(
            self._server.serve(sockets=[sock])
        )
        while not self._server.started:
            if self._serve_task.done():
                self._serve_task.result()
                raise RuntimeError("the API server stopped during start-up")
            await asyncio.sleep(0.005)
        if self.simulation is not None:
            await self.app.start()
            self.simulation.start()

    async def stop(self) -> None:
        if self.simulation is not None:
            await self.simulation.stop()
        if self._server is not None:
            self._server.should_exit = True
            # open watches end when the server shuts down
            self.app.hub.close()
            if self._serve_task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await self._serve_task
            self._server = None
        await self.app.stop()
        if self._rbac is not None:
            self._rbac.close()
            self._rbac = None
        if self.auditor is not None:
            self.auditor.close()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._owns_store:
            self.store.close()
        if self._temp_pki is not None:
            shutil.rmtree(self._temp_pki, ignore_errors=True)
            self._temp_pki = None

    async def __aenter__(self) -> EmbeddedServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- thread ----------------------------------------------------------------------

    def start_in_thread(self) -> EmbeddedServer:
        """Serve from a background thread with its own event loop; returns once listening."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = _new_loop()
            self._thread_loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="kubewerk-apiserver", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    def stop_thread(self) -> None:
        if self._thread is None or self._thread_loop is None:
            return
        self._thread_loop.call_soon_threadsafe(self._thread_loop.stop)
        self._thread.join(timeout=10)
        self._thread = None
        self._thread_loop = None

    def __enter__(self) -> EmbeddedServer:
        return self.start_in_thread()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_thread()


class SecurityConfigError(ValueError):
    """A TLS or authentication argument (or the file it names) the server cannot use."""


def _check_ca_file(path: Path) -> None:
    """``ValueError`` unless ``path`` holds at least one PEM certificate."""
    from cryptography import x509

    try:
        certs = x509.load_pem_x509_certificates(path.read_bytes())
    except ValueError:
        certs = []
    if not certs:
        raise ValueError(f"{path} holds no PEM certificate")


def _allowed_hosts(bind: listen.BindAddress, extra: Iterable[str]) -> tuple[str, ...]:
    """``extra`` plus, for a specific non-loopback bind, its address and the name it was
    given as."""
    if isinstance(extra, str):
        raise TypeError("allowed_hosts must be an iterable of host names, not one string")
    names = [str(name) for name in extra]
    if not bind.is_loopback and not bind.is_wildcard:
        names.extend([bind.address, bind.host])
    return tuple(dict.fromkeys(name for name in names if name))


def _new_loop() -> asyncio.AbstractEventLoop:
    if _LOOP == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """The fastest event loop available (uvloop when installed)."""
    return _new_loop()
