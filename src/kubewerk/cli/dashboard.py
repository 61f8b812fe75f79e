"""``kubewerk dashboard``: the health dashboard of a cluster in the browser.

Reads the cluster of the kubeconfig's current context (``--kubeconfig``, ``--context``;
``kubewerk up`` writes one for the embedded server), needs only read access (the
``view`` role: without CRD access the kinds come from discovery), and serves the page
on ``http://127.0.0.1:PORT/`` until Ctrl-C. ``--metrics-url`` (repeatable) adds an
operator's ``/metrics`` for the reconcile charts. Binding to a non-loopback address
needs ``--insecure-bind-non-loopback``: the page shows every object to whoever reaches it.

Exit codes: 0 after Ctrl-C/SIGTERM, 2 for usage errors (unusable kubeconfig, a port in
use, an unreachable server at start).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any

from kubewerk.cli import UsageError

__all__ = ["register", "run_dashboard"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "dashboard",
        help="serve the health dashboard of a cluster (read-only)",
        description="Serve the health dashboard of the cluster of the current kubeconfig "
        "context: kinds and their phases, stuck objects first with their reasons and "
        "Events, each object's story, the dependency graph, an operator's reconcile "
        "metrics; updated live through watches. Read-only; loopback only by default.",
    )
    p.add_argument(
        "--kubeconfig", metavar="PATH", help="kubeconfig (default: $KUBECONFIG or ~/.kube/config)"
    )
    p.add_argument(
        "--context", metavar="NAME", help="kubeconfig context (default: the current one)"
    )
    p.add_argument("-n", "--namespace", metavar="NAME", help="only this namespace (default: all)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument(
        "--port", type=int, default=8090, help="port (default: 8090; 0 picks a free one)"
    )
    p.add_argument(
        "--metrics-url",
        action="append",
        default=[],
        metavar="URL",
        help="an operator's /metrics (http://...), for the reconcile charts; repeatable",
    )
    p.add_argument(
        "--insecure-bind-non-loopback",
        action="store_true",
        help="allow --host to be a non-loopback address (anyone who reaches it sees the cluster)",
    )
    p.set_defaults(func=run_dashboard)


async def _serve(args: argparse.Namespace) -> int:
    from kubewerk.client import ApiError, Client, ConfigError, ServerUnreachable, load_config
    from kubewerk.observe.server import DashboardServer

    try:
        config = load_config(args.kubeconfig, args.context)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    name = config.context or "in-cluster"
    async with Client(config) as client:
        try:
            await client.request("GET", "/version")
        except (ServerUnreachable, ApiError) as exc:
            raise UsageError(f"cluster {name}: {exc}") from None
        try:
            server = DashboardServer(
                client,
                host=args.host,
                port=args.port,
                namespace=args.namespace,
                metrics=args.metrics_url,
                name=name,
                allow_non_loopback=args.insecure_bind_non_loopback,
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        try:
            await server.start()
        except OSError as exc:
            raise UsageError(str(exc.strerror or exc)) from None
        print(f"kubewerk dashboard of {name} on {server.url} (Ctrl-C to stop)", file=sys.stderr)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await server.stop()
    return 0


def run_dashboard(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: not a port number")
    return asyncio.run(_serve(args))
