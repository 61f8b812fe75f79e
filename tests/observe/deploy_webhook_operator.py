"""An operator serving webhooks, for ``kubewerk gen deploy``'s tests: the Widget
controller plus a validating and a mutating webhook and the conversion endpoint, on a
WebhookServer reading its certificate from /etc/widget-certs."""

from __future__ import annotations

from kubewerk.webhook import AdmissionRequest, Allowed, Denied, WebhookApp, WebhookServer
from tests.client.models import Widget
from tests.runtime.widget_operator import build

manager = build()
manager.name = "widget-operator"

app = WebhookApp()


@app.validating(Widget)
async def check(w: Widget, old: Widget | None, req: AdmissionRequest) -> Allowed | Denied:
    return Allowed() if w.spec.size >= 0 else Denied("spec.size must not be negative")


@app.mutating(Widget, side_effects=True)
async def default(w: Widget, old: Widget | None, req: AdmissionRequest) -> None:
    return None


app.conversion("/convert")

server = WebhookServer(
    app, port=9443, cert_file="/etc/widget-certs/tls.crt", key_file="/etc/widget-certs/tls.key"
)
server.add_to(manager)
