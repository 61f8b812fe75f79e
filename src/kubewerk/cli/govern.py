"""``kubewerk lint``, ``kubewerk compat`` and ``kubewerk validate``.

Exit codes: 0 when no finding reaches the ``--fail-on`` level, 1 when one does, 2 for
usage errors and unreadable input (the message names the file and line).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubewerk.cli import UsageError
from kubewerk.govern.config import Config, SuppressRule, load_config
from kubewerk.govern.findings import FAIL_LEVELS, Finding, Severity, Summary
from kubewerk.govern.loader import Document, InputError, gc_paused, iter_sources
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
        help="lowest severity that makes the exit code 1 (default: the config's failOn, else error)",
    )
    p.add_argument(
        "--config", metavar="FILE", help="config file: severities, disabled rules, suppressions"
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout"
    )


def _rule_list(text: str) -> list[str]:
    return [r.strip() for r in text.split(",") if r.strip()]


def register(subparsers: Any) -> None:
    lint = subparsers.add_parser(
        "lint",
        help="lint CustomResourceDefinitions for anti-patterns",
        description="Lint CRDs in files, directories (recursive) or - (stdin).",
    )
    lint.add_argument(
        "paths", nargs="+", metavar="PATH", help="file, directory, -, or git:REV:PATH"
    )
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
        description="Compare the CRDs of OLD and NEW (files, directories, - or git:REV:PATH).",
    )
    compat.add_argument("old", metavar="OLD")
    compat.add_argument("new", metavar="NEW")
    _common(compat)
    compat.set_defaults(func=run_compat)

    validate = subparsers.add_parser(
        "validate",
        help="validate custom resources offline against their CRDs",
        description="Validate manifests as the API server would on create (or update of --old).",
    )
    validate.add_argument("manifests", nargs="+", metavar="MANIFEST")
    validate.add_argument(
        "--crd",
        action="append",
        required=True,
        metavar="CRD",
        help="CRD file or directory (repeatable)",
    )
    validate.add_argument(
        "--old",
        action="append",
        default=[],
        metavar="OLD",
        help="the stored objects: validate MANIFEST as an update of them (transition rules run)",
    )
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
        text = render_sarif(findings, rules, uris)
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
            f"kubewerk: note: {s.source}: suppression of {s.rule} for {s.crd} {s.path} matched nothing",
            file=sys.stderr,
        )


def _write(path: str | None, text: str) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _guard(fn: Callable[[], int]) -> int:
    try:
        return fn()
    except InputError as exc:
        raise UsageError(str(exc)) from None


class _Collector:
    """Streams sources, remembering file names and their SARIF URIs."""

    def __init__(self) -> None:
        self.files = 0
        self.uris: dict[str, str] = {}

    def docs(self, paths: Sequence[str]) -> Any:
        for docs in iter_sources(paths):
            self.files += 1
            if docs:
                self.uris[docs[0].source.name] = docs[0].source.uri
            yield from docs

    def load(self, paths: Sequence[str]) -> list[Document]:
        return list(self.docs(paths))


def run_lint(args: argparse.Namespace) -> int:
    from kubewerk.govern.lint import lint_documents
    from kubewerk.govern.rules import RULES

    known = list(RULES)
    _check_rules(args.enable, known, "--enable")
    _check_rules(args.disable, known, "--disable")
    cfg = _config(args, known)
    enabled = cfg.enabled(known, args.enable, args.disable)
    rules = {r.id: (cfg.severities.get(r.id, r.severity), r.summary) for r in RULES.values()}

    def run() -> int:
        collector = _Collector()
        with gc_paused():
            result = lint_documents(collector.docs(args.paths), enabled, cfg.severities)
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
        collector = _Collector()
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
        collector = _Collector()
        crds = collector.load(args.crd)
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


__all__ = ["register"]
