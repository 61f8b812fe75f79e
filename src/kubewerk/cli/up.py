"""``kubewerk up``: run the embedded control plane and write a kubeconfig for it."""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from kubewerk.cli import UsageError, one_line
from kubewerk.cli.file_options import check_input_file

DEFAULT_KUBECONFIG = Path(".kubewerk") / "kubeconfig"
DEFAULT_CONTEXT = "kubewerk"
# the defaults of kubewerk.apiserver.httpproto, repeated so that --help needs no server import
DEFAULT_MAX_HEADER_BYTES = 1 << 20
DEFAULT_READ_HEADER_TIMEOUT = 32.0
DEFAULT_IDLE_TIMEOUT = 90.0
DEFAULT_REQUEST_BODY_TIMEOUT = 60.0
# and of the store's and watch hub's byte bounds
DEFAULT_RETAIN_BYTES = 64 << 20
DEFAULT_MAX_BACKLOG_BYTES = 16 << 20
DEFAULT_SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/12"
DEFAULT_SERVICE_NODE_PORT_RANGE = "30000-32767"
INSECURE_BIND_FLAG = "--insecure-bind-non-loopback"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive whole number, not {text!r}"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, not {text!r}")
    return value


MAX_NODES = 5000
"""The most simulated Nodes: the largest cluster Kubernetes supports ("Considerations for
large clusters": no more than 5,000 nodes). 5,000 start in about 15 s here; an unbounded
count would allocate Nodes until memory ran out before the server even listened."""


def _node_count(text: str) -> int:
    """``--nodes`` (argparse type): a whole number from 1 to :data:`MAX_NODES`."""
    value = _positive_int(text)
    if value > MAX_NODES:
        raise argparse.ArgumentTypeError(
            f"at most {MAX_NODES} (the largest cluster Kubernetes supports), not {text!r}"
        )
    return value


def _context_name(text: str) -> str:
    """A kubeconfig entry name (argparse type): not empty, no surrounding blanks, no control
    characters (kubectl's ``--context`` could not name it)."""
    if not text or text != text.strip() or any(ord(c) < 0x20 or c == "\x7f" for c in text):
        raise argparse.ArgumentTypeError(
            f"expected a name without surrounding blanks or control characters, not {text!r}"
        )
    return text


