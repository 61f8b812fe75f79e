"""``kubewerk audit``: read an object's history back from an audit log.

``kubewerk audit history KIND/NAME --log FILE [-n NS] [--at RV|TIME] [-o text|json|yaml]``
lists every write of the object in commit order (resourceVersion, time, verb, user,
storage event, trace id and the spec patch) from an audit log written by the embedded
server (``audit.k8s.io/v1`` events as JSON lines; the writes of custom resources at level
``Metadata`` or above carry their spec patch). With ``--at`` it prints the object's spec
replayed to that past version instead: the last write at or before a resourceVersion or an
RFC 3339 time. ``KIND`` is the resource as in the URL, optionally with its group
(``databases``, ``databases.demo.kubewerk.dev``); a singular or the Kind's name matches
too (``database``, ``Database``). ``-n`` narrows to one namespace.

The log may be of any length (it is read line by line); one line (one event) of more
than 64 MiB, or ``--max-input-bytes``, is refused: ``/dev/zero`` ends there.

Exit codes: 0 success, 1 no write of the object in the log (or it did not exist at
``--at``), 2 usage errors (unreadable log, a file that is not an audit log, malformed
target or ``--at``, a log whose patches do not replay).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson
import yaml

from kubewerk.cli import UsageError, input_limit
from kubewerk.core.inputs import InputTooLarge, human_size, iter_lines_bounded


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "audit",
        help="read an object's history from an audit log",
        description="Audit logs of the embedded API server (audit.k8s.io/v1 events).",
    )
    actions = parser.add_subparsers(dest="audit_command", metavar="ACTION")
    history = actions.add_parser(
        "history",
        help="every write of one object, or the object replayed to a past version",
        description="List every write of KIND/NAME in commit order, or with --at print its "
        "spec replayed to a past resourceVersion or time.",
    )
    history.add_argument("target", metavar="KIND/NAME", help="e.g. databases/db1")
    history.add_argument("--log", required=True, metavar="FILE", help="the audit log (JSON lines)")
    history.add_argument(
        "-n",
        "--namespace",
        default=None,
        metavar="NS",
        help="only the object of that name in this namespace (default: any namespace)",
    )
    history.add_argument("--at", default=None, metavar="RV|TIME", help="replay to this version")
    history.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml"),
        default="text",
        help="output format (default: text)",
    )
    input_limit.add_option(history, "each line (event) of the log")
    history.set_defaults(func=run_history)

    def usage(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)


def run_history(args: argparse.Namespace) -> int:
    from kubewerk.apiserver.audit.history import (
        HistoryError,
        parse_target,
        read_history,
        replay,
        version_at,
    )

    try:
        target = parse_target(args.target, args.namespace)
    except HistoryError as e:
        raise UsageError(str(e)) from None
    try:
        with open(args.log, "rb") as f:
            writes = read_history(iter_lines_bounded(f), target)
    except OSError as e:
        raise UsageError(f"cannot read audit log {args.log}: {e.strerror or e}") from None
    except InputTooLarge as e:
        raise UsageError(
            f"audit log {args.log}: a line is longer than {e.limit} bytes "
            f"({human_size(e.limit)}), the most kubewerk reads of one event; "
            "raise --max-input-bytes"
        ) from None
    except HistoryError as e:
        raise UsageError(f"audit log {args.log}: {e}") from None
    if not writes:
        print(f"no write of {args.target} in {args.log}", file=sys.stderr)
        return 1
    try:
        if args.at is not None:
            n = version_at(writes, args.at)
            doc = replay(writes, n)
            if doc is None:
                print(f"{args.target} did not exist at {args.at}", file=sys.stderr)
                return 1
            w = writes[n - 1]
            ref = w.event.get("objectRef") or {}
            group, version = ref.get("apiGroup", ""), ref.get("apiVersion", "")
            meta: dict[str, Any] = {"name": ref.get("name", target.name)}
            if ref.get("namespace"):
                meta["namespace"] = ref["namespace"]
            meta["resourceVersion"] = str(w.resource_version)
            obj = {"apiVersion": f"{group}/{version}" if group else version, "metadata": meta}
            obj.update(doc)
            _print(obj, args.output)
            return 0
        # validate the whole chain replays before printing it
        replay(writes, len(writes))
    except HistoryError as e:
        raise UsageError(str(e)) from None
    if args.output == "text":
        print(f"{'RESOURCEVERSION':<16}{'TIME':<29}{'VERB':<10}{'EVENT':<10}{'USER':<28}PATCH")
        for w in writes:
            patch = orjson.dumps(w.patch).decode()
            print(
                f"{w.resource_version:<16}{w.time:<29}{w.verb:<10}{w.storage_event:<10}"
                f"{w.user:<28}{patch}" + (f"  trace={w.trace_id}" if w.trace_id else "")
            )
        return 0
    _print({"writes": [w.to_json() for w in writes]}, args.output)
    return 0


def _print(value: Any, output: str) -> None:
    if output == "yaml":
        sys.stdout.write(yaml.safe_dump(value, sort_keys=False))
    else:
        sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")
