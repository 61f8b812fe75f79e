"""Shipping an operator: every manifest it needs in a cluster, from its Manager.

:func:`deploy_files` turns a :class:`~kubewerk.runtime.Manager` (or a
:class:`~kubewerk.lifecycle.Platform`), the CRDs of its kinds and the webhooks it serves
into files (``kubewerk gen deploy MODULE:MANAGER -o DIR`` writes them):

- ``crd/<group>_<plural>.yaml``: the CRDs (a kind converted by a webhook points at the
  operator's webhook Service);
- ``rbac/``: the ServiceAccount, roles and bindings ``kubewerk gen rbac`` derives (least
  privilege from what the controllers watch, own and write), with the Lease when
  leader election is on;
- ``manager/deployment.yaml``: the Deployment running ``kubewerk run MODULE:MANAGER``
  (``--leader-elect`` when ``replicas > 1`` or the manager elects; probes on ``/healthz``
  and ``/readyz`` at the manager's probe port; resource requests and limits;
  ``terminationGracePeriodSeconds`` the manager's graceful shutdown timeout plus
  :data:`SHUTDOWN_MARGIN` for the Lease release and the Event flush after SIGTERM;
  non-root, read-only root filesystem, no privilege escalation, every capability
  dropped);
- ``metrics/``: a Service for ``/metrics`` (served on the probe port) and a
  Prometheus Operator ``ServiceMonitor`` selecting it (``service_monitor=False`` leaves
  it out for clusters without that CRD);
- ``webhook/`` when webhooks are served: their Service (443 to the server's port), the
  Validating/MutatingWebhookConfigurations (one webhook per registered path) and the
  serving certificate: with ``certs="cert-manager"`` a self-signed ``Issuer`` and a
  ``Certificate`` whose Secret is mounted where the server reads its files, the
  configurations and converting CRDs annotated ``cert-manager.io/inject-ca-from`` so
  cert-manager fills their ``caBundle``; with ``certs="secret"`` an empty
  ``kubernetes.io/tls`` Secret to fill (``kubewerk webhook certs``) and no ``caBundle``
  (to set, see docs/observe.md);
- ``namespace.yaml`` (unless the namespace is ``default``), ``kustomization.yaml``
  listing every file in apply order, and a ``Dockerfile`` template for the image.

The output is a function of its inputs only: the same operator and options give the
same bytes (objects and keys in a fixed order, no timestamps).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Final, Literal

from kubewerk.lifecycle.platform import Platform
from kubewerk.lifecycle.rbac import operator_rbac

__all__ = [
    "DEFAULT_CERT_DIR",
    "SHUTDOWN_MARGIN",
    "DeployOptions",
    "WebhookEndpoint",
    "WebhookServing",
    "deploy_files",
]

SHUTDOWN_MARGIN: Final = 10
"""Seconds of ``terminationGracePeriodSeconds`` beyond the manager's graceful shutdown
timeout: after the reconciles drain, the manager flushes Events, releases the Lease and
closes its client before it exits; the kubelet's SIGKILL must not cut that short."""

DEFAULT_CERT_DIR: Final = "/tmp/k8s-webhook-server/serving-certs"
"""Where the serving certificate is mounted when the webhook server names no files
(controller-runtime's default directory)."""

CONTAINER: Final = "manager"
NAME_LABEL: Final = "app.kubernetes.io/name"
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
MANAGED_BY: Final = {"app.kubernetes.io/managed-by": "kubewerk"}
CERT_MANAGER_INJECT: Final = "cert-manager.io/inject-ca-from"

Certs = Literal["cert-manager", "secret"]


@dataclass(frozen=True, slots=True)
class WebhookEndpoint:
    """One served admission or conversion path: for admission, the kind it admits
    (``group``/``version``/``plural``, namespaced or not) and whether it mutates or has
    side effects; ``conversion`` for a ConversionReview endpoint (kinds unused)."""

    path: str
    group: str = ""
    version: str = ""
    kind: str = ""
    plural: str = ""
    namespaced: bool = True
    mutating: bool = False
    side_effects: bool = False
    conversion: bool = False


@dataclass(frozen=True, slots=True)
class WebhookServing:
    """Where the operator serves its webhooks: the container port and the directory its
    certificate and key are read from (``tls.crt``/``tls.key`` names are cert-manager's
    and a ``kubernetes.io/tls`` Secret's keys)."""

    endpoints: tuple[WebhookEndpoint, ...]
    port: int = 9443
    cert_dir: str = DEFAULT_CERT_DIR
    cert_file: str = "tls.crt"
    key_file: str = "tls.key"


