"""``plaintext-credential``: string fields that hold a secret value instead of a reference."""

from __future__ import annotations

import re
from functools import lru_cache

from kubewerk.govern.crd_view import PROP, SchemaNode
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import Nodes, Rule
from kubewerk.govern.rules.example import Example, Where
from kubewerk.govern.rules.names import words

# head word → the modifiers that make it a credential (None: any modifier, or none)
_CREDENTIAL_HEADS: dict[str, frozenset[str] | None] = {
    "password": None,
    "passwd": None,
    "passphrase": None,
    "credential": None,
    "credentials": None,
    "token": None,
    "apikey": None,
    "privatekey": None,
    "key": frozenset({"api", "private", "signing", "shared", "hmac", "master", "access"}),
    "secret": frozenset({"client", "shared", "hmac", "api", "app", "application", "webhook"}),
}
# modifiers that make the compound name something other than the secret value
_NOT_SECRET_MODIFIERS = frozenset(
    {"public", "pub", "verification", "challenge", "id", "type", "audience", "expiration"}
)


@lru_cache(maxsize=8192)
def credential_name(name: str) -> bool:
    """Whether a field name says it holds a secret value (by its head word).

    ``password``, ``adminPassword``, ``token``, ``bearerToken``, ``apiKey``,
    ``privateKey``, ``clientSecret``, ``credentials``, ``secretAccessKey`` are;
    ``tokenSecretName``, ``passwordSecretRef``, ``passwordFile``, ``tokenUrl``,
    ``secretKey`` (the key *inside* a Secret, by Kubernetes convention), ``accessKey``
    (an identifier), ``publicKey``, ``secret`` (a Secret's name) are not.
    """
    ws = words(name)
    if not ws:
        return False
    head = ws[-1]
    modifiers = ws[:-1]
    if head not in _CREDENTIAL_HEADS:
        return False
    if _NOT_SECRET_MODIFIERS.intersection(modifiers):
        return False
    allowed = _CREDENTIAL_HEADS[head]
    if allowed is None:
        return True
    if not modifiers:
        return False
    if head == "key" and modifiers[-1] == "access":
        return "secret" in modifiers  # secretAccessKey yes, accessKey no
    return modifiers[-1] in allowed


_REFERENCE_DESC = re.compile(
    r"\b(name|key|keys|field)\s+(of|in|within|inside|from)\s+(the|a|an)?\s*"
    r"(kubernetes\s+|k8s\s+)?(secret|configmap)"
    r"|\bsecret'?s?\s+name\b|\bname of (the|a) secret\b"
    r"|\bpath\s+(to|of)\b|\bfile\s*(path|name|containing|holding|with)\b"
    r"|\breference\s+to\b|\brefers?\s+to\b"
    # ACME challenge tokens are public by design (served over HTTP or DNS)
    r"|\bchallenge\b",
    re.IGNORECASE,
)
_REFERENCE_PARENT_WORDS = frozenset({"ref", "reference", "selector", "secret", "secrets", "from"})
_REFERENCE_SIBLINGS = ("secretName", "secretRef", "secretKeyRef", "valueFrom", "credentialName")


def _is_reference(node: SchemaNode) -> bool:
    """Signals that a credential-named string names or points at a Secret instead."""
    desc = node.schema.get("description")
    if isinstance(desc, str) and _REFERENCE_DESC.search(desc[:300]):
        return True
    parent = node.parent
    if parent is None:
        return False
    siblings = parent.child_properties()
    if any(s in siblings for s in _REFERENCE_SIBLINGS):
        return True
    owner = parent.name
    if owner:
        pw = words(owner)
        if pw and (pw[-1] in _REFERENCE_PARENT_WORDS or "secret" in pw):
            return True
    return False


class PlaintextCredential(Rule):
    """A string property whose name's last word says it holds a secret value:
    `password`, `passwd`, `passphrase`, `token` (`bearerToken`, `bootstrapToken`, ...),
    `credential(s)`, `apiKey`/`apikey`, `privateKey`/`privatekey`; `key` after `api`,
    `private`, `signing`, `shared`, `hmac` or `master` (`signingKey`, `hmacKey`);
    `secret` after `client`, `shared`, `hmac`, `api`, `app`, `application` or `webhook`
    (`clientSecret`, `webhookSecret`); and `secretAccessKey`. It is stored unencrypted
    in etcd and readable by anyone who may get the object.

    Not flagged, because they name or point at a Secret rather than hold one, or are
    not secret:

    - objects (a `secretRef`/`passwordSecretRef` object is a reference), and strings
      that are list items or map values rather than named properties;
    - names whose last word is something else: `tokenSecretName`, `passwordSecretRef`,
      `passwordFile`, `tokenUrl`, `tokenType`, ...;
    - `secretKey` (by Kubernetes convention the key *inside* a Secret), `accessKey` and
      `accessKeyId` (identifiers), a bare `secret` (a Secret's name) or `key`;
    - names with `public`, `pub`, `verification`, `challenge`, `id`, `type`,
      `audience` or `expiration` before the last word (`publicKey`, `idToken`);
    - a field whose description (its first 300 characters) says it is the name, key or
      field of a Secret or ConfigMap, a path or a file, a reference to something, or an
      ACME challenge (public by design);
    - a field beside `secretName`, `secretRef`, `secretKeyRef`, `valueFrom` or
      `credentialName`, or inside an object that is itself a reference: its name ends
      in `Ref`, `Reference`, `Selector`, `From` or `Secrets`, or has the word `secret`
      (`passwordSecret: {secretName, password}`).

    Known misses and false positives: names alone cannot tell a file path from key
    material when the description does not say (Istio's
    `tls.tlsCertificates[*].privateKey` is a path upstream but is only described as
    "REQUIRED if mode is `SIMPLE` or `MUTUAL`", and is reported); suppress such a
    finding in the config with the reason.
    """

    id = "plaintext-credential"
    severity = Severity.ERROR
    summary = (
        "string fields whose names say secret (password, token, apiKey, privateKey, "
        "clientSecret, credentials, ...) that are not references to a Secret"
    )
    example = Example(
        Where.SPEC_PROPERTIES,
        bad="""\
auth:
  type: object
  properties:
    password: {type: string}
""",
        good="""\
auth:
  type: object
  properties:
    passwordSecretRef:
      type: object
      properties:
        name: {type: string}
        key: {type: string}
""",
    )
    nodes = Nodes(types=frozenset({"string"}))

    def visit(self, node: SchemaNode) -> None:
        if node.step != PROP or not credential_name(node.key) or _is_reference(node):
            return
        name = node.key
        self.report(
            node,
            f"{node.field_path()} is a plain string that holds a credential ({name}): it is "
            "stored unencrypted in etcd and readable by anyone who can get the object. "
            f"Replace it with a reference to a Secret (e.g. {name}SecretRef: {{name, key}})",
        )
