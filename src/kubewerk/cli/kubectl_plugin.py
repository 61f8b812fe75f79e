"""``kubectl-kubewerk``: the kubectl plugin (installed as an entry point, so ``kubectl
kubewerk ...`` finds it on the PATH).

Subcommands:

- ``health [-o table|json]`` — the dashboard's summary: per kind the objects, Ready
  counts, phases and stuck count, then the stuck objects with their reason (all
  namespaces unless ``-n``). Exit code 1 when something is stuck.
- ``why KIND/NAME [-o text|json]`` — why one object is not Ready: phase, stuck reasons,
  conditions, its dependencies (with each one's own problem), dependents, last Warning
  Events and Events. ``KIND`` is a kind, plural or ``kind.group`` as kubectl takes
  them; the namespace is ``-n`` or the context's. Exit code 0 when it is Ready, 1 when
  it is not (or not found).
- ``graph [kubewerk graph's options]`` — the dependency graph of the cluster
  (``kubewerk graph --cluster``).
- ``lint [PATH...] [kubewerk lint's options]`` — lint the CRDs installed in the
  cluster (``kubewerk lint --cluster``), or the given files.

kubectl's flags are honoured wherever they appear after the plugin's name (kubectl
passes every argument after it on unchanged, and refuses flags before it):
``--kubeconfig``, ``--context``, ``-n/--namespace``, ``-A/--all-namespaces``;
``--cache-dir``, ``--request-timeout`` and ``-v`` are accepted and ignored.
Without ``--kubeconfig`` the client reads ``$KUBECONFIG`` (which kubectl
passes on) or ``~/.kube/config``, and uses its current context, as kubectl does.
Exit code 2 for usage errors and an unusable kubeconfig or unreachable cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubewerk.cli import UsageError

__all__ = ["KubectlFlags", "main", "split_kubectl_flags"]

PROG = "kubectl kubewerk"

_VALUE_FLAGS = {
    "--kubeconfig": "kubeconfig",
    "--context": "context",
    "-n": "namespace",
    "--namespace": "namespace",
}
_IGNORED_VALUE_FLAGS = frozenset({"--cache-dir", "--request-timeout", "-v", "--v"})


@dataclass
class KubectlFlags:
    """kubectl's flags found among the plugin's arguments."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    all_namespaces: bool = False
    rest: list[str] = field(default_factory=list)
    """The other arguments, in order."""


def split_kubectl_flags(argv: Sequence[str]) -> KubectlFlags:
    """Take kubectl's flags (``--flag value``, ``--flag=value``, ``-nNS``) out of
    ``argv``, wherever they are; everything after ``--`` is left alone."""
    flags = KubectlFlags()
    i = 0
    args = list(argv)
    while i < len(args):
        arg = args[i]
        if arg == "--":
            flags.rest.extend(args[i:])
            break
        name, eq, value = arg.partition("=")
        if name in ("-A", "--all-namespaces") and not eq:
            flags.all_namespaces = True
        elif name in _VALUE_FLAGS or name in _IGNORED_VALUE_FLAGS:
            if not eq:
                if i + 1 >= len(args):
                    raise UsageError(f"flag needs an argument: {name}")
                i += 1
                value = args[i]
            if name in _VALUE_FLAGS:
                setattr(flags, _VALUE_FLAGS[name], value)
        elif arg.startswith("-n") and len(arg) > 2 and not arg.startswith("--"):
            flags.namespace = arg[2:]
        elif arg.startswith("-v") and arg[2:].isdigit():
            pass
        else:
            flags.rest.append(arg)
        i += 1
    return flags


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="kubewerk's views of the cluster of kubectl's current context.",
        epilog="kubectl's --kubeconfig, --context, -n/--namespace and -A are honoured.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    health = sub.add_parser("health", help="kinds, Ready counts and stuck objects")
    health.add_argument(
        "-o",
        "--output",
        choices=("table", "json"),
        default="table",
        help="output format (default: table)",
    )
    why = sub.add_parser("why", help="why an object is not Ready")
    why.add_argument("target", metavar="KIND/NAME", help="the object, e.g. databases/orders")
    why.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="output format (default: text)",
    )
    sub.add_parser("graph", help="the dependency graph (kubewerk graph --cluster)", add_help=False)
    sub.add_parser("lint", help="lint the cluster's CRDs (kubewerk lint --cluster)", add_help=False)
    return parser


