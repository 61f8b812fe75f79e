"""``kubewerk gen crd`` / ``gen policy``: write CRDs of model classes, or policies, as YAML.

``kubewerk gen crd pkg.models:Widget pkg.models:Gadget -o config/crd`` writes one file
per kind, named ``<group>_<plural>.yaml`` (controller-gen's naming); a bare module
(``pkg.models``) stands for every concrete resource class defined in it. Without
``-o`` the CRDs go to standard output as one multi-document YAML stream. The output
is stable: the same classes give byte-identical files. A kind whose versions have
different schemas converts through a webhook: ``--conversion-webhook NAMESPACE/NAME``
names its service (default: kubebuilder's kustomize placeholder, see
:class:`kubewerk.model.ConversionWebhook`).

``kubewerk gen policy pkg.policies -o deploy/policies`` writes each
:class:`kubewerk.webhook.policy.Policy` of a module (or of a YAML file of policies as
data) as ``<name>.yaml``: the ValidatingAdmissionPolicy and its binding, validated by
the engine kube-apiserver's checks are reproduced in before they are written.

``kubewerk gen rbac pkg.main:manager -n ops -o config/rbac`` writes the least-privilege
RBAC of an operator (a :class:`kubewerk.runtime.Manager`, a
:class:`kubewerk.lifecycle.Platform`, or a function returning either, as ``kubewerk
run`` takes them; a Manager whose module also defines a Platform on it is read as that
Platform): ``service_account.yaml``, ``role.yaml`` (the ClusterRole and any Roles) and
``role_binding.yaml``, derived by :mod:`kubewerk.runtime.rbac` and
:mod:`kubewerk.lifecycle.rbac`. Without ``-o`` the objects go to standard output.

``kubewerk gen deploy pkg.main:manager --image REF -o deploy`` writes everything the
operator needs in a cluster (:mod:`kubewerk.observe.deploy`): CRDs, RBAC, ServiceAccount,
Deployment, metrics Service and ServiceMonitor, webhook Service, configurations and
certificate when the target module serves webhooks (a :class:`kubewerk.webhook.WebhookServer`
or :class:`kubewerk.webhook.WebhookApp` defined in it), ``kustomization.yaml`` and a
``Dockerfile`` template. Files it wrote before and no longer writes are removed from its
own subdirectories.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from pathlib import Path
from typing import Any

from kubewerk.cli import UsageError, input_limit
from kubewerk.cli.atomic_write import write_if_changed
from kubewerk.cli.targets import takes_no_arguments


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "gen",
        help="generate CRDs, admission policies, RBAC and deployment manifests",
        description="Generate artefacts from kubewerk model classes.",
    )
    kinds = parser.add_subparsers(dest="artefact", metavar="ARTEFACT")
    crd = kinds.add_parser(
        "crd",
        help="write CustomResourceDefinitions for resource classes",
        description="Write apiextensions.k8s.io/v1 CustomResourceDefinitions for kubewerk "
        "resource classes: one file per kind (<group>_<plural>.yaml) with -o, else YAML on stdout.",
    )
    crd.add_argument(
        "targets",
        nargs="+",
        metavar="MODULE[:CLASS]",
        help="a resource class (pkg.module:Widget) or a module (all resource classes in it)",
    )
    crd.add_argument("-o", "--output", metavar="DIR", help="directory to write the files to")
    crd.add_argument(
        "--conversion-webhook",
        metavar="NAMESPACE/NAME[:PORT][/PATH]",
        help="the conversion webhook service of kinds whose versions have different schemas "
        "(default: system/webhook-service/convert, the placeholder kubebuilder's kustomize "
        "layout rewrites)",
    )
    crd.set_defaults(func=run_crd)
    pol = kinds.add_parser(
        "policy",
        help="write ValidatingAdmissionPolicy + binding YAML for policies written as data",
        description="Write each kubewerk.webhook.policy.Policy of a module (or of a YAML file of "
        "policies as data) as <name>.yaml: an admissionregistration.k8s.io/v1 "
        "ValidatingAdmissionPolicy and its binding (clusters >= 1.30). Without -o, YAML on stdout.",
    )
    pol.add_argument("targets", nargs="+", metavar="MODULE|FILE", help="a module or a YAML file")
    pol.add_argument("-o", "--output", metavar="DIR", help="directory to write the files to")
    input_limit.add_option(pol, "each YAML file of policies")
    pol.set_defaults(func=run_policy)
    rb = kinds.add_parser(
        "rbac",
        help="write the least-privilege RBAC of an operator (MODULE:MANAGER)",
        description="Write the ServiceAccount, ClusterRole/Roles and bindings an operator "
        "needs, derived from what its controllers watch, own and write (status, finalizers, "
        "Events, the leader-election Lease) plus the rules declared with "
        "kubewerk.runtime.rbac. With -o: service_account.yaml, role.yaml and "
        "role_binding.yaml in DIR; else YAML on stdout.",
    )
    rb.add_argument(
        "target",
        metavar="MODULE:MANAGER",
        help="a Manager, a Platform, or a function returning either (e.g. pkg.main:manager)",
    )
    rb.add_argument("-o", "--output", metavar="DIR", help="directory to write the files to")
    rb.add_argument(
        "-n",
        "--namespace",
        default="default",
        help="the namespace the operator runs in: its ServiceAccount's, and the Lease's "
        "unless the manager names one (default: default)",
    )
    rb.add_argument(
        "--name", help="the ServiceAccount's (and the roles') name (default: the manager's name)"
    )
    rb.add_argument(
        "--leader-elect",
        action="store_true",
        default=None,
        help="include the leader-election Lease even if the manager does not enable it "
        "(as kubewerk run --leader-elect does at run time)",
    )
    rb.set_defaults(func=run_rbac)
    _register_deploy(kinds)
    parser.set_defaults(func=lambda args: _no_artefact(parser))


def _write(out: Path, path: Path, text: str) -> None:
    """Write one generated file whole (``write_if_changed``: an unchanged file is left
    as it is); a failure is a usage error naming ``-o`` and the file."""
    try:
        write_if_changed(path, text)
    except OSError as exc:
        raise UsageError(f"-o {out}: {path.name}: {exc.strerror or exc}") from None


def _no_artefact(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _import(module_name: str) -> Any:
    """The module named ``module_name``, or of the Python file it names (``pkg/mod.py``:
    imported as ``mod`` with ``pkg/`` on the path, so its own imports resolve as they do
    when it is run); a :class:`UsageError` saying why when it cannot be imported."""
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.is_file():
            why = "not a regular file" if path.exists() else "no such file"
            raise UsageError(f"{module_name}: {why}")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module_name = path.stem
        if not module_name.isidentifier():
            raise UsageError(f"{path}: {path.name!r} is not an importable module name")
    elif str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise UsageError(
                f"cannot import module {module_name!r}: no module named {exc.name!r}"
            ) from None
        raise UsageError(f"cannot import module {module_name!r}: {exc}") from None
    except Exception as exc:
        # the module exists but fails to import: show the cause in one line
        raise UsageError(
            f"cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None


def _resolve(target: str) -> list[type[Any]]:
    from kubewerk.model import Resource

    module_name, _, attr = target.partition(":")
    if not module_name:
        raise UsageError(f"{target!r}: expected MODULE or MODULE:CLASS")
    module = _import(module_name)
    if attr:
        obj: Any = module
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise UsageError(f"module {module_name!r} has no attribute {attr!r}")
            obj = getattr(obj, part)
        if not (inspect.isclass(obj) and issubclass(obj, Resource)):
            raise UsageError(f"{target!r} is not a kubewerk Resource class")
        if obj.__kube__ is None:
            raise UsageError(f"{target!r} is not a concrete kind (declare it with group=...)")
        return [obj]
    found = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Resource)
        and obj.__module__ == module.__name__
        and "__kube__" in obj.__dict__
        and obj.__kube__ is not None
    ]
    if not found:
        raise UsageError(f"module {module_name!r} defines no kubewerk resource classes")
    return found


def run_crd(args: argparse.Namespace) -> int:
    from kubewerk.model import ConversionWebhook, ModelDefinitionError, crds_for, dump_yaml

    webhook = None
    if args.conversion_webhook is not None:
        try:
            webhook = ConversionWebhook.parse(args.conversion_webhook)
        except ValueError as exc:
            raise UsageError(f"--conversion-webhook: {exc}") from None
    classes: list[type[Any]] = []
    for target in args.targets:
        for cls in _resolve(target):
            if cls not in classes:
                classes.append(cls)
    try:
        crds = crds_for(classes, webhook=webhook)
    except ModelDefinitionError as exc:
        raise UsageError(str(exc)) from None
    if not args.output:
        sys.stdout.write("---\n".join(dump_yaml(crd) for crd in crds))
        return 0
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"-o {out}: {exc.strerror or exc}") from None
    for crd in crds:
        spec = crd["spec"]
        path = out / f"{spec['group']}_{spec['names']['plural']}.yaml"
        _write(out, path, dump_yaml(crd))
        print(path)
    return 0


def policies_of(target: str) -> list[Any]:
    """The policies of ``target``: a YAML file of policies as data, else a module (a name
    or a ``.py`` file) whose :class:`~kubewerk.webhook.policy.Policy` objects are taken."""
    from kubewerk.webhook.policy import Policy, PolicyDefinitionError, policy_from_data

    if target.endswith((".yaml", ".yml")):
        from kubewerk.cli.policy import load_documents

        # as `policy test` reads it: bounded, UTF-8, YAML as a cluster reads it
        docs = load_documents(target)
        try:
            return [policy_from_data(d) for d in docs if d is not None]
        except PolicyDefinitionError as exc:
            raise UsageError(f"{target}: {exc}") from None
    module = _import(target)
    found = [v for v in vars(module).values() if isinstance(v, Policy)]
    if not found:
        raise UsageError(f"module {target!r} defines no kubewerk.webhook.policy.Policy")
    return found


def run_policy(args: argparse.Namespace) -> int:
    from kubewerk.model import dump_yaml
    from kubewerk.schema.admission_policy import validate_binding, validate_policy

    policies: list[Any] = []
    for target in args.targets:
        policies.extend(policies_of(target))
    texts: list[tuple[str, str]] = []
    for pol in policies:
        objects = pol.to_objects()
        errs = validate_policy(objects[0]) + validate_binding(objects[1])
        if errs:
            raise UsageError(
                f"policy {pol.name!r} is invalid: " + "; ".join(e.message() for e in errs)
            )
        texts.append((pol.name, "---\n".join(dump_yaml(o) for o in objects)))
    if not args.output:
        sys.stdout.write("---\n".join(t for _, t in texts))
        return 0
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"-o {out}: {exc.strerror or exc}") from None
    for name, text in texts:
        path = out / f"{name}.yaml"
        _write(out, path, text)
        print(path)
    return 0


RBAC_FILES = (
    ("service_account.yaml", ("ServiceAccount",)),
    ("role.yaml", ("ClusterRole", "Role")),
    ("role_binding.yaml", ("ClusterRoleBinding", "RoleBinding")),
)
"""The files ``gen rbac -o DIR`` writes, and the kinds each holds (kubebuilder's names)."""


def _rbac_target(target: str) -> Any:
    """The Platform or Manager ``MODULE:ATTR`` names (a factory is called; a Manager
    whose module defines a Platform on it gives that Platform)."""
    from kubewerk.lifecycle.platform import Platform
    from kubewerk.runtime.manager import Manager

    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"target {target!r} must look like MODULE:MANAGER")
    module = _import(module_name)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not isinstance(obj, (Manager, Platform)) and takes_no_arguments(obj):
        obj = obj()
    if isinstance(obj, Manager):
        for value in vars(module).values():
            if isinstance(value, Platform) and value.manager is obj:
                return value
        return obj
    if isinstance(obj, Platform):
        return obj
    raise UsageError(
        f"{target} is not a kubewerk.runtime.Manager or kubewerk.lifecycle.Platform "
        f"(got {type(obj).__name__})"
    )


