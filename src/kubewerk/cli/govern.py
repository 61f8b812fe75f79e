"""``kubewerk lint``, ``kubewerk compat`` and ``kubewerk validate``.

Inputs are files, directories, ``-`` (stdin), ``git:REV:PATH`` and, for CRDs,
``cluster:[CONTEXT/]NAME`` (read through the API client, see
:mod:`kubewerk.cli.cluster`); ``kubewerk lint --cluster`` lints every installed CRD.

Exit codes: 0 when no finding reaches the ``--fail-on`` level, 1 when one does, 2 for
usage errors and unreadable input (the message names the file and line), including a
kubeconfig that cannot be used, an API server that does not answer and a CRD that is
not installed.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubewerk.cli import UsageError, input_limit
from kubewerk.cli.atomic_write import write_atomic
from kubewerk.cli.cluster import ClusterReader, is_cluster_arg, parse_ref
from kubewerk.govern.config import Config, SuppressRule, load_config
from kubewerk.govern.findings import FAIL_LEVELS, Finding, Severity, Summary
from kubewerk.govern.loader import Document, InputError, expand, gc_paused, iter_sources
from kubewerk.govern.report import render_json, render_sarif, render_text, use_colour


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        choices=("text", "json", "sarif"),
        default="text",
        help="output format (default: text)",
    )
    p.add_argument(
        "--fail-on",
        choices=FAIL_LEVELS,
        default=None,
        help="lowest severity that makes the exit code "
        "1 (default: the config's failOn, else error)",
    )
    p.add_argument(
        "--config", metavar="FILE", help="config file: severities, disabled rules, suppressions"
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the report to FILE instead of stdout (whole: a temporary file renamed)",
    )
    input_limit.add_option(p)


def _kubeconfig_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig for cluster: inputs (default: $KUBECONFIG or ~/.kube/config)",
    )
    p.add_argument(
        "--context",
        metavar="NAME",
        help="kubeconfig context for cluster: inputs (default: the current context)",
    )


def _rule_list(text: str) -> list[str]:
    return [r.strip() for r in text.split(",") if r.strip()]


def register(subparsers: Any) -> None:
    lint = subparsers.add_parser(
        "lint",
        help="lint CustomResourceDefinitions for anti-patterns",
        description="Lint CRDs in files, directories (recursive), - (stdin), git:REV:PATH, "
        "cluster:NAME, or every CRD installed in a cluster (--cluster).",
    )
    lint.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="file, directory, -, git:REV:PATH, or cluster:[CONTEXT/]NAME",
    )
    lint.add_argument(
        "--cluster",
        action="store_true",
        help="lint every CRD installed in the cluster (implied by --kubeconfig/--context "
        "unless a PATH is cluster:NAME)",
    )
    lint.add_argument(
        "-l",
        "--selector",
        metavar="SELECTOR",
        help="with --cluster: only CRDs matching this label selector",
    )
    _kubeconfig_options(lint)
    _common(lint)
    lint.add_argument(
        "--enable",
        type=_rule_list,
        default=[],
        metavar="RULE,...",
        help="turn rules on (overrides the config)",
    )
    lint.add_argument(
        "--disable", type=_rule_list, default=[], metavar="RULE,...", help="turn rules off"
    )
    lint.set_defaults(func=run_lint)

    compat = subparsers.add_parser(
        "compat",
        help="find breaking changes between two revisions of CRDs",
        description="Compare the CRDs of OLD and NEW (files, directories, -, git:REV:PATH, "
        "or cluster:[CONTEXT/]NAME for a CRD installed in a cluster).",
    )
    compat.add_argument("old", metavar="OLD", help="the CRDs as they are (served, released)")
    compat.add_argument("new", metavar="NEW", help="the CRDs as they would become")
    _kubeconfig_options(compat)
    _common(compat)
    compat.set_defaults(func=run_compat)

    validate = subparsers.add_parser(
        "validate",
        help="validate custom resources offline against their CRDs",
        description="Validate manifests as the API server would on create (or update of --old).",
    )
    validate.add_argument(
        "manifests",
        nargs="*",
        metavar="MANIFEST",
        help="objects to validate: file, directory (recursive), - or git:REV:PATH",
    )
    validate.add_argument(
        "--crd",
        action="append",
        required=True,
        metavar="CRD",
        help="CRD file, directory, or cluster:[CONTEXT/]NAME (repeatable)",
    )
    validate.add_argument(
        "--old",
        action="append",
        default=[],
        metavar="OLD",
        help="the stored objects: validate MANIFEST as an update of them (transition rules run)",
    )
    validate.add_argument(
        "--explain-cost",
        action="store_true",
        help="print each CEL rule's estimated cost (as the API server computes it) and its "
        "share of the per-CRD budget, instead of validating MANIFEST (exit 1 if a rule or "
        "a schema is over its limit)",
    )
    _kubeconfig_options(validate)
    _common(validate)
    validate.set_defaults(func=run_validate)


def _config(args: argparse.Namespace, rules: Sequence[str]) -> Config:
    if not args.config:
        return Config()
    try:
        return load_config(args.config, rules)
    except InputError as exc:
        raise UsageError(str(exc)) from None


def _check_rules(names: Sequence[str], known: Sequence[str], option: str) -> None:
    for name in names:
        if name not in known:
            raise UsageError(f"{option}: unknown rule {name!r} (known: {', '.join(sorted(known))})")


def _emit(
    args: argparse.Namespace,
    command: str,
    findings: list[Finding],
    cfg: Config,
    rules: Mapping[str, tuple[Severity, str]],
    *,
    files: int,
    documents: int,
    objects: int,
    objects_key: str,
    uris: Mapping[str, str],
) -> int:
    findings, unused = cfg.apply(findings)
    fail_on = args.fail_on or cfg.fail_on or "error"
    summary = Summary.of(
        findings, files=files, documents=documents, objects=objects, fail_on=fail_on
    )
    out = sys.stdout
    if args.format == "json":
        text = render_json(command, findings, summary, unused, objects=objects_key)
    elif args.format == "sarif":
        text = render_sarif(findings, rules, uris, command)
    else:
        colour = args.output is None and use_colour(out)
        text = render_text(findings, summary, unused, colour=colour, objects=objects_key)
    _write(args.output, text)
    if args.format != "text" and unused:
        _warn_unused(unused)
    return 1 if summary.failed else 0


def _warn_unused(unused: Sequence[SuppressRule]) -> None:
    for s in unused:
        print(
            f"kubewerk: note: {s.source}: suppression of "
            f"{s.rule} for {s.crd} {s.path} matched nothing",
            file=sys.stderr,
        )


def _write(path: str | None, text: str) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _guard(fn: Callable[[], int]) -> int:
    try:
        return fn()
    except InputError as exc:
        raise UsageError(str(exc)) from None


class _Collector:
    """Streams sources, remembering file names and their SARIF URIs.

    ``cluster`` holds the CRDs already read for ``cluster:`` arguments (by argument);
    each of them, like each CRD passed to :meth:`extra`, counts as one source.
    """

    def __init__(self, cluster: Mapping[str, Document] | None = None) -> None:
        self.files = 0
        self.uris: dict[str, str] = {}
        self.cluster = cluster or {}

    def docs(self, paths: Sequence[str]) -> Any:
        if not self.cluster:
            for docs in iter_sources(paths):
                yield from self._count(docs)
            return
        for path in paths:
            found = self.cluster.get(path)
            if found is not None:
                yield from self._count([found])
            else:
                for docs in iter_sources([path]):
                    yield from self._count(docs)

    def extra(self, docs: Sequence[Document]) -> Any:
        for doc in docs:
            yield from self._count([doc])

    def _count(self, docs: list[Document]) -> list[Document]:
        self.files += 1
        if docs:
            self.uris[docs[0].source.name] = docs[0].source.uri
        return docs

    def load(self, paths: Sequence[str]) -> list[Document]:
        return list(self.docs(paths))


def _read_cluster(
    args: argparse.Namespace,
    inputs: Sequence[str],
    *,
    read_all: bool = False,
    selector: str | None = None,
) -> tuple[dict[str, Document], list[Document]]:
    """Read the CRDs that ``cluster:`` arguments among ``inputs`` name (and every CRD
    with ``read_all``) before anything else; local inputs are checked for existence
    first, so a typo in a path is reported without waiting for a server."""
    refs = [parse_ref(arg) for arg in inputs if is_cluster_arg(arg)]
    if not refs and not read_all:
        return {}, []
    expand([arg for arg in inputs if not is_cluster_arg(arg)])
    reader = ClusterReader(args.kubeconfig, args.context)
    return reader.read(refs, read_all=read_all, selector=selector)


def run_lint(args: argparse.Namespace) -> int:
    from kubewerk.govern.lint import lint_documents
    from kubewerk.govern.rules import RULES

    known = list(RULES)
    _check_rules(args.enable, known, "--enable")
    _check_rules(args.disable, known, "--disable")
    cfg = _config(args, known)
    enabled = cfg.enabled(known, args.enable, args.disable)
    rules = {r.id: (cfg.severities.get(r.id, r.severity), r.summary) for r in RULES.values()}

    named_refs = any(is_cluster_arg(p) for p in args.paths)
    read_all = bool(args.cluster or ((args.kubeconfig or args.context) and not named_refs))
    if not args.paths and not read_all:
        raise UsageError("nothing to lint: give PATH arguments or --cluster")
    if args.selector and not read_all:
        raise UsageError("--selector applies only to the CRDs read with --cluster")

    def run() -> int:
        named, everything = _read_cluster(
            args, args.paths, read_all=read_all, selector=args.selector
        )
        collector = _Collector(named)
        # a CRD named on the command line and also installed is linted once
        seen = {doc.source.name for doc in named.values()}
        everything = [doc for doc in everything if doc.source.name not in seen]
        docs = itertools.chain(collector.docs(args.paths), collector.extra(everything))
        with gc_paused():
            result = lint_documents(docs, enabled, cfg.severities)
        if result.crds == 0 and not read_all:
            # 0 findings because there was nothing to lint: say so (a CI job pointed at
            # the wrong directory would pass silently); the exit code stays the report's
            print(
                f"kubewerk: note: no CustomResourceDefinition found in {', '.join(args.paths)}",
                file=sys.stderr,
            )
        return _emit(
            args,
            "lint",
            result.findings,
            cfg,
            rules,
            files=collector.files,
            documents=result.documents,
            objects=result.crds,
            objects_key="crds",
            uris=collector.uris,
        )

    return _guard(run)


def run_compat(args: argparse.Namespace) -> int:
    from kubewerk.govern.compat import CHECKS, compare_documents

    known = list(CHECKS)
    cfg = _config(args, known)
    rules = {c.id: (cfg.severities.get(c.id, c.severity), c.summary) for c in CHECKS.values()}

    def run() -> int:
        if args.old == "-" and args.new == "-":
            raise UsageError("only one of OLD and NEW can be - (stdin)")
        named, _ = _read_cluster(args, [args.old, args.new])
        collector = _Collector(named)
        old = collector.load([args.old])
        new = collector.load([args.new])
        result = compare_documents(old, new)
        findings = [f for f in result.findings if f.rule not in cfg.disabled]
        return _emit(
            args,
            "compat",
            findings,
            cfg,
            rules,
            files=collector.files,
            documents=result.documents,
            objects=result.crds,
            objects_key="crds",
            uris=collector.uris,
        )

    return _guard(run)


def run_validate(args: argparse.Namespace) -> int:
    from kubewerk.govern.validate import VALIDATE_RULES, validate_documents

    known = list(VALIDATE_RULES)
    cfg = _config(args, known)
    rules = {k: (cfg.severities.get(k, v[0]), v[1]) for k, v in VALIDATE_RULES.items()}

    def run() -> int:
        if sum(1 for p in (*args.crd, *args.old, *args.manifests) if p == "-") > 1:
            raise UsageError("- (stdin) can be given only once")
        for arg in (*args.old, *args.manifests):
            if is_cluster_arg(arg):
                raise UsageError(
                    f"{arg}: cluster: names a CRD; give it with --crd "
                    "(custom resources are read from files)"
                )
        if not args.manifests and not args.explain_cost:
            raise UsageError("give at least one MANIFEST (or --explain-cost)")
        named, _ = _read_cluster(args, args.crd)
        collector = _Collector(named)
        crds = collector.load(args.crd)
        if args.explain_cost:
            return _explain_cost(args, crds)
        old = collector.load(args.old) if args.old else []
        manifests = collector.load(args.manifests)
        if not any(
            d.data.get("kind") == "CustomResourceDefinition"
            for d in crds
            if isinstance(d.data, dict)
        ):
            raise UsageError(f"--crd {' '.join(args.crd)}: no CustomResourceDefinition found")
        result = validate_documents(crds, manifests, old)
        findings = [f for f in result.findings if f.rule not in cfg.disabled]
        return _emit(
            args,
            "validate",
            findings,
            cfg,
            rules,
            files=collector.files,
            documents=result.documents,
            objects=result.objects,
            objects_key="objects",
            uris=collector.uris,
        )

    return _guard(run)


def _explain_cost(args: argparse.Namespace, crds: Sequence[Document]) -> int:
    """``validate --explain-cost``: each expression's cost, as text or JSON (exit 1 when
    the API server would refuse a CRD for its CEL cost)."""
    import json

    from kubewerk.govern.validate import _cost_findings, explain_costs
    from kubewerk.schema.cel.cost_limits import (
        STATIC_ESTIMATED_COST_LIMIT,
        STATIC_ESTIMATED_CRD_COST_LIMIT,
    )

    rows = explain_costs(crds)
    refused = [f for d in crds for f in _cost_findings(d)]
    if args.format == "json":
        doc = {
            "perExpressionLimit": STATIC_ESTIMATED_COST_LIMIT,
            "perCRDLimit": STATIC_ESTIMATED_CRD_COST_LIMIT,
            "expressions": [
                {
                    "crd": r.crd,
                    "versions": list(r.versions),
                    "field": r.field,
                    "expression": r.expression,
                    "estimatedCostPerCall": r.per_call,
                    "cardinality": r.cardinality,
                    "estimatedCost": r.cost,
                    "shareOfCRDBudget": r.share,
                    "overLimit": r.over_limit,
                }
                for r in rows
            ],
            "refusals": [f.message for f in refused],
        }
        _write(args.output, json.dumps(doc, indent=2) + "\n")
    else:
        lines = []
        for r in rows:
            flag = "  OVER LIMIT" if r.over_limit else ""
            lines.append(
                f"{r.crd} ({', '.join(r.versions)}) {r.field}\n"
                f"  {r.expression}\n"
                f"  estimated cost {r.cost:,} = {r.per_call:,} per call x {r.cardinality:,}; "
                f"{r.share * 100:.4g}% of the per-CRD budget{flag}"
            )
        lines.extend(f.message for f in refused)
        if not rows:
            lines.append("no CEL rules in the given CRDs")
        _write(args.output, "\n".join(lines) + "\n")
    return 1 if refused else 0


__all__ = ["register"]
