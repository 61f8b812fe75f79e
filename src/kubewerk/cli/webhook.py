"""``kubewerk webhook``: development certificates and a standalone webhook server.

``kubewerk webhook certs --service NAME --namespace NS [--out DIR] [--days N] [--ip ADDR]
[--dns NAME]`` writes a CA (``ca.crt``, ``ca.key``) and a serving certificate
(``tls.crt``, ``tls.key``) for the Service ``NAME`` in ``NS`` into ``DIR`` (default
``./webhook-certs``; every file 0600) and prints the ``caBundle`` (the CA's PEM in
base64) on standard output, alone on its line, so that ``CA=$(kubewerk webhook certs
...)`` captures it; the files written go to standard error.

``kubewerk webhook serve MODULE:APP [--host H] [--port P] [--cert F --key F]
[--client-ca F]`` serves the :class:`kubewerk.webhook.WebhookApp` named ``APP`` in
``MODULE`` (imported with the current directory on ``sys.path``; ``APP`` may be a
function returning the app) until SIGTERM or SIGINT, over TLS when a certificate is
given (reloaded when its files change).

Exit codes: 0 success (for ``serve``: after a signal), 2 usage errors — a bad target,
certificate files that cannot be loaded, an address that cannot be bound, an output
directory that cannot be written — each printed as one ``kubewerk: error:`` line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import importlib
import ipaddress
import logging
import os
import signal
import sys
from typing import Any

from kubewerk.cli import UsageError, input_limit
from kubewerk.cli.file_options import check_input_file
from kubewerk.cli.targets import takes_no_arguments


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "webhook",
        help="webhook certificates and a standalone webhook server",
        description="Admission and conversion webhooks: development certificates and a "
        "standalone server for a kubewerk.webhook.WebhookApp.",
    )
    actions = parser.add_subparsers(dest="webhook_command", metavar="ACTION")

    certs = actions.add_parser(
        "certs",
        help="make a CA and a serving certificate; print the caBundle",
        description="Write a CA (ca.crt, ca.key) and a serving certificate (tls.crt, tls.key) "
        "for a webhook Service, every file 0600, and print the caBundle (base64 of ca.crt). "
        "SANs: NAME.NS.svc, NAME.NS.svc.cluster.local, localhost, 127.0.0.1, ::1 and the "
        "--ip/--dns extras.",
    )
    certs.add_argument("--service", required=True, metavar="NAME", help="the webhook's Service")
    certs.add_argument("--namespace", required=True, metavar="NS", help="the Service's namespace")
    certs.add_argument(
        "--out",
        default="webhook-certs",
        metavar="DIR",
        help="output directory (default: %(default)s)",
    )
    certs.add_argument(
        "--days", type=int, default=365, metavar="N", help="validity in days (default: %(default)s)"
    )
    certs.add_argument(
        "--ip", action="append", default=[], metavar="ADDR", help="an extra IP SAN (repeatable)"
    )
    certs.add_argument(
        "--dns", action="append", default=[], metavar="NAME", help="an extra DNS SAN (repeatable)"
    )
    certs.set_defaults(func=run_certs)

    serve = actions.add_parser(
        "serve",
        help="serve a WebhookApp (MODULE:APP)",
        description="Serve the kubewerk.webhook.WebhookApp APP of MODULE until SIGTERM/SIGINT; "
        "over TLS with --cert/--key (reloaded when the files change), requiring client "
        "certificates signed by --client-ca when given.",
    )
    serve.add_argument("target", metavar="MODULE:APP", help="e.g. myoperator.webhooks:app")
    serve.add_argument("--host", default="0.0.0.0", help="address to bind (default: %(default)s)")
    serve.add_argument(
        "--port", type=int, default=9443, help="port (default: %(default)s; 0: a free one)"
    )
    serve.add_argument("--cert", metavar="FILE", help="serving certificate (PEM)")
    serve.add_argument("--key", metavar="FILE", help="its private key (PEM)")
    serve.add_argument("--client-ca", metavar="FILE", help="require client certificates of this CA")
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="lowest level of the log lines written to stderr (default: info)",
    )
    input_limit.add_option(serve, "each certificate and key file (a regular file)")
    serve.set_defaults(func=run_serve)
    parser.set_defaults(func=lambda args: _help(parser))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _check_days(days: int) -> None:
    """``--days``: at least 1, and not so many that the certificates would expire after
    9999-12-31 23:59:59 UTC, the last time X.509 can express (RFC 5280's GeneralizedTime;
    a larger count was an OverflowError traceback)."""
    if days < 1:
        raise UsageError(f"--days must be positive, not {days}")
    try:
        datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=days)
    except OverflowError:
        raise UsageError(
            f"--days {days}: the certificates would expire after 9999-12-31, "
            "the last date X.509 can express"
        ) from None


def run_certs(args: argparse.Namespace) -> int:
    from kubewerk.webhook.certs import make_certificates, write_certificates

    for address in args.ip:
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise UsageError(f"--ip {address!r} is not an IP address") from None
    _check_days(args.days)
    try:
        certs = make_certificates(
            args.service, args.namespace, days=args.days, extra_names=[*args.ip, *args.dns]
        )
    except ValueError as exc:
        if args.days < 1:
            raise UsageError(f"--days must be positive, not {args.days}") from None
        raise UsageError(str(exc)) from None
    try:
        paths = write_certificates(certs, args.out)
    except OSError as exc:
        raise UsageError(
            f"cannot write certificates to {args.out}: {exc.strerror or exc}"
        ) from None
    for role, path in paths.items():
        print(f"wrote {path} ({role.replace('_', ' ')})", file=sys.stderr)
    print(f"SANs: {', '.join((*certs.dns_names, *certs.ip_addresses))}", file=sys.stderr)
    print(certs.ca_bundle)
    return 0


def load_app(target: str) -> Any:
    """Import ``module:attr`` and return the WebhookApp (calling a factory if needed)."""
    from kubewerk.webhook.app import WebhookApp

    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"target {target!r} must look like MODULE:APP")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise UsageError(f"cannot import module {module_name!r}") from None
        raise
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not isinstance(obj, WebhookApp) and takes_no_arguments(obj):
        obj = obj()
    if not isinstance(obj, WebhookApp):
        raise UsageError(
            f"{target} is not a kubewerk.webhook.WebhookApp (got {type(obj).__name__})"
        )
    return obj


def run_serve(args: argparse.Namespace) -> int:
    from kubewerk.webhook.server import WebhookServer

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    app = load_app(args.target)
    if not app.paths:
        raise UsageError(f"{args.target} has no webhooks registered")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not between 0 and 65535")
    for flag, path in (("--cert", args.cert), ("--key", args.key), ("--client-ca", args.client_ca)):
        check_input_file(flag, path)
    try:
        server = WebhookServer(
            app,
            host=args.host,
            port=args.port,
            cert_file=args.cert,
            key_file=args.key,
            client_ca_file=args.client_ca,
        )
    except ValueError as exc:
        raise UsageError(
            str(exc)
            .replace("cert_file", "--cert")
            .replace("key_file", "--key")
            .replace("client_ca_file", "--client-ca")
        ) from None
    try:
        asyncio.run(_serve_until_signal(server))
    except OSError as exc:  # ssl.SSLError too; the text names the files or the address
        raise UsageError(exc.strerror or str(exc)) from None
    return 0


async def _serve_until_signal(server: Any) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
    try:
        await server.start()
        print(f"serving {', '.join(server.app.paths)} on {server.url}", file=sys.stderr, flush=True)
        await stop.wait()
    finally:
        await server.stop()
        for sig in installed:
            loop.remove_signal_handler(sig)