def rbac_for(
    target: Any, namespace: str, name: str | None, leader_election: bool | None
) -> list[dict[str, Any]]:
    """The RBAC objects of a Manager or Platform (see the module doc); a refusal of the
    derivation is a usage error."""
    from kubewerk.lifecycle.rbac import operator_rbac
    from kubewerk.model.errors import ModelDefinitionError

    try:
        return operator_rbac(target, namespace, name=name, leader_election=leader_election)
    except (ModelDefinitionError, ValueError) as exc:
        raise UsageError(str(exc)) from None


def run_rbac(args: argparse.Namespace) -> int:
    from kubewerk.core.validation import is_dns1123_label, is_dns1123_subdomain
    from kubewerk.model import dump_yaml

    checks = (
        (args.namespace, "--namespace", is_dns1123_label),
        (args.name, "--name", is_dns1123_subdomain),
    )
    for value, flag, check in checks:
        errors = check(value) if value is not None else []
        if errors:
            raise UsageError(f"{flag} {value!r}: {errors[0]}")
    objects = rbac_for(_rbac_target(args.target), args.namespace, args.name, args.leader_elect)
    if not args.output:
        sys.stdout.write("---\n".join(dump_yaml(o) for o in objects))
        return 0
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"-o {out}: {exc.strerror or exc}") from None
    for filename, kinds in RBAC_FILES:
        docs = [o for o in objects if o["kind"] in kinds]
        path = out / filename
        if not docs:
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise UsageError(f"-o {out}: {path.name}: {exc.strerror or exc}") from None
            continue
        _write(out, path, "---\n".join(dump_yaml(o) for o in docs))
        print(path)
    return 0