def _non_negative_int(text: str) -> int:
    """A whole number >= 0 (argparse type): anything else is a usage error naming the flag."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, not {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of seconds, not {text!r}"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, not {text!r}")
    return value


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "up",
        help="run the embedded Kubernetes API server",
        description="Run the embedded Kubernetes-compatible API server "
        "and write a kubeconfig (context 'kubewerk', or --context NAME) that kubectl and "
        "any Kubernetes client can use. Stops on Ctrl-C / SIGTERM.",
    )
    parser.add_argument(
        "--store",
        default="memory",
        metavar="memory|sqlite:PATH",
        help="where objects live: 'memory' (default) or 'sqlite:PATH' (durable, survives restarts)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1); a non-loopback address needs "
        f"authentication (--tls, --token-auth-file) or {INSECURE_BIND_FLAG}",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=8001,
        help="port to listen on (default: 8001; 0 picks a free one)",
    )
    parser.add_argument(
        "--kubeconfig",
        default=str(DEFAULT_KUBECONFIG),
        metavar="PATH",
        help=f"where to write the kubeconfig (default: {DEFAULT_KUBECONFIG})",
    )
    parser.add_argument(
        "--context",
        type=_context_name,
        default=DEFAULT_CONTEXT,
        metavar="NAME",
        help=f"name of the kubeconfig's context, cluster and user (default: {DEFAULT_CONTEXT}); "
        "give each server its own to merge their kubeconfigs in one KUBECONFIG "
        "(kubectl keeps the first file's entry of a name)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")
    parser.add_argument(
        "--retain-events",
        type=_non_negative_int,
        default=100_000,
        metavar="N",
        help="keep at least the last N changes for watches and paginated lists (default: 100000)",
    )
    parser.add_argument(
        "--retain-seconds",
        type=_non_negative_seconds,
        default=3600.0,
        metavar="S",
        help="keep changes for at least S seconds (default: 3600)",
    )
    parser.add_argument(
        "--retain-bytes",
        type=_positive_int,
        default=DEFAULT_RETAIN_BYTES,
        metavar="BYTES",
        help="compact the change history as soon as it holds more than BYTES of encoded "
        f"objects (default: {DEFAULT_RETAIN_BYTES}, 64 MiB)",
    )
    parser.add_argument(
        "--watch-backlog-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_BACKLOG_BYTES,
        metavar="BYTES",
        help="close a watch whose client is not reading while more than BYTES "
        f"of its events wait (default: {DEFAULT_MAX_BACKLOG_BYTES}, 16 MiB; the client re-watches)",
    )
    parser.add_argument(
        INSECURE_BIND_FLAG,
        action="store_true",
        help="allow --host to be a non-loopback address although the server has no "
        "authentication: anyone who can reach the port can read and write everything",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests whose Host header names NAME (besides localhost and "
        "loopback addresses), and web pages served from NAME; repeatable",
    )
    parser.add_argument(
        "--max-header-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_HEADER_BYTES,
        metavar="BYTES",
        help="largest request line and headers; larger ones are answered "
        f"431 (default: {DEFAULT_MAX_HEADER_BYTES}, as kube-apiserver; Go adds 4096 bytes of slop)",
    )
    parser.add_argument(
        "--read-header-timeout",
        type=_positive_seconds,
        default=DEFAULT_READ_HEADER_TIMEOUT,
        metavar="S",
        help="close a connection whose request headers are not complete S seconds "
        f"after it opened or the request began (default: {DEFAULT_READ_HEADER_TIMEOUT:g})",
    )
    parser.add_argument(
        "--idle-timeout",
        type=_positive_seconds,
        default=DEFAULT_IDLE_TIMEOUT,
        metavar="S",
        help="close a keep-alive connection idle between requests for S seconds "
        f"(default: {DEFAULT_IDLE_TIMEOUT:g})",
    )
    parser.add_argument(
        "--request-body-timeout",
        type=_positive_seconds,
        default=DEFAULT_REQUEST_BODY_TIMEOUT,
        metavar="S",
        help="answer 504 and close when a request body is not complete S seconds "
        f"after its headers (default: {DEFAULT_REQUEST_BODY_TIMEOUT:g})",
    )
    parser.add_argument(
        "--max-connections",
        type=_positive_int,
        default=None,
        metavar="N",
        help="refuse (503, closed at once) connections beyond N open ones "
        "(default: the open-file limit less 128)",
    )
    parser.add_argument(
        "--service-cluster-ip-range",
        default=DEFAULT_SERVICE_CLUSTER_IP_RANGE,
        metavar="CIDR",
        help="where Services' cluster IPs come from, as kube-apiserver's flag "
        f"(default: {DEFAULT_SERVICE_CLUSTER_IP_RANGE}; the first address is default/kubernetes')",
    )
    parser.add_argument(
        "--service-node-port-range",
        default=DEFAULT_SERVICE_NODE_PORT_RANGE,
        metavar="BASE-MAX",
        help="where NodePort and LoadBalancer Services' node ports come from "
        f"(default: {DEFAULT_SERVICE_NODE_PORT_RANGE})",
    )
    sec = parser.add_argument_group(
        "security",
        "TLS and authentication as kube-apiserver's flags of the same names (see docs/security.md)",
    )
    sec.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with a CA and serving certificate generated on first start and kept "
        "beside the store (memory store: a private temporary directory); turns authentication "
        "on and writes a kubeconfig with an admin client certificate (group system:masters)",
    )
    sec.add_argument(
        "--tls-cert-file", metavar="PATH", help="serving certificate (PEM; implies --tls)"
    )
    sec.add_argument("--tls-private-key-file", metavar="PATH", help="its private key (PEM)")
    sec.add_argument(
        "--client-ca-file",
        metavar="PATH",
        help="also accept client certificates signed by these CAs (CN: user, O: groups)",
    )
    sec.add_argument(
        "--token-auth-file",
        metavar="PATH",
        help='static bearer tokens, kube\'s CSV: token,user,uid,"group1,group2"',
    )
    sec.add_argument(
        "--anonymous-auth",
        action="store_true",
        help="with authentication on, let requests without credentials in as system:anonymous "
        "(default: they get 401)",
    )
    sec.add_argument(
        "--authorization-mode",
        choices=("AlwaysAllow", "RBAC"),
        default="AlwaysAllow",
        help="who may do what (default: AlwaysAllow)",
    )
    sec.add_argument(
        "--encryption-provider-config",
        metavar="PATH",
        help="encrypt the resources it names at rest (kube's EncryptionConfiguration: aesgcm, "
        "secretbox, identity; SQLite store)",
    )
    sec.add_argument(
        "--audit-policy-file",
        metavar="PATH",
        help="kube's audit Policy: which requests the audit log records and at what level",
    )
    sec.add_argument(
        "--audit-log-path",
        metavar="PATH",
        help="write audit.k8s.io/v1 events as JSON lines here (with --audit-policy-file)",
    )
    sim = parser.add_argument_group(
        "simulated cluster",
        "with --simulate the server runs fake Nodes, a scheduler, kubelets and the workload "
        "controllers, so Deployments, StatefulSets, DaemonSets, Jobs, CronJobs, Services and "
        "claims behave as on a small cluster (see docs/simulate.md)",
    )
    sim.add_argument("--simulate", action="store_true", help="run the simulated cluster")
    sim.add_argument(
        "--nodes",
        type=_node_count,
        default=3,
        metavar="N",
        help=f"fake Nodes (default: 3; at most {MAX_NODES})",
    )
    sim.add_argument(
        "--node-cpu", default="4", metavar="QTY", help="each node's CPU capacity (default: 4)"
    )
    sim.add_argument(
        "--node-memory",
        default="16Gi",
        metavar="QTY",
        help="each node's memory capacity (default: 16Gi)",
    )
    sim.add_argument(
        "--node-pods",
        type=_positive_int,
        default=110,
        metavar="N",
        help="Pods each node can hold (default: 110)",
    )
    sim.add_argument(
        "--start-seconds",
        type=_non_negative_seconds,
        default=0.5,
        metavar="S",
        help="from a Pod's binding to Running and Ready (default: 0.5)",
    )
    sim.add_argument(
        "--run-seconds",
        type=_non_negative_seconds,
        default=1.0,
        metavar="S",
        help="how long Job Pods run before they succeed (default: 1)",
    )
    parser.set_defaults(func=run)


def _non_negative_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, not {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, not {text!r}")
    return value


def _simulation(args: argparse.Namespace) -> Any:
    """The ``SimulationConfig`` the flags ask for (None without ``--simulate``)."""
    if not args.simulate:
        return None
    from kubewerk.apiserver.simulate import SimulationConfig
    from kubewerk.schema.cel.library import parse_quantity

    for flag, value in (("--node-cpu", args.node_cpu), ("--node-memory", args.node_memory)):
        if parse_quantity(value) is None:
            raise UsageError(f"{flag} {value}: not a quantity (e.g. 4, 500m, 16Gi)")
    return SimulationConfig.with_nodes(
        args.nodes,
        cpu=args.node_cpu,
        memory=args.node_memory,
        pods=args.node_pods,
        start_seconds=args.start_seconds,
        run_seconds=args.run_seconds,
    )


def run(args: argparse.Namespace) -> int:
    from kubewerk.apiserver import listen
    from kubewerk.apiserver.audit import AuditPolicyError
    from kubewerk.apiserver.server import EmbeddedServer, SecurityConfigError, new_event_loop
    from kubewerk.apiserver.storage import EncryptionConfigError, StorageError
    from kubewerk.core.gcpolicy import tune_for_long_lived_data

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not (0 <= args.port <= 65535):
        raise UsageError(f"--port must be between 0 and 65535, not {args.port}")
    started = time.perf_counter()
    if (args.tls_cert_file is None) != (args.tls_private_key_file is None):
        raise UsageError("--tls-cert-file and --tls-private-key-file must be given together")
    authenticating = bool(
        args.tls or args.tls_cert_file or args.token_auth_file or args.client_ca_file
    )
    try:
        bind = listen.resolve(args.host)
        listen.check_bind(
            bind,
            allowed=args.insecure_bind_non_loopback or authenticating,
            opt_in=INSECURE_BIND_FLAG,
        )
    except ValueError as exc:
        raise UsageError(f"--host {args.host}: {exc}") from None
    for name in args.allow_host:
        if not name or any(c.isspace() or c in "/?#@" for c in name):
            raise UsageError(f"--allow-host {name!r}: not a host name or address")
    from kubewerk.apiserver.kinds.services import parse_cluster_ip_range, parse_node_port_range

    for flag, value, parse in (
        ("--service-cluster-ip-range", args.service_cluster_ip_range, parse_cluster_ip_range),
        ("--service-node-port-range", args.service_node_port_range, parse_node_port_range),
    ):
        try:
            parse(value)
        except ValueError as exc:
            raise UsageError(f"{flag} {value}: {exc}") from None
    simulate = _simulation(args)
    if (args.audit_policy_file is None) != (args.audit_log_path is None):
        raise UsageError("--audit-policy-file and --audit-log-path must be given together")
    for flag, path in (
        ("--tls-cert-file", args.tls_cert_file),
        ("--tls-private-key-file", args.tls_private_key_file),
        ("--client-ca-file", args.client_ca_file),
        ("--token-auth-file", args.token_auth_file),
        ("--encryption-provider-config", args.encryption_provider_config),
        ("--audit-policy-file", args.audit_policy_file),
    ):
        check_input_file(flag, path)
    if args.audit_log_path is not None and os.path.isdir(args.audit_log_path):
        raise UsageError(f"--audit-log-path {args.audit_log_path}: is a directory, not a file")
    extra: dict[str, Any] = {}
    if args.encryption_provider_config is not None:
        extra["encryption_config"] = args.encryption_provider_config
    try:
        server = EmbeddedServer(
            args.store,
            simulate=simulate,
            host=args.host,
            port=args.port,
            log_requests=args.verbose,
            retain_events=args.retain_events,
            retain_seconds=args.retain_seconds,
            retain_bytes=args.retain_bytes,
            watch_backlog_bytes=args.watch_backlog_bytes,
            insecure_bind_non_loopback=args.insecure_bind_non_loopback,
            allowed_hosts=args.allow_host,
            max_header_bytes=args.max_header_bytes,
            read_header_timeout=args.read_header_timeout,
            idle_timeout=args.idle_timeout,
            request_body_timeout=args.request_body_timeout,
            max_connections=args.max_connections,
            service_cluster_ip_range=args.service_cluster_ip_range,
            service_node_port_range=args.service_node_port_range,
            tls=args.tls,
            tls_cert_file=args.tls_cert_file,
            tls_private_key_file=args.tls_private_key_file,
            client_ca_file=args.client_ca_file,
            token_auth_file=args.token_auth_file,
            anonymous_auth=args.anonymous_auth,
            authorizer=args.authorization_mode,
            audit_policy_file=args.audit_policy_file,
            audit_log_path=args.audit_log_path,
            **extra,
        )
    except SecurityConfigError as exc:
        raise UsageError(str(exc)) from None
    except AuditPolicyError as exc:
        raise UsageError(f"--audit-policy-file: {one_line(str(exc))}") from None
    except EncryptionConfigError as exc:
        raise UsageError(f"--encryption-provider-config: {one_line(str(exc))}") from None
    except (ValueError, StorageError) as exc:
        raise UsageError(f"--store {args.store}: {one_line(str(exc))}") from None
    except OSError as exc:  # a file the server opens at construction (the audit log)
        where = f"{exc.filename}: " if exc.filename else ""
        raise UsageError(f"{where}{exc.strerror or exc}") from None

    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    stop = asyncio.Event()

    async def main() -> int:
        try:
            await server.start()
        except OSError as exc:
            print(
                f"kubewerk: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return 2  # the address asked for (a port taken, a host not ours): a usage error
        # start-up done: freeze its objects, full collections after 700k new containers
        tune_for_long_lived_data()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            path = server.write_kubeconfig(args.kubeconfig, args.context)
        except OSError as exc:
            print(
                f"kubewerk: error: --kubeconfig {args.kubeconfig}: "
                f"cannot write it: {exc.strerror or exc}",
                file=sys.stderr,
            )
            await server.stop()
            return 2
        elapsed = (time.perf_counter() - started) * 1000
        where = server.url
        if server.bind.is_wildcard:
            where += f" (bound to {server.bind.address})"
        print(
            f"kubewerk API server listening on {where} "
            f"(store: {args.store}, ready in {elapsed:.0f} ms)"
        )
        if server.simulation is not None:
            print(
                f"simulated cluster: {len(server.simulation.node_names)} nodes "
                f"({args.node_cpu} CPU, {args.node_memory}, {args.node_pods} pods each)"
            )
        if server.authentication is not None:
            pki = server.pki
            who = (
                "admin client certificate, group system:masters"
                if pki is not None and pki.admin is not None and pki.ca is not None
                else "no credentials: add a token or client certificate"
            )
            print(f"authentication on ({who}); authorization: {args.authorization_mode}")
            if pki is not None and pki.directory is not None and server._temp_pki is None:
                print(f"TLS material in {pki.directory}")
        print(f"kubeconfig written to {path} (context: {args.context})")
        print("use it with:")
        print(f"  export KUBECONFIG={path.resolve()}")
        print("  kubectl get namespaces")
        print("press Ctrl-C to stop", flush=True)
        await stop.wait()
        print("stopping...", file=sys.stderr, flush=True)
        await server.stop()
        return 0

    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()
