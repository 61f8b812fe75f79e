"""Admission (validating, mutating) and conversion webhook servers for kubewerk models,
and policies as data (``kubewerk.webhook.policy``: policies composed in Python or YAML
and compiled to ValidatingAdmissionPolicy + binding objects).

::

    from kubewerk.webhook import (
        AdmissionRequest, Allowed, Denied, Patch, WebhookApp, WebhookServer,
    )

    app = WebhookApp()

    @app.validating(Database)
    async def check(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed | Denied:
        if old is not None and db.spec.engine != old.spec.engine:
            return Denied("spec.engine cannot change")
        return Allowed()

    @app.mutating(Database)
    async def default(db: Database, old: Database | None, req: AdmissionRequest) -> None:
        db.spec.storage = db.spec.storage or "1Gi"     # answered as a JSON Patch

    @app.patching(Database, "/label")                  # the handler states its changes
    async def label(db: Database, old: Database | None, req: AdmissionRequest,
                    patch: Patch) -> None:
        patch.set_label("team", "db")                  # changes to db are NOT sent

    app.conversion("/convert")                          # every registered version pair

    WebhookServer(app, cert_file="tls.crt", key_file="tls.key").add_to(manager)

- :mod:`kubewerk.webhook.app`: the ASGI router and its HTTP contract;
- :mod:`kubewerk.webhook.admission`: typed handlers and what they are given;
- :mod:`kubewerk.webhook.patch`: the ``Patch`` a patching handler records changes in;
- :mod:`kubewerk.webhook.conversion`: ConversionReview through the models' converters;
- :mod:`kubewerk.webhook.server`: uvicorn, TLS with reload, client certificates, the
  manager;
- :mod:`kubewerk.webhook.certs`: development CA and serving certificate;
- :mod:`kubewerk.webhook.limits`: body size and nesting bounds;
- :mod:`kubewerk.webhook.metrics`: controller-runtime's webhook metrics.

See docs/webhook.md.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubewerk.webhook.admission import AdmissionEndpoint
    from kubewerk.webhook.app import WebhookApp, default_path
    from kubewerk.webhook.certs import CertificateSet, make_certificates, write_certificates
    from kubewerk.webhook.conversion import ConversionEndpoint, convert_objects
    from kubewerk.webhook.jsonpatch import diff
    from kubewerk.webhook.patch import Patch, PatchOperationError
    from kubewerk.webhook.results import Allowed, Denied, Verdict
    from kubewerk.webhook.review import AdmissionRequest, ReviewError, UserInfo
    from kubewerk.webhook.server import WebhookServer
    from kubewerk.webhook.tls import ReloadingTLS, TLSFiles

# attributes load on first use, so that importing kubewerk.webhook.policy (or one
# submodule) does not import the server, uvicorn and the models
_WHERE = {
    "AdmissionEndpoint": "kubewerk.webhook.admission",
    "AdmissionRequest": "kubewerk.webhook.review",
    "Allowed": "kubewerk.webhook.results",
    "CertificateSet": "kubewerk.webhook.certs",
    "ConversionEndpoint": "kubewerk.webhook.conversion",
    "Denied": "kubewerk.webhook.results",
    "Patch": "kubewerk.webhook.patch",
    "PatchOperationError": "kubewerk.webhook.patch",
    "ReloadingTLS": "kubewerk.webhook.tls",
    "ReviewError": "kubewerk.webhook.review",
    "TLSFiles": "kubewerk.webhook.tls",
    "UserInfo": "kubewerk.webhook.review",
    "Verdict": "kubewerk.webhook.results",
    "WebhookApp": "kubewerk.webhook.app",
    "WebhookServer": "kubewerk.webhook.server",
    "convert_objects": "kubewerk.webhook.conversion",
    "default_path": "kubewerk.webhook.app",
    "diff": "kubewerk.webhook.jsonpatch",
    "make_certificates": "kubewerk.webhook.certs",
    "write_certificates": "kubewerk.webhook.certs",
}

__all__ = [
    "AdmissionEndpoint",
    "AdmissionRequest",
    "Allowed",
    "CertificateSet",
    "ConversionEndpoint",
    "Denied",
    "Patch",
    "PatchOperationError",
    "ReloadingTLS",
    "ReviewError",
    "TLSFiles",
    "UserInfo",
    "Verdict",
    "WebhookApp",
    "WebhookServer",
    "convert_objects",
    "default_path",
    "diff",
    "make_certificates",
    "write_certificates",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kubewerk.webhook' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