# -- gen deploy -------------------------------------------------------------------------

INT32_MAX = 2**31 - 1
"""The largest ``spec.replicas`` a cluster takes (``DeploymentSpec.Replicas`` is ``*int32``)."""

DEPLOY_DIRS = ("crd", "rbac", "manager", "metrics", "webhook")
"""The subdirectories ``gen deploy`` owns: a stale ``.yaml`` in them is removed."""


def _register_deploy(kinds: Any) -> None:
    dp = kinds.add_parser(
        "deploy",
        help="write the manifests (and a Dockerfile) to run an operator in a cluster",
        description="Write CRDs, least-privilege RBAC, a ServiceAccount, a Deployment (probes, "
        "resources, leader election when replicas > 1, SIGTERM grace), a metrics Service and "
        "ServiceMonitor, webhook configurations with their certificate when webhooks are "
        "served, a kustomization.yaml and a Dockerfile template into DIR.",
    )
    dp.add_argument(
        "target",
        metavar="MODULE:MANAGER",
        help="a Manager, a Platform, or a function returning either (e.g. pkg.main:manager)",
    )
    dp.add_argument("-o", "--output", metavar="DIR", required=True, help="directory to write to")
    dp.add_argument("--image", required=True, help="the operator's container image")
    dp.add_argument("-n", "--namespace", help="the namespace to run in (default: <name>-system)")
    dp.add_argument("--name", help="base name of every object (default: the manager's name)")
    dp.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="replicas; more than 1 turns leader election on (default: 1)",
    )
    dp.add_argument(
        "--requests",
        default="cpu=100m,memory=128Mi",
        metavar="RES=QTY,...",
        help="the container's resource requests (default: cpu=100m,memory=128Mi)",
    )
    dp.add_argument(
        "--limits",
        default="cpu=1,memory=512Mi",
        metavar="RES=QTY,...",
        help="the container's resource limits (default: cpu=1,memory=512Mi)",
    )
    dp.add_argument(
        "--certs",
        choices=("cert-manager", "secret"),
        default="cert-manager",
        help="webhook serving certificate: a cert-manager Certificate with CA injection "
        "(default), or a kubernetes.io/tls Secret you fill",
    )
    dp.add_argument(
        "--no-service-monitor",
        action="store_true",
        help="leave out the ServiceMonitor (clusters without the Prometheus Operator)",
    )
    dp.set_defaults(func=run_deploy)


