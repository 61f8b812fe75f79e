"""``kubewerk diff`` and ``kubewerk sync``: many clusters (see docs/sync.md).

``kubewerk diff SRC [DST] [--context CTX] [--kubeconfig FILE] [-n NS] [--status]
[-o text|json|summary] [--color auto|always|never]`` compares two sources semantically
(SRC/DST: a manifest file or directory, ``git:REV:PATH``, ``cluster:[CONTEXT]`` or an
``http(s)://`` URL; without DST, the cluster of ``--context``, or the current context).
Exit 0 when equal, 1 when different, 2 on errors.

``kubewerk sync --from SRC --to CLUSTER [--to CLUSTER ...] [-n NS] --policy
git-wins|cluster-wins|merge [--prune] [--dry-run] [-o text|json]`` brings each cluster to
the source (or, cluster-wins, the source's manifests to the one cluster); ``--watch``
then keeps watching for drift (``--self-heal`` reverts it). ``-n``: manifests without a
namespace go to NS, and one naming another namespace is refused (exit 2) before anything
is written anywhere. CLUSTER is a kubeconfig
context, ``cluster:CONTEXT`` or a URL. Exit 0 when every target synced, 1 when one
failed or was unreachable (or had conflicts), 2 on usage errors or unreadable sources.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

import orjson

from kubewerk.cli import UsageError, input_limit, one_line


def register(sub: Any) -> None:
    diff = sub.add_parser(
        "diff",
        help="semantic diff of manifests, Git revisions and clusters",
        description="Compare two sources object by object, ignoring server-managed fields, "
        "defaults, set and map-list order, and quantity spelling.",
    )
    diff.add_argument("src", metavar="SRC", help="DIR|FILE, git:REV:PATH, cluster:[CTX] or URL")
    diff.add_argument(
        "dst",
        metavar="DST",
        nargs="?",
        default=None,
        help="as SRC (default: the cluster of --context)",
    )
    diff.add_argument("--context", default=None, help="kubeconfig context of the cluster side")
    diff.add_argument(
        "--kubeconfig",
        default=None,
        metavar="FILE",
        help="kubeconfig for cluster: sides (default: $KUBECONFIG or ~/.kube/config)",
    )
    diff.add_argument(
        "-n",
        "--namespace",
        default=None,
        metavar="NS",
        help="compare only this namespace's objects; manifests without a namespace are in it "
        "(default: the cluster side's context namespace), one naming another is an error",
    )
    diff.add_argument("--status", action="store_true", help="compare status too")
    diff.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "summary"),
        default="text",
        help="output format (default: text); exit code 1 when the sides differ",
    )
    diff.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="color the text output (default: auto: on a terminal, unless NO_COLOR is set)",
    )
    input_limit.add_option(diff, "each manifest file or pipe")
    diff.set_defaults(func=run_diff)

    sync = sub.add_parser(
        "sync",
        help="bring clusters to a source under a conflict policy; watch for drift",
        description="Apply a source's objects to clusters in dependency order "
        "(git-wins / merge), or write a cluster's state back (cluster-wins).",
    )
    sync.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="SRC",
        help="the manifests: DIR|FILE, git:REV:PATH, or a cluster (cluster:CTX or a URL)",
    )
    sync.add_argument(
        "--to",
        dest="targets",
        action="append",
        required=True,
        metavar="CLUSTER",
        help="a kubeconfig context name, cluster:CONTEXT or a URL (repeatable)",
    )
    sync.add_argument(
        "--policy",
        choices=("git-wins", "cluster-wins", "merge"),
        default="git-wins",
        help="who wins where source and cluster differ (default: git-wins; see docs/sync.md)",
    )
    sync.add_argument(
        "-n",
        "--namespace",
        default=None,
        metavar="NS",
        help="sync only this namespace's objects; manifests without a namespace go to it "
        "(default: each target's context namespace), one naming another is an error "
        "(nothing is written)",
    )
    sync.add_argument(
        "--prune", action="store_true", help="delete what a sync made and the source dropped"
    )
    sync.add_argument("--dry-run", action="store_true", help="write nothing (the server's dry run)")
    sync.add_argument(
        "--kubeconfig",
        default=None,
        metavar="FILE",
        help="kubeconfig (default: $KUBECONFIG or ~/.kube/config)",
    )
    sync.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="output format (default: text)",
    )
    sync.add_argument(
        "--watch", action="store_true", help="after syncing, report drift until stopped"
    )
    sync.add_argument("--self-heal", action="store_true", help="with --watch: revert drift")
    sync.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="with --watch: serve kubewerk_drift_objects on this port",
    )
    input_limit.add_option(sync, "each manifest file or pipe")
    sync.set_defaults(func=run_sync)


def _cluster_spec(text: str) -> str:
    from kubewerk.sync.sources import is_cluster_spec

    return text if is_cluster_spec(text) else f"cluster:{text}"


def _colour(args: argparse.Namespace) -> bool:
    if args.color == "always":
        return True
    if args.color == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty()


def _short(value: Any) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= 120 else text[:117] + "..."


def render_text(report: Any, colour: bool) -> str:
    """The human form: one block per differing object, then the summary."""
    red, green, yellow, bold, reset = (
        ("\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[1m", "\x1b[0m") if colour else ("",) * 5
    )
    from kubewerk.core.patch import decode_pointer_token

    lines: list[str] = []
    for item in report.items:
        status = item.status
        if status == "equal":
            continue
        mark = {"added": f"{green}+", "removed": f"{red}-", "changed": f"{yellow}~"}[status]
        lines.append(f"{bold}{mark} {item.key}{reset} ({status})")
        if status != "changed":
            continue
        left = item.diff.left
        for op in item.diff.patch:
            path = op["path"]
            old = _lookup(left, [decode_pointer_token(t) for t in path.split("/")[1:]])
            if op["op"] in ("remove", "replace") and old is not _MISSING:
                lines.append(f"  {red}- {path}: {_short(old)}{reset}")
            if op["op"] in ("add", "replace"):
                lines.append(f"  {green}+ {path}: {_short(op['value'])}{reset}")
    for err in report.errors:
        lines.append(f"{red}! {err}{reset}")
    s = report.summary()
    lines.append(
        f"{s['added']} added, {s['removed']} removed, {s['changed']} changed, {s['equal']} equal"
    )
    return "\n".join(lines)


_MISSING = object()


def _lookup(doc: Any, tokens: list[str]) -> Any:
    for t in tokens:
        if isinstance(doc, dict) and t in doc:
            doc = doc[t]
        elif isinstance(doc, list) and t.isdigit() and int(t) < len(doc):
            doc = doc[int(t)]
        else:
            return _MISSING
    return doc


def report_json(report: Any) -> dict[str, Any]:
    """The JSON form: summary, each object's status and RFC 6902 patch, errors."""
    return {
        "summary": report.summary(),
        "objects": [
            {
                "group": i.key.group,
                "kind": i.key.kind,
                "namespace": i.key.namespace,
                "name": i.key.name,
                "status": i.status,
                "patch": i.diff.patch,
            }
            for i in report.items
        ],
        "errors": report.errors,
        "warnings": report.warnings,
    }


