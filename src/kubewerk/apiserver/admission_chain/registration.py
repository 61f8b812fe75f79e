"""The ``admissionregistration.k8s.io/v1`` kinds: defaults and validation.

kube-apiserver defaults a webhook configuration (``SetDefaults_ValidatingWebhook`` /
``SetDefaults_MutatingWebhook``: failurePolicy ``Fail``, matchPolicy ``Equivalent``,
empty namespace and object selectors, timeoutSeconds 10, reinvocationPolicy
``Never``, each rule's scope ``*``, a service reference's port 443) and validates it
(``ValidateValidatingWebhookConfiguration`` / ``ValidateMutatingWebhookConfiguration``)
with the messages reproduced here. ValidatingAdmissionPolicy and its binding are
defaulted and validated by the schema layer's engine
(:mod:`kubewerk.schema.admission_policy`), so the CLI and the server agree.

:class:`AdmissionRegistrationStrategy` plugs these into the typed-kind strategy.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlsplit

from kubewerk.apiserver.kinds.typed import TypedKindStrategy
from kubewerk.core.errors import FieldError
from kubewerk.core.jsoncopy import copy_json
from kubewerk.core.validation import is_dns1035_label, is_dns1123_subdomain
from kubewerk.schema import admission_policy as vap
from kubewerk.schema.admission_policy import validation as vap_validation

JSON = dict[str, Any]

GROUP: Final = "admissionregistration.k8s.io"
MUTATING_KIND: Final = "MutatingWebhookConfiguration"
VALIDATING_KIND: Final = "ValidatingWebhookConfiguration"
POLICY_KIND: Final = "ValidatingAdmissionPolicy"
BINDING_KIND: Final = "ValidatingAdmissionPolicyBinding"

DEFAULT_TIMEOUT_SECONDS: Final = 10
ACCEPTED_REVIEW_VERSIONS: Final = ("v1", "v1beta1")
_SIDE_EFFECTS_V1: Final = ("None", "NoneOnDryRun")
_FAILURE_POLICIES: Final = ("Fail", "Ignore")
_MATCH_POLICIES: Final = ("Equivalent", "Exact")
_REINVOCATION: Final = ("IfNeeded", "Never")


def _dict(value: Any) -> JSON:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def default_webhook(hook: JSON, mutating: bool) -> None:
    """Apply kube-apiserver's v1 defaults to one webhook, in place."""
    hook.setdefault("failurePolicy", "Fail")
    hook.setdefault("matchPolicy", "Equivalent")
    if hook.get("namespaceSelector") is None:
        hook["namespaceSelector"] = {}
    if hook.get("objectSelector") is None:
        hook["objectSelector"] = {}
    if hook.get("timeoutSeconds") is None:
        hook["timeoutSeconds"] = DEFAULT_TIMEOUT_SECONDS
    if mutating and hook.get("reinvocationPolicy") is None:
        hook["reinvocationPolicy"] = "Never"
    for rule in _list(hook.get("rules")):
        if isinstance(rule, dict) and rule.get("scope") is None:
            rule["scope"] = "*"
    service = _dict(_dict(hook.get("clientConfig")).get("service"))
    if service and service.get("port") is None:
        service["port"] = 443


def default_configuration(obj: JSON) -> None:
    """Defaults of every webhook of a Mutating/ValidatingWebhookConfiguration."""
    mutating = obj.get("kind") == MUTATING_KIND
    for hook in _list(obj.get("webhooks")):
        if isinstance(hook, dict):
            default_webhook(hook, mutating)


def _validate_url(path: str, url: Any) -> list[FieldError]:
    """``webhook.ValidateWebhookURL`` with https forced."""
    text = url if isinstance(url, str) else ""
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        return [FieldError.invalid(path, text, str(exc))]
    errs: list[FieldError] = []
    if parts.scheme != "https":
        errs.append(
            FieldError.invalid(path, parts.scheme, "'https' is the only allowed URL scheme")
        )
    if not parts.netloc:
        errs.append(FieldError.invalid(path, parts.netloc, "host must be specified"))
    if "@" in parts.netloc:
        errs.append(
            FieldError.invalid(
                path, parts.netloc.split("@")[0], "user information is not permitted in the URL"
            )
        )
    if parts.fragment:
        errs.append(
            FieldError.invalid(path, parts.fragment, "fragments are not permitted in the URL")
        )
    if parts.query:
        errs.append(
            FieldError.invalid(path, parts.query, "query parameters are not permitted in the URL")
        )
    return errs


