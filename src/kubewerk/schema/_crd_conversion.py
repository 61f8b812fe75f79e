"""A CRD's ``spec.conversion``: strategy, webhook client config and review versions.

The checks of ``ValidateCustomResourceConversion`` with the apiserver's paths and
messages (the internal version's ``webhookClientConfig`` and
``conversionReviewVersions`` paths).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kubewerk.core.errors import FieldError

from . import _structural as st
from ._crd_internal import as_str, dict_or_none


def validate_conversion(conv: Any, path: str) -> list[FieldError]:
    """``spec.conversion`` at ``path``: the strategy, and a webhook's client config and
    review versions exactly when the strategy is ``Webhook``."""
    errs: list[FieldError] = []
    if not isinstance(conv, dict):
        return errs
    strategy = as_str(conv.get("strategy"))
    if not strategy:
        errs.append(FieldError.required(f"{path}.strategy"))
    elif strategy not in ("None", "Webhook"):
        errs.append(FieldError.not_supported(f"{path}.strategy", strategy, ["None", "Webhook"]))
    webhook = dict_or_none(conv.get("webhook"))
    cc = (
        webhook.get("clientConfig")
        if webhook and isinstance(webhook.get("clientConfig"), dict)
        else None
    )
    review = (webhook or {}).get("conversionReviewVersions") or []
    if strategy == "Webhook":
        if cc is None:
            errs.append(
                FieldError.required(
                    f"{path}.webhookClientConfig", "required when strategy is set to Webhook"
                )
            )
        else:
            ccp = f"{path}.webhookClientConfig"
            has_url = cc.get("url") is not None
            has_svc = cc.get("service") is not None
            if has_url == has_svc:
                errs.append(FieldError.required(ccp, "exactly one of url or service is required"))
            elif has_url:
                errs.extend(_validate_webhook_url(f"{ccp}.url", as_str(cc.get("url"))))
            else:
                svc = cc["service"] if isinstance(cc["service"], dict) else {}
                errs.extend(_validate_webhook_service(f"{ccp}.service", svc))
        rp = f"{path}.conversionReviewVersions"
        if not review:
            errs.append(FieldError.required(rp))
        else:
            seen: set[str] = set()
            accepted = False
            for i, v in enumerate(review):
                if v in seen:
                    errs.append(FieldError.invalid(f"{rp}[{i}]", v, "duplicate version"))
                    continue
                seen.add(v)
                for msg in st.dns1035_label_errors(as_str(v)):
                    errs.append(FieldError.invalid(f"{rp}[{i}]", v, msg))
                if v in ("v1", "v1beta1"):
                    accepted = True
            if not accepted:
                errs.append(
                    FieldError.invalid(rp, review, "must include at least one of v1, v1beta1")
                )
    else:
        if cc is not None:
            errs.append(
                FieldError.forbidden(
                    f"{path}.webhookClientConfig",
                    "should not be set when strategy is not set to Webhook",
                )
            )
        if review:
            errs.append(
                FieldError.forbidden(
                    f"{path}.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                )
            )
    return errs


def _validate_webhook_url(path: str, url: str) -> list[FieldError]:
    """A webhook URL: https, a host, no user information, fragment or query."""
    try:
        u = urlsplit(url)
    except ValueError as exc:
        return [FieldError.invalid(path, url, f"url must be a valid URL: {exc}")]
    errs: list[FieldError] = []
    if u.scheme != "https":
        errs.append(FieldError.invalid(path, u.scheme, "'https' is the only allowed URL scheme"))
    host = u.netloc.rpartition("@")[2]
    if not host:
        errs.append(FieldError.invalid(path, host, "host must be specified"))
    if "@" in u.netloc:
        errs.append(
            FieldError.invalid(
                path, u.netloc.rpartition("@")[0], "user information is not permitted in the URL"
            )
        )
    if u.fragment:
        errs.append(FieldError.invalid(path, u.fragment, "fragments are not permitted in the URL"))
    if u.query:
        errs.append(
            FieldError.invalid(path, u.query, "query parameters are not permitted in the URL")
        )
    return errs


def _validate_webhook_service(path: str, svc: dict[str, Any]) -> list[FieldError]:
    """A webhook service reference: name, namespace, a valid port and URL path."""
    errs: list[FieldError] = []
    if not svc.get("name"):
        errs.append(FieldError.required(f"{path}.name", "service name is required"))
    if not svc.get("namespace"):
        errs.append(FieldError.required(f"{path}.namespace", "service namespace is required"))
    port = svc.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        errs.append(
            FieldError.invalid(
                f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"
            )
        )
    url_path = svc.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return errs
    pp = f"{path}.path"
    if url_path == "//":
        errs.append(FieldError.invalid(pp, url_path, "segment[0] may not be empty"))
        return errs
    if not url_path.startswith("/"):
        errs.append(FieldError.invalid(pp, url_path, "must start with a '/'"))
        return errs
    check = url_path[1:]
    if check.endswith("/"):
        check = check[:-1]
    for i, step in enumerate(check.split("/")):
        if not step:
            errs.append(FieldError.invalid(pp, url_path, f"segment[{i}] may not be empty"))
            continue
        for failure in st.dns1123_subdomain_errors(step):
            errs.append(FieldError.invalid(pp, url_path, f"segment[{i}]: {failure}"))
    return errs
