"""The shipped Secret reference allow-list policy.

Objects of the selected kinds may reference only Secrets that exist in their own
namespace and carry the allow label (``kubewerk.io/secret-ref-allowed: "true"``), or
that are listed explicitly. A ValidatingAdmissionPolicy cannot look a Secret up (CEL
sees only the request, its params and the namespace), so the check is split:

- **The policy** (:func:`secret_ref_policy`): a VAP whose params are a ConfigMap in the
  object's own namespace (``paramRef`` by name, no namespace), named
  ``secret-ref-allowlist`` by default, whose ``data.allowedSecrets`` lists the Secret
  names references may use, comma-separated. Each referencing field (``name`` of a
  :class:`~kubewerk.model.SecretRef`, given as a dotted path) must name a listed
  Secret; the denial names the field and the Secret: ``spec.passwordSecretRef.name:
  Secret "db-root" is not allowed: reference only Secrets labelled
  kubewerk.io/secret-ref-allowed=true or listed in ConfigMap secret-ref-allowlist``. A
  namespace without the ConfigMap refuses every reference (``parameterNotFoundAction:
  Deny``).
- **The list** (:func:`allowlist_configmap`): the ConfigMap's content for one
  namespace, from the Secrets that exist there with the allow label plus the names
  listed by hand. A controller keeps it current (create, label, unlabel, delete a
  Secret → rewrite the ConfigMap), which is how "exists and carries the label" reaches
  the policy; between a Secret's change and the rewrite the policy decides on the
  previous list.
- **The exact check** (:func:`secret_ref_denials`): the same rule against a live lookup,
  for a validating webhook that must see a Secret created a moment ago.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from .compose import Check, PolicyDefinitionError, all_of
from .policy import ConfigMapParams, Policy

ALLOW_LABEL: Final = "kubewerk.io/secret-ref-allowed"
CONFIGMAP: Final = "secret-ref-allowlist"
DATA_KEY: Final = "allowedSecrets"
_PATH: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")


def _denial_text(field: str, secret: str, configmap: str) -> str:
    return (
        f'{field}: Secret "{secret}" is not allowed: reference only Secrets labelled '
        f"{ALLOW_LABEL}=true or listed in ConfigMap {configmap}"
    )


def _field_check(path: str, configmap: str) -> Check:
    if not _PATH.match(path):
        raise PolicyDefinitionError(f"secret reference field {path!r}: expected a dotted path")
    steps = path.split(".")
    optional = "object." + "".join(f"?{s}." for s in steps).rstrip(".")
    value = "object." + path
    allowed = f"params.?data.?{DATA_KEY}.orValue('').split(',')"
    expression = f"{optional}.orValue('') == '' || {value} in {allowed}"
    message = (
        f"'{path}: Secret \"' + {value} + '\" is not allowed: reference only Secrets labelled "
        f"{ALLOW_LABEL}=true or listed in ConfigMap {configmap}'"
    )
    return Check(
        expression,
        message=f"{path}: the Secret is not allowed (labelled {ALLOW_LABEL}=true or listed "
        f"in ConfigMap {configmap})",
        message_expression=message,
        reason="Forbidden",
    )


def secret_ref_policy(
    name: str,
    match: Sequence[Mapping[str, Any]],
    fields: Sequence[str],
    *,
    configmap: str = CONFIGMAP,
    validation_actions: Sequence[str] = ("Deny",),
) -> Policy:
    """The allow-list policy for objects ``match`` selects, checking each field path in
    ``fields`` (``spec.passwordSecretRef.name``)."""
    if not fields:
        raise PolicyDefinitionError("secret_ref_policy needs at least one field")
    return Policy(
        name=name,
        match=match,
        check=all_of(*[_field_check(f, configmap) for f in fields]),
        params=ConfigMapParams(configmap, None, "Deny"),
        validation_actions=tuple(validation_actions),
    )


def allowlist_configmap(
    namespace: str,
    secrets: Sequence[Mapping[str, Any]],
    listed: Sequence[str] = (),
    *,
    name: str = CONFIGMAP,
) -> dict[str, Any]:
    """The ConfigMap for ``namespace``: the Secrets there carrying ``ALLOW_LABEL: "true"``
    plus ``listed``, sorted, comma-separated."""
    allowed = set(listed)
    for s in secrets:
        meta = s.get("metadata") if isinstance(s.get("metadata"), Mapping) else {}
        assert isinstance(meta, Mapping)
        labels = meta.get("labels") if isinstance(meta.get("labels"), Mapping) else {}
        assert isinstance(labels, Mapping)
        if (meta.get("namespace") or namespace) == namespace and labels.get(ALLOW_LABEL) == "true":
            allowed.add(str(meta.get("name", "")))
    allowed.discard("")
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {DATA_KEY: ",".join(sorted(allowed))},
    }


def _get(obj: Any, path: str) -> Any:
    for step in path.split("."):
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(step)
    return obj


def secret_ref_denials(
    obj: Mapping[str, Any],
    fields: Sequence[str],
    lookup: Callable[[str, str], Mapping[str, Any] | None],
    listed: Sequence[str] = (),
    *,
    configmap: str = CONFIGMAP,
) -> list[str]:
    """The denials for ``obj`` against live Secrets: ``lookup(namespace, name)`` answers
    the Secret or None; a reference passes when the Secret exists with the allow label,
    or is in ``listed``. Worded as the policy's denials."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(meta, Mapping)
    namespace = str(meta.get("namespace") or "")
    out: list[str] = []
    for path in fields:
        name = _get(obj, path)
        if not isinstance(name, str) or not name or name in listed:
            continue
        secret = lookup(namespace, name)
        labels = (secret or {}).get("metadata", {}).get("labels") or {}
        if secret is None or labels.get(ALLOW_LABEL) != "true":
            out.append(_denial_text(path, name, configmap))
    return out
