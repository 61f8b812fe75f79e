"""``kubewerk policy test``: evaluate ValidatingAdmissionPolicies offline.

::

    kubewerk policy test --policy policy.yaml --resource deploy.yaml [--old old.yaml]
        [--params params.yaml] [--namespace-object ns.yaml] [--user U --groups G1,G2]
        [--operation CREATE|UPDATE|DELETE|CONNECT] [-o text|json]
    kubewerk policy test --policy policy.yaml --cases cases.yaml [-o json]

Policy files hold ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding
objects, or policies written as data (:func:`kubewerk.webhook.policy.policy_from_data`;
compiled to both). A policy no binding names is bound with ``validationActions:
[Deny]`` (a note says so). Params files hold the param objects (ConfigMaps …).
Verdicts, messages, codes, warnings and audit annotations are the engine's
(:mod:`kubewerk.schema.admission_policy`), the same the embedded server gives.

Exit codes as ``kubewerk validate``: 0 every resource allowed (every case passed), 1
some denied (some case failed), 2 on errors (unreadable files, invalid policies).

The cases file::

    cases:
      - name: too many replicas
        resource: deploy-7.yaml          # a path (relative to the file) or the object
        old: deploy-3.yaml                # optional; the operation is then UPDATE
        operation: UPDATE                 # optional
        user: alice                       # optional, with groups: [dev]
        namespaceObject: {…}              # optional
        expect: denied                    # allowed | denied
        message: "deployments.apps \\"web\\" is forbidden: …"   # optional, exact
        messageContains: "at most 5"      # optional
        warnings: ["Validation failed for …"]                   # optional, exact list
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kubewerk.cli import UsageError, input_limit

_OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "policy",
        help="test ValidatingAdmissionPolicies offline",
        description="Work with ValidatingAdmissionPolicies without a cluster.",
    )
    cmds = parser.add_subparsers(dest="policy_command", metavar="COMMAND")
    test = cmds.add_parser(
        "test",
        help="evaluate policies against resources (or a cases file)",
        description="Evaluate ValidatingAdmissionPolicies and their bindings against "
        "resources offline, with the API server's verdicts and messages. Exit 0 allowed, "
        "1 denied (or a case failed), 2 on errors.",
    )
    test.add_argument(
        "--policy",
        action="append",
        required=True,
        metavar="FILE",
        help="policy YAML, or a .py module of kubewerk.webhook.policy Policy objects (repeatable)",
    )
    test.add_argument(
        "--resource", action="append", default=[], metavar="FILE", help="object(s) to admit"
    )
    test.add_argument(
        "--old", metavar="FILE", help="the old object (an UPDATE, or the object of a DELETE)"
    )
    test.add_argument("--params", action="append", default=[], metavar="FILE", help="param objects")
    test.add_argument("--namespace-object", metavar="FILE", help="the Namespace of the resources")
    test.add_argument("--user", default="", help="the requesting user name")
    test.add_argument("--groups", default="", help="the user's groups, comma-separated")
    test.add_argument("--operation", choices=_OPERATIONS, help="default: CREATE, UPDATE with --old")
    test.add_argument("--cases", metavar="FILE", help="a test-case file (see docs/policy.md)")
    test.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default="text",
        help="output format (default: text)",
    )
    input_limit.add_option(test)
    test.set_defaults(func=run_test)
    parser.set_defaults(func=lambda args: _help(parser))


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def load_documents(path: str | Path) -> list[Any]:
    """The documents of a YAML or JSON file, read as ``lint`` and ``validate`` read
    manifests (``kubewerk.govern.loader``): as a cluster reads YAML (go-yaml's scalars,
    aliases bounded as go-yaml bounds them), at most the input limit
    (``--max-input-bytes``) of it, empty documents dropped and ``List`` objects expanded
    into their items. A file that cannot be read is a ``UsageError`` naming it (and the line)."""
    from kubewerk.govern.loader import InputError, parse, read_file

    try:
        return [doc.data for doc in parse(read_file(Path(path)))]
    except InputError as exc:
        # a file that cannot be opened keeps this command's words: "FILE: No such file ..."
        raise UsageError(str(exc).replace(": cannot read: ", ": ", 1)) from None


def _one_object(path: str | Path) -> dict[str, Any]:
    docs = load_documents(path)
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise UsageError(f"{path}: expected exactly one object")
    return docs[0]


class _Setup:
    """The policies, bindings and params of one run."""

    def __init__(self, policy_files: Sequence[str], param_files: Sequence[str]) -> None:
        from kubewerk.schema.admission_policy import ParamStore, compile_policy
        from kubewerk.webhook.policy import PolicyDefinitionError, policy_from_data

        policies: list[dict[str, Any]] = []
        self.bindings: list[dict[str, Any]] = []
        self.notes: list[str] = []
        for f in policy_files:
            if f.endswith(".py"):  # a module of policies written in Python
                from kubewerk.cli.gen import policies_of

                for pol in policies_of(f):
                    policies.append(pol.to_policy())
                    self.bindings.append(pol.to_binding())
                continue
            for doc in load_documents(f):
                if not isinstance(doc, dict):
                    raise UsageError(f"{f}: expected objects")
                kind = doc.get("kind")
                if kind == "ValidatingAdmissionPolicy":
                    policies.append(doc)
                elif kind == "ValidatingAdmissionPolicyBinding":
                    self.bindings.append(doc)
                elif kind is None and "check" in doc:
                    try:
                        pol = policy_from_data(doc)
                    except PolicyDefinitionError as exc:
                        raise UsageError(f"{f}: {exc}") from None
                    policies.append(pol.to_policy())
                    self.bindings.append(pol.to_binding())
                else:
                    raise UsageError(f"{f}: {kind or 'a document'} is not a policy or binding")
        if not policies:
            raise UsageError("no ValidatingAdmissionPolicy in the --policy files")
        self.errors: list[str] = []
        self.compiled = []
        for p in policies:
            cp = compile_policy(p)
            name = cp.name or "<unnamed>"
            self.errors.extend(
                f'ValidatingAdmissionPolicy "{name}" is invalid: {e.message()}' for e in cp.errors
            )
            self.compiled.append(cp)
            if not any(_spec(b).get("policyName") == cp.name for b in self.bindings):
                self.bindings.append(
                    {
                        "apiVersion": "admissionregistration.k8s.io/v1",
                        "kind": "ValidatingAdmissionPolicyBinding",
                        "metadata": {"name": f"{cp.name}-binding"},
                        "spec": {"policyName": cp.name, "validationActions": ["Deny"]},
                    }
                )
                self.notes.append(
                    f"note: policy {cp.name!r} has no binding; bound as "
                    f"'{cp.name}-binding' with validationActions [Deny]"
                )
        from kubewerk.schema.admission_policy import validate_binding

        for b in self.bindings:
            bname = (b.get("metadata") or {}).get("name", "<unnamed>")
            self.errors.extend(
                f'ValidatingAdmissionPolicyBinding "{bname}" is invalid: {e.message()}'
                for e in validate_binding(b)
            )
        params: list[dict[str, Any]] = []
        for f in param_files:
            params.extend(d for d in load_documents(f) if isinstance(d, dict))
        self.store = ParamStore(params)


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _label(obj: Mapping[str, Any] | None) -> str:
    if obj is None:
        return "<none>"
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    name = meta.get("name") or meta.get("generateName") or "<unnamed>"
    ns = meta.get("namespace")
    return f"{obj.get('kind', '?')}/{ns + '/' if ns else ''}{name}"


def _evaluate(
    setup: _Setup,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None,
    operation: str,
    user: str,
    groups: Sequence[str],
    namespace_object: dict[str, Any] | None,
) -> dict[str, Any]:
    from kubewerk.schema.admission_policy import Request, UserInfo, admit

    try:
        request = Request.for_object(
            operation,
            obj if operation != "DELETE" else None,
            old if operation != "CREATE" else None,
            user=UserInfo(username=user, groups=tuple(groups)),
            namespace_object=namespace_object,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    result = admit(setup.compiled, setup.bindings, request, params=setup.store)
    return {
        "resource": _label(obj if obj is not None else old),
        "operation": operation,
        "allowed": result.allowed,
        "status": result.error.to_status() if result.error is not None else None,
        "warnings": result.warnings,
        "auditAnnotations": result.audit_annotations,
    }


def _print_result(r: Mapping[str, Any], prefix: str = "") -> None:
    if r["allowed"]:
        print(f"{prefix}ALLOWED {r['operation']} {r['resource']}")
    else:
        st = r["status"]
        head = f"{prefix}DENIED {r['operation']} {r['resource']}"
        print(f"{head} ({st['code']} {st['reason']}): {st['message']}")
    for w in r["warnings"]:
        print(f"{prefix}  Warning: {w}")
    for k, v in sorted(r["auditAnnotations"].items()):
        print(f"{prefix}  audit: {k}={v}")


def run_test(args: argparse.Namespace) -> int:
    if args.cases:
        if args.resource or args.old:
            raise UsageError("--cases cannot be combined with --resource or --old")
        return _run_cases(args)
    if not args.resource and not args.old:
        raise UsageError("give --resource FILE (or --old FILE for a DELETE), or --cases FILE")
    setup = _Setup(args.policy, args.params)
    if setup.errors:
        for e in setup.errors:
            print(f"kubewerk: error: {e}", file=sys.stderr)
        return 2
    for n in setup.notes:
        print(n, file=sys.stderr)
    old = _one_object(args.old) if args.old else None
    operation = args.operation or ("UPDATE" if old is not None and args.resource else "CREATE")
    if old is not None and not args.resource:
        operation = args.operation or "DELETE"
    ns = _one_object(args.namespace_object) if args.namespace_object else None
    groups = [g for g in args.groups.split(",") if g]
    objects: list[dict[str, Any] | None] = []
    for f in args.resource:
        objects.extend(d for d in load_documents(f) if isinstance(d, dict))
    if not objects:
        objects = [None]
    if old is not None and len(objects) > 1:
        raise UsageError("--old needs exactly one --resource object")
    results = [_evaluate(setup, o, old, operation, args.user, groups, ns) for o in objects]
    if args.output == "json":
        print(json.dumps({"results": results}, indent=2, sort_keys=True))
    else:
        for r in results:
            _print_result(r)
    return 0 if all(r["allowed"] for r in results) else 1


def _case_object(value: Any, base: Path, where: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return _one_object(base / value)
    if isinstance(value, dict):
        return value
    raise UsageError(f"{where}: expected a path or an object")


def _run_cases(args: argparse.Namespace) -> int:
    path = Path(args.cases)
    docs = load_documents(path)
    if (
        len(docs) != 1
        or not isinstance(docs[0], Mapping)
        or not isinstance(docs[0].get("cases"), list)
    ):
        raise UsageError(f"{path}: expected a mapping with a 'cases' list")
    setup = _Setup(args.policy, args.params)
    if setup.errors:
        for e in setup.errors:
            print(f"kubewerk: error: {e}", file=sys.stderr)
        return 2
    base = path.parent
    reports: list[dict[str, Any]] = []
    for i, case in enumerate(docs[0]["cases"]):
        where = f"{path}: cases[{i}]"
        if not isinstance(case, Mapping):
            raise UsageError(f"{where}: expected a mapping")
        name = str(case.get("name") or f"case {i}")
        expect = case.get("expect")
        if expect not in ("allowed", "denied"):
            raise UsageError(f"{where}.expect: expected 'allowed' or 'denied'")
        obj = _case_object(case.get("resource"), base, f"{where}.resource")
        old = _case_object(case.get("old"), base, f"{where}.old")
        op = case.get("operation") or ("UPDATE" if old is not None and obj is not None else None)
        op = op or ("DELETE" if obj is None else "CREATE")
        if op not in _OPERATIONS:
            raise UsageError(f"{where}.operation: expected one of {', '.join(_OPERATIONS)}")
        groups = case.get("groups") or []
        ns = _case_object(case.get("namespaceObject"), base, f"{where}.namespaceObject")
        r = _evaluate(
            setup, obj, old, op, str(case.get("user") or ""), [str(g) for g in groups], ns
        )
        problems: list[str] = []
        got = "allowed" if r["allowed"] else "denied"
        if got != expect:
            problems.append(f"expected {expect}, got {got}")
        message = r["status"]["message"] if r["status"] else ""
        if "message" in case and case["message"] != message:
            problems.append(f"expected message {case['message']!r}, got {message!r}")
        if "messageContains" in case and str(case["messageContains"]) not in message:
            problems.append(
                f"expected the message to contain {case['messageContains']!r}, got {message!r}"
            )
        if "warnings" in case and list(case["warnings"] or []) != r["warnings"]:
            problems.append(f"expected warnings {case['warnings']!r}, got {r['warnings']!r}")
        reports.append({"name": name, "passed": not problems, "problems": problems, "result": r})
    failed = [c for c in reports if not c["passed"]]
    if args.output == "json":
        print(
            json.dumps(
                {"cases": reports, "passed": len(reports) - len(failed), "failed": len(failed)},
                indent=2,
                sort_keys=True,
            )
        )
    else:
        for c in reports:
            print(f"{'PASS' if c['passed'] else 'FAIL'} {c['name']}")
            for p in c["problems"]:
                print(f"  {p}")
        print(f"{len(reports) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0