def _resources(flag: str, text: str) -> dict[str, str]:
    from kubewerk.schema.cel.library import parse_quantity

    out: dict[str, str] = {}
    for item in filter(None, text.split(",")):
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise UsageError(f"{flag} {text!r}: expected RESOURCE=QUANTITY[,...]")
        if parse_quantity(value) is None:
            raise UsageError(f"{flag} {name}={value!r}: not a Kubernetes quantity")
        out[name] = value
    return dict(sorted(out.items()))


def _webhook_serving(module_name: str) -> Any:
    """The webhooks the target's module serves: its WebhookServer (port and certificate
    files) or, without one, its WebhookApp (the default port and certificate directory)."""
    from kubewerk.client.resources import resource_type_of
    from kubewerk.observe.deploy import WebhookEndpoint, WebhookServing
    from kubewerk.webhook.admission import AdmissionEndpoint
    from kubewerk.webhook.app import WebhookApp
    from kubewerk.webhook.server import WebhookServer

    module = sys.modules[module_name]
    servers = [v for v in vars(module).values() if isinstance(v, WebhookServer)]
    apps = [s.app for s in servers] or [
        v for v in vars(module).values() if isinstance(v, WebhookApp)
    ]
    if not apps:
        return None
    if len(apps) > 1 or len(servers) > 1:
        raise UsageError(f"module {module_name!r} defines more than one webhook server or app")
    endpoints: list[WebhookEndpoint] = []
    for path, endpoint in apps[0].endpoints.items():
        if isinstance(endpoint, AdmissionEndpoint):
            info = endpoint.model.kind_info()
            rt = resource_type_of(endpoint.model)
            endpoints.append(
                WebhookEndpoint(
                    path,
                    info.group,
                    info.version,
                    info.kind,
                    rt.plural,
                    rt.namespaced,
                    endpoint.mutating,
                    endpoint.side_effects,
                )
            )
        else:
            endpoints.append(WebhookEndpoint(path, conversion=True))
    if not servers:
        return WebhookServing(tuple(endpoints))
    server = servers[0]
    if server.files is None:
        raise UsageError(
            f"the webhook server of {module_name!r} has no certificate: kube-apiserver calls "
            "webhooks over HTTPS only (give WebhookServer cert_file= and key_file=)"
        )
    cert, key = server.files.cert_file, server.files.key_file
    if cert.parent != key.parent or not cert.is_absolute():
        raise UsageError(
            f"the webhook server of {module_name!r} reads {cert} and {key}: the Deployment "
            "mounts one Secret, so give absolute paths in one directory"
        )
    return WebhookServing(tuple(endpoints), server.port, str(cert.parent), cert.name, key.name)