def _one_line(text: str) -> str:
    return " ".join(text.split())


async def _with_client(flags: KubectlFlags, body: Any) -> Any:
    from kubewerk.client import ApiError, Client, ConfigError, ServerUnreachable, load_config

    try:
        config = load_config(flags.kubeconfig, flags.context)
    except ConfigError as exc:
        raise UsageError(_one_line(str(exc))) from None
    where = f"cluster {config.context or 'in-cluster'}"
    try:
        async with Client(config) as client:
            return await body(client, config)
    except ServerUnreachable as exc:
        raise UsageError(f"{where}: {_one_line(str(exc))}") from None
    except ApiError as exc:
        text = exc.message or f"the API server answered {exc.code} {exc.reason}"
        raise UsageError(f"{where}: {_one_line(text)}") from None


def _health(flags: KubectlFlags, output: str) -> int:
    from kubewerk.observe.text import health_table
    from kubewerk.observe.views import summary
    from kubewerk.observe.watcher import snapshot

    async def body(client: Any, config: Any) -> dict[str, Any]:
        namespace = None if flags.all_namespaces else flags.namespace
        state = await snapshot(
            client, namespace=namespace, name=config.context or "in-cluster", discovery=False
        )
        return summary(state)

    doc: dict[str, Any] = asyncio.run(_with_client(flags, body))
    if output == "json":
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(health_table(doc))
    return 1 if doc["stuckTotal"] else 0


def _why(flags: KubectlFlags, target: str, output: str) -> int:
    from kubewerk.lifecycle.depgraph import NodeId
    from kubewerk.observe.text import safe, why_screen
    from kubewerk.observe.views import lookup_kind, object_view
    from kubewerk.observe.watcher import snapshot

    kind_text, slash, name = target.partition("/")
    if not slash or not kind_text or not name or "/" in name:
        raise UsageError(f"{target}: give the object as KIND/NAME (e.g. database/main)")

    async def body(client: Any, config: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        # the whole cluster: dependencies may live in other namespaces or be cluster-scoped
        state = await snapshot(client, name=config.context or "in-cluster")
        found = lookup_kind(state, kind_text)
        for warning in found.warnings:  # kubectl's, for a short name several kinds declare
            print(f"Warning: {safe(warning)}", file=sys.stderr)
        key = found.key
        if key is None:
            raise UsageError(safe(found.error or ""))
        info = state.kinds[key]
        namespace = (flags.namespace or config.namespace) if info.rt.namespaced else None
        node = NodeId(key.group, key.kind, namespace, name)
        view = object_view(state, node)
        deps = {
            d["id"]: object_view(
                state, NodeId(d["group"], d["kind"], d["namespace"] or None, d["name"])
            )
            for d in view["dependencies"]
            if d["present"]
        }
        return view, deps

    view, deps = asyncio.run(_with_client(flags, body))
    if output == "json":
        doc = {**view, "dependencyViews": deps}
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(why_screen(view, deps))
    if view["object"] is None:
        return 1
    return 0 if view["ready"] == "True" else 1


def _delegate(command: str, flags: KubectlFlags, rest: list[str]) -> int:
    from kubewerk.cli import build_parser
    from kubewerk.cli import main as kubewerk_main

    argv = [command]
    if command == "graph" or (
        "-h" not in rest
        and "--help" not in rest
        # lint: the cluster's CRDs unless files are named (argparse errors exit 2 here)
        and not build_parser(command).parse_args([command, *rest]).paths
    ):
        argv.append("--cluster")
    if flags.kubeconfig:
        argv += ["--kubeconfig", flags.kubeconfig]
    if flags.context:
        argv += ["--context", flags.context]
    if command == "graph" and flags.namespace and not flags.all_namespaces:
        argv += ["--namespace", flags.namespace]
    return kubewerk_main([*argv, *rest])


def run(argv: Sequence[str]) -> int:
    """The plugin with ``argv`` (without the program name); returns the exit code."""
    flags = split_kubectl_flags(argv)
    rest = flags.rest
    if rest and rest[0] in ("graph", "lint"):
        return _delegate(rest[0], flags, rest[1:])
    parser = _parser()
    args = parser.parse_args(rest)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "health":
        return _health(flags, args.output)
    return _why(flags, args.target, args.output)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``kubectl-kubewerk``."""
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
