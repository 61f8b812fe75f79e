"""``kubewerk up``: run the embedded control plane and write a kubeconfig for it."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any

from kubewerk.cli import UsageError

DEFAULT_KUBECONFIG = Path(".kubewerk") / "kubeconfig"


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "up",
        help="run the embedded Kubernetes API server",
        description="Run the embedded Kubernetes-compatible API server and write a kubeconfig "
        "(context 'kubewerk') that kubectl and any Kubernetes client can use. Stops on Ctrl-C / SIGTERM.",
    )
    parser.add_argument("--store", default="memory", metavar="memory|sqlite:PATH",
                        help="where objects live: 'memory' (default) or 'sqlite:PATH' (durable, survives restarts)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8001, help="port to listen on (default: 8001; 0 picks a free one)")
    parser.add_argument("--kubeconfig", default=str(DEFAULT_KUBECONFIG), metavar="PATH",
                        help=f"where to write the kubeconfig (default: {DEFAULT_KUBECONFIG})")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every request")
    parser.add_argument("--retain-events", type=int, default=100_000, metavar="N",
                        help="keep at least the last N changes for watches and paginated lists (default: 100000)")
    parser.add_argument("--retain-seconds", type=float, default=3600.0, metavar="S",
                        help="keep changes for at least S seconds (default: 3600)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from kubewerk.apiserver.server import EmbeddedServer, new_event_loop
    from kubewerk.apiserver.storage import StorageError

    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if not (0 <= args.port <= 65535):
        raise UsageError(f"--port must be between 0 and 65535, not {args.port}")
    started = time.perf_counter()
    try:
        server = EmbeddedServer(args.store, host=args.host, port=args.port, log_requests=args.verbose,
                                retain_events=args.retain_events, retain_seconds=args.retain_seconds)
    except (ValueError, StorageError) as exc:
        raise UsageError(f"--store {args.store}: {exc}") from None

    loop = new_event_loop()
    asyncio.set_event_loop(loop)
    stop = asyncio.Event()

    async def main() -> int:
        try:
            await server.start()
        except OSError as exc:
            print(f"kubewerk: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
            return 1
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        path = server.write_kubeconfig(args.kubeconfig)
        elapsed = (time.perf_counter() - started) * 1000
        print(f"kubewerk API server listening on {server.url} (store: {args.store}, ready in {elapsed:.0f} ms)")
        print(f"kubeconfig written to {path} (context: kubewerk)")
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