class _Summary:
    """A report with its items hidden: renders as the summary line alone."""

    def __init__(self, report: Any) -> None:
        self.items: list[Any] = []
        self.errors: list[str] = report.errors
        self._report = report

    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = self._report.summary()
        return counts


def _default_cluster(args: argparse.Namespace) -> str:
    """``cluster:CONTEXT`` for the side ``diff`` compares with when given one source (or
    a bare ``cluster:``): the context of ``--context``, else the kubeconfig's current one
    (UsageError, one line, when the kubeconfig cannot be used)."""
    if args.context:
        return f"cluster:{args.context}"
    from kubewerk.client import ConfigError, load_config

    try:
        config = load_config(args.kubeconfig, None)
    except ConfigError as exc:
        raise UsageError(one_line(str(exc))) from None
    return f"cluster:{config.context}" if config.context else "cluster:"


async def _check_reachable(source: Any) -> None:
    """Ask a cluster source's server for ``/version`` once, so that an unreachable server
    or refused credentials stop the command with a line naming that source (the
    comparison itself would raise the same error without saying which side it was).
    A server without ``/version`` (404), or one whose RBAC no longer grants it to every
    user as Kubernetes' ``system:public-info-viewer`` does (403), is let through: the
    reads themselves then say what they may not do."""
    from kubewerk.client import ApiError, Forbidden, NotFound, ServerUnreachable

    if not getattr(source, "is_cluster", False):
        return
    try:
        await source.client.request("GET", "/version")
    except (NotFound, Forbidden):
        return
    except ServerUnreachable as exc:
        raise UsageError(f"{source.name}: {one_line(str(exc))}") from None
    except ApiError as exc:
        text = exc.message or f"the API server answered {exc.code} {exc.reason}"
        raise UsageError(f"{source.name}: {one_line(text)}") from None


def run_diff(args: argparse.Namespace) -> int:
    from kubewerk.client import ServerUnreachable
    from kubewerk.client.errors import ApiError
    from kubewerk.sync import diff_sources, load
    from kubewerk.sync.sources import SourceError

    dst = _default_cluster(args) if args.dst in (None, "cluster:") else args.dst
    clusters: list[str] = []

    async def go() -> Any:
        left = right = None
        try:
            left = load(args.src, kubeconfig=args.kubeconfig, namespace=args.namespace)
            right = load(dst, kubeconfig=args.kubeconfig, namespace=args.namespace)
            clusters.extend(s.name for s in (left, right) if s.is_cluster)
            for side in (left, right):
                await _check_reachable(side)
            return await diff_sources(
                left, right, keep_status=args.status, namespace=args.namespace
            )
        finally:
            for s in (left, right):
                if s is not None:
                    await s.close()

    try:
        report = asyncio.run(go())
    except SourceError as exc:
        raise UsageError(one_line(str(exc))) from None
    except (ServerUnreachable, ApiError) as exc:
        # past the check above: a later request failed (e.g. 403 on one kind's list)
        where = f"{clusters[0]}: " if len(clusters) == 1 else ""
        text = exc.message if isinstance(exc, ApiError) and exc.message else str(exc)
        raise UsageError(where + one_line(text)) from None
    print_warnings(report.warnings)
    if args.output == "json":
        sys.stdout.write(
            orjson.dumps(report_json(report), option=orjson.OPT_INDENT_2).decode() + "\n"
        )
    elif args.output == "summary":
        print(render_text(_Summary(report), False))
    else:
        print(render_text(report, _colour(args)))
    if report.errors:
        return 2
    return 1 if report.different else 0


