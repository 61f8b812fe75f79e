"""``kubewerk run MODULE:MANAGER``: run an operator against the current kubeconfig context.

``MANAGER`` names a :class:`kubewerk.runtime.Manager` in ``MODULE`` (imported with the
current directory on ``sys.path``), a :class:`kubewerk.lifecycle.Platform` (its manager
runs), or a function returning either. Command-line options
override the manager's settings only when given. Logs go to stderr; SIGTERM/SIGINT shut
down gracefully. Exit codes: 0 after a clean shutdown, 1 when the server is unreachable,
rejects the credentials, or the leader Lease was lost, 2 for usage errors (bad target,
unusable kubeconfig).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import logging
import os
import sys
from typing import Any

from kubewerk.cli import UsageError
from kubewerk.cli.targets import takes_no_arguments


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run",
        help="run an operator (MODULE:MANAGER) against a cluster",
        description="Run an operator's Manager against the current kubeconfig context "
        "(or --kubeconfig / --context; in a pod, the service account), with logs and "
        "/healthz, /readyz and /metrics probes.",
    )
    p.add_argument("target", metavar="MODULE:MANAGER", help="e.g. myoperator.main:manager")
    p.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)",
    )
    p.add_argument("--context", help="kubeconfig context (default: the current context)")
    p.add_argument(
        "--namespace",
        "-n",
        action="append",
        dest="namespaces",
        metavar="NS",
        help="watch only this namespace (repeatable; default: all namespaces)",
    )
    p.add_argument(
        "--probe-address",
        metavar="HOST:PORT",
        help="address for /healthz, /readyz and /metrics (default :8081; 0 disables)",
    )
    p.add_argument(
        "--leader-elect",
        action="store_true",
        default=None,
        help="run controllers only while holding a Lease",
    )
    p.add_argument("--leader-election-id", metavar="NAME", help="the Lease name")
    p.add_argument("--leader-election-namespace", metavar="NS", help="the Lease namespace")
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="lowest level of the log lines written to stderr (default: info)",
    )
    p.set_defaults(func=run)


def _manager_of(obj: Any) -> Any:
    """A Platform's manager; anything else as it is."""
    from kubewerk.lifecycle.platform import Platform

    return obj.manager if isinstance(obj, Platform) else obj


def load_target(target: str) -> Any:
    """Import ``module:attr`` and return the Manager (calling a factory if needed; a
    Platform gives its manager)."""
    from kubewerk.runtime.manager import Manager

    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"target {target!r} must look like MODULE:MANAGER")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise UsageError(f"cannot import module {module_name!r}") from None
        raise
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    obj = _manager_of(obj)
    if not isinstance(obj, Manager) and takes_no_arguments(obj):
        obj = _manager_of(obj())
    if not isinstance(obj, Manager) and not inspect.isawaitable(obj):
        raise UsageError(
            f"{target} is not a kubewerk.runtime.Manager or kubewerk.lifecycle.Platform "
            f"(got {type(obj).__name__})"
        )
    return obj


def _apply_options(mgr: Any, args: argparse.Namespace) -> None:
    if args.kubeconfig is not None:
        mgr.kubeconfig = args.kubeconfig
    if args.context is not None:
        mgr.kube_context = args.context
    if args.namespaces:
        mgr.namespaces = tuple(args.namespaces)
    if args.probe_address is not None:
        if args.probe_address in ("0", ""):
            mgr.probe_port = None
        else:
            host, _, port = args.probe_address.rpartition(":")
            try:
                number = int(port)
            except ValueError:
                number = -1
            if not 0 <= number <= 65535:
                raise UsageError(
                    f"--probe-address {args.probe_address!r} must be HOST:PORT "
                    "(PORT a number from 0 to 65535)"
                )
            mgr.probe_port = number
            mgr.probe_host = host or "0.0.0.0"
    if args.leader_elect:
        mgr.leader_election = True
    if args.leader_election_id:
        mgr.leader_election_id = args.leader_election_id
    if args.leader_election_namespace:
        mgr.leader_election_namespace = args.leader_election_namespace


def run(args: argparse.Namespace) -> int:
    from kubewerk.client.config import load_config
    from kubewerk.client.errors import ApiError, ConfigError, ServerUnreachable
    from kubewerk.core.gcpolicy import tune_for_long_lived_data
    from kubewerk.runtime.manager import CacheSyncTimeout, KindNotServed, LeaderElectionLost

    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    mgr = load_target(args.target)
    if inspect.isawaitable(mgr):
        mgr = _manager_of(asyncio.run(_await(mgr)))
    _apply_options(mgr, args)
    if not mgr.has_client:
        try:
            load_config(mgr.kubeconfig, mgr.kube_context)  # validate before starting anything
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
    # the operator's module is loaded: freeze it; informer caches grow without full
    # collections of the whole heap at every 25% of growth
    tune_for_long_lived_data()
    try:
        _run_loop(mgr)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    except ServerUnreachable as exc:
        print(f"kubewerk: error: {exc}", file=sys.stderr)
        return 1
    except ApiError as exc:
        print(
            f"kubewerk: error: the API server refused the operator: {exc.message}", file=sys.stderr
        )
        return 1
    except (LeaderElectionLost, CacheSyncTimeout, KindNotServed) as exc:
        print(f"kubewerk: error: {exc}", file=sys.stderr)
        return 1
    return 0


async def _await(obj: Any) -> Any:
    return await obj


def _run_loop(mgr: Any) -> None:
    try:
        import uvloop

        uvloop.run(mgr.run_until_signal())
    except ImportError:  # pragma: no cover - uvloop is a dependency on POSIX
        asyncio.run(mgr.run_until_signal())