def _deploy_crds(target: Any, webhook: Any) -> list[dict[str, Any]]:
    """The CRDs of the kinds the operator reconciles or watches that are model classes."""
    from kubewerk.lifecycle.platform import Platform
    from kubewerk.model import ModelDefinitionError, Resource, crds_for

    manager = target.manager if isinstance(target, Platform) else target
    kinds: list[Any] = []
    candidates: list[Any] = []
    if isinstance(target, Platform):
        candidates.extend(r.kind for r in target.kinds.values())
    for controller in manager.controllers:
        candidates.append(controller.kind)
        candidates.extend(w.kind for w in controller.watches)
    for kind in candidates:
        if (
            inspect.isclass(kind)
            and issubclass(kind, Resource)
            and kind.__kube__ is not None
            and kind not in kinds
        ):
            kinds.append(kind)
    kinds.sort(key=lambda k: (k.kind_info().group, k.kind_info().kind))
    try:
        return crds_for(kinds, webhook=webhook)
    except ModelDefinitionError as exc:
        raise UsageError(str(exc)) from None


def run_deploy(args: argparse.Namespace) -> int:
    from kubewerk.core.validation import is_dns1123_label
    from kubewerk.lifecycle.platform import Platform
    from kubewerk.model import ConversionWebhook, dump_yaml
    from kubewerk.model.errors import ModelDefinitionError
    from kubewerk.observe.deploy import DeployOptions, deploy_files

    target = _rbac_target(args.target)
    manager = target.manager if isinstance(target, Platform) else target
    name = args.name or manager.name
    namespace = args.namespace or f"{name}-system"
    checks = ((namespace, "--namespace", is_dns1123_label), (name, "--name", is_dns1123_label))
    for value, flag, check in checks:
        errors = check(value)
        if errors:
            raise UsageError(f"{flag} {value!r}: {errors[0]}")
    if not args.image.strip() or any(c.isspace() for c in args.image):
        raise UsageError(f"--image {args.image!r}: not an image reference")
    if args.replicas < 1:
        raise UsageError(f"--replicas {args.replicas}: must be at least 1")
    if args.replicas > INT32_MAX:
        raise UsageError(
            f"--replicas {args.replicas}: must be at most {INT32_MAX} "
            "(a Deployment's spec.replicas is an int32)"
        )
    serving = _webhook_serving(args.target.partition(":")[0])
    conversion = None
    if serving is not None:
        convert = next((e.path for e in serving.endpoints if e.conversion), None)
        if convert is not None:
            conversion = ConversionWebhook(namespace, f"{name}-webhook", convert, 443)
    options = DeployOptions(
        target=args.target,
        image=args.image,
        namespace=namespace,
        name=name,
        replicas=args.replicas,
        requests=_resources("--requests", args.requests),
        limits=_resources("--limits", args.limits),
        certs=args.certs,
        service_monitor=not args.no_service_monitor,
    )
    try:
        files = deploy_files(target, _deploy_crds(target, conversion), options, serving)
    except (ModelDefinitionError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for sub in DEPLOY_DIRS:
            for stale in sorted((out / sub).glob("*.yaml")):
                if stale.relative_to(out).as_posix() not in files:
                    stale.unlink()
        for rel, content in files.items():
            path = out / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            text = content if isinstance(content, str) else "---\n".join(map(dump_yaml, content))
            write_if_changed(path, text)
            print(path)
        if "namespace.yaml" not in files:
            (out / "namespace.yaml").unlink(missing_ok=True)
    except OSError as exc:
        raise UsageError(f"-o {out}: {exc.strerror or exc}") from None
    return 0