def _validate_service(path: str, service: JSON) -> list[FieldError]:
    """``webhook.ValidateWebhookService``."""
    errs: list[FieldError] = []
    if not service.get("name"):
        errs.append(FieldError.required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        errs.append(FieldError.required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        errs.append(
            FieldError.invalid(
                f"{path}.port",
                port,
                "port is not valid: must be between 1 and 65535, inclusive",
            )
        )
    svc_path = service.get("path")
    if isinstance(svc_path, str) and svc_path:
        if not svc_path.startswith("/"):
            errs.append(FieldError.invalid(f"{path}.path", svc_path, "must start with a '/'"))
        elif svc_path != "/":
            for i, step in enumerate(svc_path[1:].split("/")):
                if not step and i < len(svc_path[1:].split("/")) - 1:
                    errs.append(
                        FieldError.invalid(
                            f"{path}.path", svc_path, "segment[" + str(i) + "] may not be empty"
                        )
                    )
    return errs


def _validate_review_versions(path: str, versions: list[Any]) -> list[FieldError]:
    """``validateAdmissionReviewVersions`` (recognised versions required)."""
    errs: list[FieldError] = []
    if not versions:
        return [
            FieldError.required(path, "must specify one of " + ", ".join(ACCEPTED_REVIEW_VERSIONS))
        ]
    seen: set[str] = set()
    for i, v in enumerate(versions):
        text = v if isinstance(v, str) else ""
        if text in seen:
            errs.append(FieldError.invalid(f"{path}[{i}]", text, "duplicate version"))
            continue
        seen.add(text)
        errs.extend(FieldError.invalid(f"{path}[{i}]", text, m) for m in is_dns1035_label(text))
    if not seen & set(ACCEPTED_REVIEW_VERSIONS):
        errs.append(
            FieldError.invalid(
                path,
                versions,
                "must include at least one of " + ", ".join(ACCEPTED_REVIEW_VERSIONS),
            )
        )
    return errs


def _validate_webhook(
    hook: JSON, path: str, mutating: bool, old_side_effects_ok: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    name = hook.get("name") if isinstance(hook.get("name"), str) else ""
    if not name:
        errs.append(FieldError.required(f"{path}.name"))
    else:
        errs.extend(FieldError.invalid(f"{path}.name", name, m) for m in is_dns1123_subdomain(name))
        if len(name.split(".")) < 3:
            errs.append(
                FieldError.invalid(
                    f"{path}.name",
                    name,
                    "should be a domain with at least three segments separated by dots",
                )
            )
    for i, rule in enumerate(_list(hook.get("rules"))):
        errs.extend(
            vap_validation._validate_rule_with_operations(_dict(rule), f"{path}.rules[{i}]")
        )
    failure = hook.get("failurePolicy")
    if failure is not None and failure not in _FAILURE_POLICIES:
        errs.append(FieldError.not_supported(f"{path}.failurePolicy", failure, _FAILURE_POLICIES))
    match_policy = hook.get("matchPolicy")
    if match_policy is not None and match_policy not in _MATCH_POLICIES:
        errs.append(FieldError.not_supported(f"{path}.matchPolicy", match_policy, _MATCH_POLICIES))
    side = hook.get("sideEffects")
    if side is None:
        errs.append(
            FieldError.required(
                f"{path}.sideEffects", "must specify one of " + ", ".join(_SIDE_EFFECTS_V1)
            )
        )
    elif side not in _SIDE_EFFECTS_V1 and not (old_side_effects_ok and side in ("Some", "Unknown")):
        errs.append(FieldError.not_supported(f"{path}.sideEffects", side, _SIDE_EFFECTS_V1))
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and (
        not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 30
    ):
        errs.append(
            FieldError.invalid(
                f"{path}.timeoutSeconds",
                timeout,
                "the timeout value must be between 1 and 30 seconds",
            )
        )
    for key in ("namespaceSelector", "objectSelector"):
        if hook.get(key) is not None:
            errs.extend(vap_validation.validate_label_selector(hook[key], f"{path}.{key}"))
    errs.extend(
        _validate_review_versions(
            f"{path}.admissionReviewVersions", _list(hook.get("admissionReviewVersions"))
        )
    )
    cc = _dict(hook.get("clientConfig"))
    url, service = cc.get("url"), cc.get("service")
    if (url is None) == (service is None):
        errs.append(
            FieldError.required(f"{path}.clientConfig", "exactly one of url or service is required")
        )
    elif url is not None:
        errs.extend(_validate_url(f"{path}.clientConfig.url", url))
    else:
        errs.extend(_validate_service(f"{path}.clientConfig.service", _dict(service)))
    if mutating:
        reinvoke = hook.get("reinvocationPolicy")
        if reinvoke is not None and reinvoke not in _REINVOCATION:
            errs.append(
                FieldError.not_supported(f"{path}.reinvocationPolicy", reinvoke, _REINVOCATION)
            )
    errs.extend(
        vap_validation.validate_match_conditions(
            hook.get("matchConditions"), False, f"{path}.matchConditions"
        )
    )
    return errs


def validate_configuration(obj: JSON, old: JSON | None) -> list[FieldError]:
    """A defaulted Mutating/ValidatingWebhookConfiguration's field errors (metadata
    excluded: the strategy's ObjectMeta validation covers it). On update, a webhook whose
    sideEffects was already ``Some``/``Unknown`` keeps being accepted, as kube does for
    objects stored before v1 narrowed the values."""
    mutating = obj.get("kind") == MUTATING_KIND
    old_side = {
        str(h.get("sideEffects")) for h in _list((old or {}).get("webhooks")) if isinstance(h, dict)
    }
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, hook in enumerate(_list(obj.get("webhooks"))):
        hook = _dict(hook)
        path = f"webhooks[{i}]"
        name = hook.get("name")
        if isinstance(name, str) and name:
            if name in names:
                errs.append(FieldError.duplicate(f"{path}.name", name))
            names.add(name)
        errs.extend(_validate_webhook(hook, path, mutating, bool(old_side & {"Some", "Unknown"})))
    return errs


class AdmissionRegistrationStrategy(TypedKindStrategy):
    """The strategy of the four ``admissionregistration.k8s.io/v1`` kinds: typed decoding
    against the vendored definitions, kube's defaults and validation, generation tracked
    (bumped on a change of anything but metadata and status)."""

    def default(self, obj: JSON) -> None:
        kind = obj.get("kind")
        if kind in (MUTATING_KIND, VALIDATING_KIND):
            default_configuration(obj)
        elif kind == POLICY_KIND:
            defaulted = vap.default_policy(obj)
            obj["spec"] = defaulted.get("spec", obj.get("spec"))
        elif kind == BINDING_KIND:
            defaulted = vap.default_binding(obj)
            obj["spec"] = defaulted.get("spec", obj.get("spec"))

    def validate(self, obj: JSON, old: JSON | None) -> list[FieldError]:
        kind = obj.get("kind")
        if kind in (MUTATING_KIND, VALIDATING_KIND):
            return validate_configuration(obj, old)
        if kind == POLICY_KIND:
            errs = vap.validate_policy(obj, old)
        elif kind == BINDING_KIND:
            errs = vap.validate_binding(obj)
        else:
            return []
        return [e for e in errs if not e.field.startswith("metadata")]

    def validate_status(self, obj: JSON, old: JSON) -> list[FieldError]:
        return []

    def generation_changed(self, new: JSON, old: JSON) -> bool:
        keys = (new.keys() | old.keys()) - {"apiVersion", "kind", "metadata", "status"}
        from kubewerk.core.gofmt import json_equal

        return any(not json_equal(new.get(k), old.get(k)) for k in keys)


def policy_status(policy: JSON, warnings: list[dict[str, str]]) -> JSON:
    """The ``status`` kube's type-checking controller writes for ``policy``:
    ``observedGeneration`` and ``typeChecking.expressionWarnings`` (omitted when empty)."""
    status: JSON = copy_json(_dict(policy.get("status")))
    status["observedGeneration"] = _dict(policy.get("metadata")).get("generation", 0)
    status["typeChecking"] = {"expressionWarnings": warnings} if warnings else {}
    return status