@dataclass(frozen=True, slots=True)
class DeployOptions:
    """What the manager does not say about its deployment."""

    target: str
    """``MODULE:MANAGER`` as ``kubewerk run`` takes it (the container's argument)."""
    image: str
    namespace: str = "default"
    name: str | None = None
    """The ServiceAccount, roles, Deployment and Services' base name (default: the
    manager's name)."""
    replicas: int = 1
    requests: Mapping[str, str] = field(default_factory=lambda: {"cpu": "100m", "memory": "128Mi"})
    limits: Mapping[str, str] = field(default_factory=lambda: {"cpu": "1", "memory": "512Mi"})
    certs: Certs = "cert-manager"
    service_monitor: bool = True
    image_pull_policy: str = "IfNotPresent"


def _manager(target: Any) -> Any:
    return target.manager if isinstance(target, Platform) else target


def _meta(name: str, namespace: str | None, labels: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if namespace is not None:
        out["namespace"] = namespace
    out["labels"] = dict(labels)
    return out


def _webhook_name(endpoint: WebhookEndpoint) -> str:
    """kubebuilder's ``<m|v><kind>-<version>.<group>``; a webhook name needs three DNS
    labels, so a short group gets ``.kubewerk.dev`` appended."""
    prefix = "m" if endpoint.mutating else "v"
    name = f"{prefix}{endpoint.kind.lower()}-{endpoint.version}.{endpoint.group or 'core'}"
    return name if name.count(".") >= 2 else f"{name}.kubewerk.dev"


class _Builder:
    def __init__(
        self,
        target: Any,
        crds: Sequence[Mapping[str, Any]],
        options: DeployOptions,
        webhooks: WebhookServing | None,
    ) -> None:
        self.target = target
        self.manager = _manager(target)
        self.crds = crds
        self.options = options
        self.webhooks = webhooks if webhooks is not None and webhooks.endpoints else None
        self.name = options.name or self.manager.name
        self.namespace = options.namespace
        self.labels = {NAME_LABEL: self.name, **MANAGED_BY}
        self.selector = {NAME_LABEL: self.name, COMPONENT_LABEL: "operator"}
        self.probe_port = self.manager.probe_port or 8081
        self.leader_elect = options.replicas > 1 or bool(self.manager.leader_election)
        self.cert_name = f"{self.name}-serving-cert"
        self.cert_secret = f"{self.name}-webhook-cert"
        self.webhook_service = f"{self.name}-webhook"

    def labelled(self, component: str) -> dict[str, str]:
        return {**self.labels, COMPONENT_LABEL: component}

    # -- pieces ---------------------------------------------------------------------------

    def namespace_object(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": _meta(self.namespace, None, self.labels),
        }

    def rbac(self) -> list[dict[str, Any]]:
        objects = operator_rbac(
            self.target,
            self.namespace,
            name=self.name,
            leader_election=True if self.leader_elect else None,
        )
        for obj in objects:
            obj["metadata"]["labels"] = self.labelled("rbac")
        return objects

    def crd_objects(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        inject = self.webhooks is not None and self.options.certs == "cert-manager"
        for crd in self.crds:
            copy = dict(crd)
            converted = (copy.get("spec") or {}).get("conversion", {}).get("strategy") == "Webhook"
            if converted and inject:
                meta = dict(copy.get("metadata") or {})
                meta["annotations"] = {
                    **(meta.get("annotations") or {}),
                    CERT_MANAGER_INJECT: f"{self.namespace}/{self.cert_name}",
                }
                copy["metadata"] = meta
            out.append(copy)
        return out

    def deployment(self) -> dict[str, Any]:
        opts = self.options
        args = ["run", opts.target, "--probe-address", f":{self.probe_port}"]
        if self.leader_elect:
            args += ["--leader-elect", "--leader-election-id", self.manager.leader_election_id]
        ports = [{"name": "metrics", "containerPort": self.probe_port, "protocol": "TCP"}]
        container: dict[str, Any] = {
            "name": CONTAINER,
            "image": opts.image,
            "imagePullPolicy": opts.image_pull_policy,
            "command": ["kubewerk"],
            "args": args,
            "ports": ports,
            "livenessProbe": {
                "httpGet": {"path": "/healthz", "port": self.probe_port},
                "initialDelaySeconds": 15,
                "periodSeconds": 20,
            },
            "readinessProbe": {
                "httpGet": {"path": "/readyz", "port": self.probe_port},
                "initialDelaySeconds": 5,
                "periodSeconds": 10,
            },
            "resources": {"requests": dict(opts.requests), "limits": dict(opts.limits)},
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
                "readOnlyRootFilesystem": True,
            },
        }
        pod: dict[str, Any] = {
            "serviceAccountName": self.name,
            "terminationGracePeriodSeconds": math.ceil(self.manager.graceful_shutdown_timeout)
            + SHUTDOWN_MARGIN,
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container],
        }
        if self.webhooks is not None:
            ports.append(
                {"name": "webhook-server", "containerPort": self.webhooks.port, "protocol": "TCP"}
            )
            container["volumeMounts"] = [
                {"name": "webhook-cert", "mountPath": self.webhooks.cert_dir, "readOnly": True}
            ]
            secret: dict[str, Any] = {"secretName": self.cert_secret}
            if (self.webhooks.cert_file, self.webhooks.key_file) != ("tls.crt", "tls.key"):
                secret["items"] = [
                    {"key": "tls.crt", "path": self.webhooks.cert_file},
                    {"key": "tls.key", "path": self.webhooks.key_file},
                ]
            pod["volumes"] = [{"name": "webhook-cert", "secret": secret}]
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(self.name, self.namespace, self.labelled("operator")),
            "spec": {
                "replicas": opts.replicas,
                "selector": {"matchLabels": dict(self.selector)},
                "template": {
                    "metadata": {
                        "annotations": {"kubectl.kubernetes.io/default-container": CONTAINER},
                        "labels": {**self.labelled("operator")},
                    },
                    "spec": pod,
                },
            },
        }

    def metrics(self) -> list[dict[str, Any]]:
        labels = self.labelled("metrics")
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(f"{self.name}-metrics", self.namespace, labels),
            "spec": {
                "selector": dict(self.selector),
                "ports": [
                    {
                        "name": "metrics",
                        "port": self.probe_port,
                        "protocol": "TCP",
                        "targetPort": "metrics",
                    }
                ],
            },
        }
        if not self.options.service_monitor:
            return [service]
        monitor = {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": _meta(self.name, self.namespace, labels),
            "spec": {
                "selector": {"matchLabels": {NAME_LABEL: self.name, COMPONENT_LABEL: "metrics"}},
                "endpoints": [{"port": "metrics", "path": "/metrics", "scheme": "http"}],
            },
        }
        return [service, monitor]

    def webhook_objects(self) -> dict[str, list[dict[str, Any]]]:
        assert self.webhooks is not None
        labels = self.labelled("webhook")
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(self.webhook_service, self.namespace, labels),
            "spec": {
                "selector": dict(self.selector),
                "ports": [
                    {
                        "name": "webhook",
                        "port": 443,
                        "protocol": "TCP",
                        "targetPort": "webhook-server",
                    }
                ],
            },
        }
        annotations = (
            {CERT_MANAGER_INJECT: f"{self.namespace}/{self.cert_name}"}
            if self.options.certs == "cert-manager"
            else {}
        )
        configurations: list[dict[str, Any]] = []
        for mutating in (True, False):
            hooks = [
                self._webhook(e)
                for e in self.webhooks.endpoints
                if not e.conversion and e.mutating is mutating
            ]
            if not hooks:
                continue
            kind = "Mutating" if mutating else "Validating"
            meta = _meta(f"{self.name}-{kind.lower()}", None, labels)
            if annotations:
                meta["annotations"] = dict(annotations)
            configurations.append(
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": f"{kind}WebhookConfiguration",
                    "metadata": meta,
                    "webhooks": sorted(hooks, key=lambda h: str(h["name"])),
                }
            )
        files: dict[str, list[dict[str, Any]]] = {"webhook/service.yaml": [service]}
        if configurations:
            files["webhook/manifests.yaml"] = configurations
        files["webhook/certificate.yaml"] = self.certificate()
        return files

    def _webhook(self, endpoint: WebhookEndpoint) -> dict[str, Any]:
        return {
            "name": _webhook_name(endpoint),
            "admissionReviewVersions": ["v1"],
            "clientConfig": {
                "service": {
                    "name": self.webhook_service,
                    "namespace": self.namespace,
                    "path": endpoint.path,
                    "port": 443,
                }
            },
            "failurePolicy": "Fail",
            "rules": [
                {
                    "apiGroups": [endpoint.group],
                    "apiVersions": [endpoint.version],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": [endpoint.plural],
                    "scope": "Namespaced" if endpoint.namespaced else "Cluster",
                }
            ],
            # a handler with side effects refuses dry-run requests (kubewerk.webhook)
            "sideEffects": "NoneOnDryRun" if endpoint.side_effects else "None",
            "timeoutSeconds": 10,
        }

    def certificate(self) -> list[dict[str, Any]]:
        labels = self.labelled("webhook")
        if self.options.certs == "secret":
            return [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": _meta(self.cert_secret, self.namespace, labels),
                    "type": "kubernetes.io/tls",
                    "data": {"tls.crt": "", "tls.key": ""},
                }
            ]
        issuer = f"{self.name}-selfsigned"
        host = f"{self.webhook_service}.{self.namespace}.svc"
        return [
            {
                "apiVersion": "cert-manager.io/v1",
                "kind": "Issuer",
                "metadata": _meta(issuer, self.namespace, labels),
                "spec": {"selfSigned": {}},
            },
            {
                "apiVersion": "cert-manager.io/v1",
                "kind": "Certificate",
                "metadata": _meta(self.cert_name, self.namespace, labels),
                "spec": {
                    "dnsNames": [host, f"{host}.cluster.local"],
                    "issuerRef": {"kind": "Issuer", "name": issuer},
                    "secretName": self.cert_secret,
                },
            },
        ]

    def dockerfile(self) -> str:
        module = self.options.target.partition(":")[0]
        top = module.split(".")[0]
        return DOCKERFILE.format(target=self.options.target, package=top, port=self.probe_port)

    # -- all of it --------------------------------------------------------------------------

    def files(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        if self.namespace != "default":
            out["namespace.yaml"] = [self.namespace_object()]
        for crd in self.crd_objects():
            spec = crd["spec"]
            out[f"crd/{spec['group']}_{spec['names']['plural']}.yaml"] = [crd]
        rbac = self.rbac()
        for filename, kinds in RBAC_FILES:
            docs = [o for o in rbac if o["kind"] in kinds]
            if docs:
                out[f"rbac/{filename}"] = docs
        if self.webhooks is not None:
            out.update(self.webhook_objects())
        metrics = self.metrics()
        out["metrics/service.yaml"] = metrics[:1]
        if len(metrics) > 1:
            out["metrics/service_monitor.yaml"] = metrics[1:]
        out["manager/deployment.yaml"] = [self.deployment()]
        return out


RBAC_FILES: Final = (
    ("service_account.yaml", ("ServiceAccount",)),
    ("role.yaml", ("ClusterRole", "Role")),
    ("role_binding.yaml", ("ClusterRoleBinding", "RoleBinding")),
)

DOCKERFILE: Final = """\
# The operator's image, generated by `kubewerk gen deploy` (a template: adapt it).
# Build from the directory holding the `{package}` package and its requirements:
#   docker build -f <this file> -t <image> .
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /operator

# kubewerk is not on a package index: build its wheel from a kubewerk checkout into ./wheels
# first (pip wheel --no-deps -w wheels /path/to/kubewerk); add the operator's own
# dependencies (a requirements.txt) if it has any
COPY wheels/ /tmp/wheels/
RUN pip install /tmp/wheels/kubewerk-*.whl && rm -rf /tmp/wheels

COPY {package}/ ./{package}/

# a non-root user (the Deployment runs with runAsNonRoot and a read-only root filesystem)
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin operator
USER 65532:65532

# probes and metrics; SIGTERM shuts down gracefully (kubewerk run)
EXPOSE {port}
ENTRYPOINT ["kubewerk"]
CMD ["run", "{target}"]
"""


def deploy_files(
    target: Any,
    crds: Sequence[Mapping[str, Any]],
    options: DeployOptions,
    webhooks: WebhookServing | None = None,
) -> dict[str, list[dict[str, Any]] | str]:
    """The files to write, by path relative to the output directory: lists of objects
    (YAML documents) and the ``Dockerfile`` (text), with ``kustomization.yaml`` naming
    the manifests in apply order (see the module doc). ``target`` is a Manager or a
    Platform; ``crds`` the CRDs of its kinds as ``kubewerk gen crd`` makes them.

    Raises ``ValueError`` for options Kubernetes would refuse (replicas below 1) and
    what the RBAC derivation refuses (see :func:`kubewerk.lifecycle.rbac.operator_rbac`)."""
    if options.replicas < 1:
        raise ValueError(f"replicas must be at least 1, not {options.replicas}")
    builder = _Builder(target, crds, options, webhooks)
    manifests = builder.files()
    out: dict[str, list[dict[str, Any]] | str] = dict(manifests)
    out["kustomization.yaml"] = [
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [str(PurePosixPath(path)) for path in manifests],
        }
    ]
    out["Dockerfile"] = builder.dockerfile()
    return out