def print_warnings(warnings: list[str]) -> None:
    """Each warning on stderr as ``kubewerk: warning: TEXT`` (one line each): what a
    cluster side could not read and how the command did without it. The output on
    stdout and the exit code are not changed by them."""
    for w in warnings:
        print(f"kubewerk: warning: {one_line(w)}", file=sys.stderr, flush=True)


def sync_json(report: Any) -> dict[str, Any]:
    return {
        "policy": report.policy,
        "dryRun": report.dry_run,
        "warnings": report.warnings,
        "targets": [
            {
                "target": t.target,
                "status": t.status,
                "detail": t.detail,
                "counts": t.counts(),
                "objects": [
                    {
                        "object": str(r.key),
                        "action": r.action,
                        "detail": r.detail,
                        **({"conflicts": r.conflicts} if r.conflicts else {}),
                    }
                    for r in t.results
                ],
            }
            for t in report.targets
        ],
    }


def render_sync(report: Any) -> str:
    lines: list[str] = []
    for t in report.targets:
        counts = ", ".join(f"{n} {a}" for a, n in sorted(t.counts().items())) or "nothing to do"
        head = f"{t.target}: {t.status}"
        lines.append(f"{head} ({counts})" + (f": {t.detail}" if t.detail else ""))
        for r in t.results:
            if r.action == "unchanged":
                continue
            extra = f" {r.detail}" if r.detail else ""
            if r.conflicts:
                extra += f" conflicts: {', '.join(r.conflicts)}"
            lines.append(f"  {r.action:9} {r.key}{extra}")
    if report.dry_run:
        lines.append("(dry run: nothing was written)")
    return "\n".join(lines)


def _check_metrics_port(port: int) -> None:
    """``--metrics-port``: a port number that 127.0.0.1 can listen on now (UsageError
    otherwise), checked before anything is synced rather than after the first pass."""
    import socket

    if not 1 <= port <= 65535:
        raise UsageError(f"--metrics-port {port}: not a port number (1-65535)")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise UsageError(
                f"--metrics-port {port}: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}"
            ) from None


def run_sync(args: argparse.Namespace) -> int:
    from kubewerk.client import ServerUnreachable
    from kubewerk.client.errors import ApiError
    from kubewerk.sync import load
    from kubewerk.sync.engine import sync
    from kubewerk.sync.sources import ClusterSource, SourceError, cluster

    if args.self_heal and not args.watch:
        raise UsageError("--self-heal needs --watch")
    if args.metrics_port is not None:
        if not args.watch:
            raise UsageError("--metrics-port needs --watch")
        _check_metrics_port(args.metrics_port)
    if args.policy == "cluster-wins" and len(args.targets) != 1:
        raise UsageError("--policy cluster-wins writes one cluster back: give exactly one --to")

    async def go() -> int:
        source = load(args.source, kubeconfig=args.kubeconfig, namespace=args.namespace)
        targets: list[ClusterSource] = [
            cluster(_cluster_spec(t), kubeconfig=args.kubeconfig, namespace=args.namespace)
            for t in args.targets
        ]
        try:
            # the source is input: a cluster source that cannot be read stops the command
            # (exit 2); a target that cannot be reached is one target's result (exit 1)
            await _check_reachable(source)
            report = await sync(
                source, targets, args.policy, prune=args.prune, dry_run=args.dry_run
            )
            print_warnings(report.warnings)
            if args.output == "json":
                sys.stdout.write(
                    orjson.dumps(sync_json(report), option=orjson.OPT_INDENT_2).decode() + "\n"
                )
            else:
                print(render_sync(report), flush=True)
            code = (
                0
                if report.ok
                and not any(r.action == "conflict" for t in report.targets for r in t.results)
                else 1
            )
            if args.watch:
                from kubewerk.sync.drift import run_drift

                try:
                    await run_drift(
                        source,
                        targets,
                        policy=args.policy,
                        self_heal=args.self_heal,
                        metrics_port=args.metrics_port,
                    )
                except OSError as exc:  # the metrics port was taken since it was checked
                    raise UsageError(
                        f"--metrics-port {args.metrics_port}: {exc.strerror or exc}"
                    ) from None
            return code
        finally:
            await source.close()
            for t in targets:
                await t.close()

    try:
        return asyncio.run(go())
    except (SourceError, ValueError) as exc:
        raise UsageError(one_line(str(exc))) from None
    except (ServerUnreachable, ApiError) as exc:
        # only the source's reads raise out of the sync (targets' failures are results)
        text = exc.message if isinstance(exc, ApiError) and exc.message else str(exc)
        raise UsageError(f"{args.source}: {one_line(text)}") from None
