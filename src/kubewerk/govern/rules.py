"""The CRD lint rules.

Each rule has a stable id, a default severity and a one-line summary; docs/lint-rules.md
documents each with a bad and a good example. :func:`lint_crd` runs every enabled rule
over one CRD in a single pass per distinct schema: versions whose schema and
subresources are identical are linted once and their findings list all of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kubewerk.govern.crd import (
    ADDL,
    PROP,
    CRDView,
    Location,
    SchemaNode,
    VersionView,
    as_dict,
    as_list,
    strip_descriptions,
    version_stability,
    walk,
)
from kubewerk.govern.findings import Severity


@dataclass(frozen=True, slots=True)
class Rule:
    """A lint rule: stable id, default severity, what it finds."""

    id: str
    severity: Severity
    summary: str


RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule(
            "plaintext-credential",
            Severity.ERROR,
            "string fields whose names say secret (password, token, apiKey, privateKey, "
            "clientSecret, credentials, ...) that are not references to a Secret",
        ),
        Rule(
            "logic-in-spec",
            Severity.WARNING,
            "free-form spec strings that encode behaviour (...policy, ...strategy, ...script, "
            "...expression, ...condition) with no enum, pattern or format",
        ),
        Rule(
            "status-without-subresource",
            Severity.WARNING,
            "a schema with status but no status subresource",
        ),
        Rule(
            "status-as-cache",
            Severity.WARNING,
            "status with neither conditions nor observedGeneration, or opaque blobs kept in status",
        ),
        Rule(
            "cross-namespace-reference",
            Severity.WARNING,
            "references carrying a namespace in a namespaced CRD",
        ),
        Rule(
            "version-discipline",
            Severity.WARNING,
            "versions with different schemas and conversion None (error); a pre-release storage "
            "version beside a GA one (warning); deprecated versions without a warning (info)",
        ),
        Rule(
            "preserve-unknown-fields",
            Severity.WARNING,
            "pruning disabled on the root, spec or status",
        ),
        Rule(
            "conditions-shape",
            Severity.WARNING,
            "conditions that are not a map-list keyed by type with the metav1.Condition fields",
        ),
        Rule(
            "list-type-missing",
            Severity.INFO,
            "arrays without x-kubernetes-list-type (server-side apply cannot merge them)",
        ),
        Rule("no-floats", Severity.WARNING, "type: number fields"),
        Rule(
            "unbounded-cel-input",
            Severity.WARNING,
            "strings, lists and maps without max bounds that CEL rules read (cost)",
        ),
        Rule(
            "structural-schema",
            Severity.ERROR,
            "anything the API server would reject when the CRD is created",
        ),
        Rule("deprecated-api", Severity.ERROR, "apiextensions.k8s.io/v1beta1 CRDs"),
    )
}

PUF = "x-kubernetes-preserve-unknown-fields"
VALIDATIONS = "x-kubernetes-validations"


@dataclass(frozen=True, slots=True)
class RawFinding:
    """A finding before it is tied to a file: rule, message, location in the CRD."""

    rule: str
    message: str
    location: Location
    field: str = ""
    versions: tuple[str, ...] = ()
    severity: Severity | None = None  # None: the rule's (possibly configured) severity
    extra: tuple[tuple[str, str], ...] = ()


Emit = Callable[[RawFinding], None]

# --- names ------------------------------------------------------------------------

_WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@lru_cache(maxsize=8192)
def words(name: str) -> tuple[str, ...]:
    """A field name split into lower-case words: ``clientSecretRef`` → client, secret, ref;
    ``apiKEY`` → api, key; ``tls_private_key`` → tls, private, key."""
    return tuple(w.lower() for w in _WORD_RE.findall(name))


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
# "access key" is an identifier unless it is the secret half ("secret access key")
_ACCESS_KEY = ("access", "key")


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


_LOGIC_HEADS = frozenset(
    {"policy", "strategy", "script", "expression", "condition", "rego", "cel", "lua", "jsonnet"}
)
_ENUM_LIKE_HEADS = frozenset({"policy", "strategy", "condition"})
# Fields of Kubernetes' own API types (PodSpec, container, volumes, webhooks, topology
# spread) that CRDs embed verbatim: enums upstream, validated by the API server when the
# controller creates the real object, and not something the CRD author chose.
_UPSTREAM_ENUM_FIELDS = frozenset(
    {
        "imagePullPolicy",
        "restartPolicy",
        "dnsPolicy",
        "terminationMessagePolicy",
        "preemptionPolicy",
        "fsGroupChangePolicy",
        "supplementalGroupsPolicy",
        "seLinuxChangePolicy",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchPolicy",
        "reinvocationPolicy",
        "failurePolicy",
        "sideEffects",
        "whenUnsatisfiable",
        "selectPolicy",
        "podManagementPolicy",
        "persistentVolumeReclaimPolicy",
        "externalTrafficPolicy",
        "internalTrafficPolicy",
        "concurrencyPolicy",
        "resizePolicy",
        "restartPolicyRules",
        "volumeBindingMode",
        "mountPropagation",
        "recursiveReadOnly",
        "pullPolicy",
        "podReplacementPolicy",
    }
)
_NAMES_SOMETHING = re.compile(
    r"\bname of\b|\breference to\b|\brefers? to\b|\bnamespace/name\b", re.I
)


def logic_head(name: str) -> str | None:
    """The behaviour word a field name ends in (``policy``, ``expression``, ...), if any."""
    ws = words(name)
    if ws and ws[-1] in _LOGIC_HEADS:
        return ws[-1]
    return None


def _constrained_string(schema: dict[str, Any]) -> bool:
    return any(k in schema for k in ("enum", "pattern", "format", VALIDATIONS)) or bool(
        schema.get("x-kubernetes-int-or-string")
    )


# --- CEL --------------------------------------------------------------------------

_CEL_PATH = re.compile(
    r"(?<![\w.])(self|oldSelf)(?![\w])((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*(?![\w]|\s*\()"
    r"|\s*\[\s*'[^']*'\s*\]|\s*\[\s*\"[^\"]*\"\s*\])*)"
)
_CEL_STEP = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)|\[\s*['\"]([^'\"]*)['\"]\s*\]")
_HAS_BEFORE = re.compile(r"(?:has|size)\(\s*$")
_SIZE_AFTER = re.compile(r"\s*\.\s*size\(\s*\)")
_IN_BEFORE = re.compile(r"\bin\s*$")
_CEL_ESCAPES = (("__underscores__", "_"), ("__dot__", "."), ("__dash__", "-"), ("__slash__", "/"))


def _cel_unescape(name: str) -> str:
    if "__" in name:
        for token, char in _CEL_ESCAPES:
            name = name.replace(token, char)
    return name


def cel_reads(expression: str, *, membership: list[bool] | None = None) -> list[list[str]]:
    """Field paths (relative to ``self``) an expression reads: ``self.spec.name`` →
    ``["spec", "name"]``; ``self`` alone → ``[]``. Paths only tested with ``has()`` are
    not reads, nor are those only measured with ``size()`` (constant cost). Method calls
    end a path (``self.items.all(...)`` reads ``items``)."""
    out: list[list[str]] = []
    for m in _CEL_PATH.finditer(expression):
        if _HAS_BEFORE.search(expression, 0, m.start()) or _SIZE_AFTER.match(expression, m.end()):
            continue
        steps = [_cel_unescape(a or b) for a, b in _CEL_STEP.findall(m.group(2))]
        out.append(steps)
        if membership is not None:  # ``k in self.m``: a map lookup costs the same at any size
            membership.append(bool(_IN_BEFORE.search(expression, 0, m.start())))
    return out


def _resolve(node: SchemaNode, steps: list[str]) -> list[SchemaNode]:
    """The nodes a path passes through (the last one is what is read)."""
    chain: list[SchemaNode] = []
    current = node
    for step in steps:
        s = current.schema
        props = s.get("properties")
        if isinstance(props, dict) and isinstance(props.get(step), dict):
            current = SchemaNode(props[step], current, PROP, step, current.top or step, 0)
        elif isinstance(s.get("additionalProperties"), dict):
            current = SchemaNode(s["additionalProperties"], current, ADDL, "", current.top, 0)
        else:
            break
        chain.append(current)
    return chain


def unbounded(schema: dict[str, Any]) -> str | None:
    """What bound a string/list/map lacks for CEL's cost estimate, or None if bounded.

    Strings are bounded by ``maxLength``, an ``enum`` or a ``duration``/``date``/
    ``date-time`` format; lists by ``maxItems``; maps by ``maxProperties`` (as the API
    server's cost estimator reads them)."""
    t = schema.get("type")
    if t == "string" or schema.get("x-kubernetes-int-or-string"):
        if "maxLength" in schema or "enum" in schema:
            return None
        if schema.get("format") in ("duration", "date", "date-time"):
            return None
        return "maxLength"
    if t == "array":
        return None if "maxItems" in schema else "maxItems"
    if t == "object" and isinstance(schema.get("additionalProperties"), dict):
        return None if "maxProperties" in schema else "maxProperties"
    return None


# --- the pass ---------------------------------------------------------------------


def _schemas_equal(a: VersionView, b: VersionView) -> bool:
    return (a.schema is b.schema or a.schema == b.schema) and a.subresources == b.subresources


def version_groups(view: CRDView) -> list[list[VersionView]]:
    """Versions grouped by identical schema and subresources, in declaration order."""
    groups: list[list[VersionView]] = []
    for v in view.versions:
        for g in groups:
            if _schemas_equal(g[0], v):
                g.append(v)
                break
        else:
            groups.append([v])
    return groups


def lint_crd(view: CRDView, enabled: frozenset[str], emit: Emit) -> None:
    """Run the enabled rules (except ``structural-schema``) over one CRD."""
    if "deprecated-api" in enabled and view.is_v1beta1:
        emit(
            RawFinding(
                "deprecated-api",
                "apiextensions.k8s.io/v1beta1 CustomResourceDefinition is no longer served "
                "since Kubernetes 1.22: use apiextensions.k8s.io/v1 (a structural schema per "
                "version under spec.versions[*].schema, spec.preserveUnknownFields: false)",
                ("apiVersion",),
            )
        )
    if "version-discipline" in enabled:
        _version_discipline(view, emit)
    if "preserve-unknown-fields" in enabled and view.preserve_unknown_fields:
        why = (
            "apiextensions.k8s.io/v1beta1 defaults spec.preserveUnknownFields to true"
            if "preserveUnknownFields" not in view.spec
            else "spec.preserveUnknownFields is true"
        )
        emit(
            RawFinding(
                "preserve-unknown-fields",
                f"{why}: unknown fields are stored instead of pruned. Set "
                "spec.preserveUnknownFields: false and mark only the subtrees that really are "
                "free-form with x-kubernetes-preserve-unknown-fields",
                ("spec", "preserveUnknownFields"),
            )
        )
    for group in version_groups(view):
        first = group[0]
        if first.schema is None:
            continue
        names = tuple(v.name for v in group)
        _SchemaPass(view, first, names, enabled, emit).run()


def _version_discipline(view: CRDView, emit: Emit) -> None:
    versions = [v for v in view.versions if v.served or v.storage]
    if len(versions) > 1 and view.conversion_strategy == "None":
        reference = view.storage_version or versions[0]
        ref_schema = strip_descriptions(reference.schema)
        differing = [
            v.name
            for v in versions
            if v is not reference
            and v.schema is not reference.schema
            and strip_descriptions(v.schema) != ref_schema
        ]
        if differing:
            emit(
                RawFinding(
                    "version-discipline",
                    f"version(s) {', '.join(differing)} have a different schema from "
                    f"{reference.name} but spec.conversion.strategy is None: the API server only "
                    "rewrites apiVersion, so objects stored as one version are served as the "
                    "others unchanged. Add a conversion webhook, or keep the schemas identical "
                    "(if a kustomize patch adds the webhook at deploy time, lint the rendered "
                    "output)",
                    ("spec", "conversion") if "conversion" in view.spec else ("spec", "versions"),
                    severity=Severity.ERROR,
                    versions=tuple(differing),
                )
            )
    storage = view.storage_version
    if storage is not None and version_stability(storage.name) in ("alpha", "beta"):
        ga = [v.name for v in view.versions if v.served and version_stability(v.name) == "ga"]
        if ga:
            emit(
                RawFinding(
                    "version-discipline",
                    f"storage version {storage.name} is a pre-release version while GA version "
                    f"{ga[0]} is served: objects are persisted in the less stable shape. Make "
                    f"{ga[0]} the storage version (and migrate stored objects)",
                    (*storage.location, "storage"),
                    versions=(storage.name,),
                )
            )
    for v in view.versions:
        if v.deprecated and not v.deprecation_warning:
            emit(
                RawFinding(
                    "version-discipline",
                    f"version {v.name} is deprecated without deprecationWarning: clients only get "
                    "the generic warning. Say what to use instead, e.g. deprecationWarning: "
                    f'"{view.group}/{v.name} {view.kind} is deprecated; use <newer version>"',
                    (*v.location, "deprecated"),
                    severity=Severity.INFO,
                    versions=(v.name,),
                )
            )


_REF_WORDS = frozenset({"ref", "refs", "reference", "references"})
_REFERENT_WORDS = frozenset({"secret", "configmap", "service", "account", "serviceaccount"})


def _looks_like_reference(name: str, props: dict[str, Any]) -> bool:
    """Whether an object with a ``namespace`` property is a reference to another object:
    named ``...Ref``/``...Reference(s)``; shaped like a Secret key selector (name, key,
    namespace); or naming a Secret/ConfigMap/ServiceAccount and carrying a ``name``.
    Matchers and selectors (kustomize targets, Argo CD ignoreDifferences) are not."""
    ws = words(name) if name else ()
    if ws and ws[-1] in _REF_WORDS:
        return True
    if "name" in props and "key" in props:
        return True
    return "name" in props and any(w in _REFERENT_WORDS for w in ws)


_METAV1_CONDITION_FIELDS = ("type", "status", "lastTransitionTime", "reason", "message")


class _SchemaPass:
    """One walk over one schema, feeding the node-level rules."""

    def __init__(
        self,
        view: CRDView,
        version: VersionView,
        versions: tuple[str, ...],
        enabled: frozenset[str],
        emit: Emit,
    ) -> None:
        self.view = view
        self.version = version
        self.versions = versions
        self.enabled = enabled
        self.emit_raw = emit
        self.base = version.schema_location

    def emit(
        self,
        rule: str,
        node: SchemaNode,
        message: str,
        *,
        extra: tuple[tuple[str, str], ...] = (),
        suffix: Location = (),
    ) -> None:
        self.emit_raw(
            RawFinding(
                rule,
                message,
                (*self.base, *node.location(), *suffix),
                node.field_path(),
                self.versions,
                extra=extra,
            )
        )

    def run(self) -> None:
        schema = self.version.schema
        assert schema is not None
        on = self.enabled
        cred = "plaintext-credential" in on
        logic = "logic-in-spec" in on
        lists = "list-type-missing" in on
        floats = "no-floats" in on
        xns = "cross-namespace-reference" in on and self.view.namespaced
        cel = "unbounded-cel-input" in on
        cache = "status-as-cache" in on
        conds = "conditions-shape" in on
        puf = "preserve-unknown-fields" in on
        cel_seen: set[Location] = set()
        self.opaque: dict[str, list[tuple[SchemaNode, str]]] = {}
        for node in walk(schema):
            s = node.schema
            top = node.top
            if top == "metadata" or top == "apiVersion" or top == "kind":
                continue
            t = s.get("type")
            depth = node.depth
            if depth <= 1:
                self._top_level(node, puf, cache)
            if t == "string":
                if node.step == PROP:
                    if cred and credential_name(node.key) and not _is_reference(node):
                        self._credential(node)
                    if logic and top != "status":
                        self._logic(node)
            elif t == "array":
                is_conditions = top == "status" and node.step == PROP and node.key == "conditions"
                if is_conditions and conds:
                    self._conditions(node)
                if lists and "x-kubernetes-list-type" not in s and not is_conditions:
                    self._list_type(node)
            elif t == "number" and floats:
                self.emit(
                    "no-floats",
                    node,
                    f"{node.field_path() or 'the root'} is type: number: floats do not "
                    "round-trip exactly between languages and encoders. Use an integer with "
                    "the unit in the name (e.g. timeoutSeconds, percent) or a string "
                    "(a quantity or decimal with a pattern)",
                )
            if xns and top != "status" and depth >= 2:
                self._cross_namespace(node)
            if cel and VALIDATIONS in s:
                self._cel(node, cel_seen)
            if cache and top == "status" and depth >= 2:
                self._opaque_status(node)
        for nodes in self.opaque.values():
            self._report_opaque(nodes)

    # -- individual rules --

    def _top_level(self, node: SchemaNode, puf: bool, cache: bool) -> None:
        s = node.schema
        where = "the root" if node.depth == 0 else node.key
        if node.depth == 1 and node.key not in ("spec", "status"):
            return
        if puf and s.get(PUF) is True:
            self.emit(
                "preserve-unknown-fields",
                node,
                f"x-kubernetes-preserve-unknown-fields: true on {where} turns pruning off: "
                "misspelled and unknown fields are stored silently. Declare the properties, and "
                "keep x-kubernetes-preserve-unknown-fields only on the free-form subtrees",
                suffix=(PUF,),
            )
        if node.depth == 0:
            props = node.child_properties()
            if "status" in props and "status-without-subresource" in self.enabled:
                sub = self.version.subresources
                if not (isinstance(sub, dict) and "status" in sub):
                    self.emit_raw(
                        RawFinding(
                            "status-without-subresource",
                            f"{self.view.kind or 'the resource'} has a status but no status "
                            "subresource: any user who can update the object can write its "
                            "status, and status writes bump metadata.generation. Add "
                            "subresources: {status: {}} to this version",
                            (*self.base, "properties", "status"),
                            "status",
                            self.versions,
                        )
                    )
        elif node.key == "status" and cache:
            props = node.child_properties()
            if s.get(PUF) is True and not props:
                return  # nothing declared: the preserve-unknown-fields rule reports it
            if "conditions" not in props and "observedGeneration" not in props:
                self.emit(
                    "status-as-cache",
                    node,
                    "status has neither conditions nor observedGeneration: clients cannot tell "
                    "whether the controller has seen the latest spec or what state it reached. "
                    "Report conditions ([]metav1.Condition) and observedGeneration; keep data "
                    "the controller can recompute out of status",
                )

    def _credential(self, node: SchemaNode) -> None:
        name = node.key
        self.emit(
            "plaintext-credential",
            node,
            f"{node.field_path()} is a plain string that holds a credential ({name}): it is "
            "stored unencrypted in etcd and readable by anyone who can get the object. "
            f"Replace it with a reference to a Secret (e.g. {name}SecretRef: {{name, key}})",
        )

    def _logic(self, node: SchemaNode) -> None:
        s = node.schema
        name = node.key
        head = logic_head(name)
        if head is None or _constrained_string(s) or name in _UPSTREAM_ENUM_FIELDS:
            return
        desc = s.get("description")
        if isinstance(desc, str) and _NAMES_SOMETHING.search(desc[:300]):
            return  # the string names a policy/strategy object, it does not encode one
        if head in _ENUM_LIKE_HEADS:
            advice = (
                "List the supported values in an enum (or model the choice as structured fields)"
            )
        else:
            advice = (
                "Model the behaviour as structured fields; if an expression language is the "
                "point, constrain it (maxLength, a pattern or x-kubernetes-validations that "
                "compile it) so bad input is rejected at admission"
            )
        self.emit(
            "logic-in-spec",
            node,
            f"{node.field_path()} is a free-form string that encodes behaviour ({head}) "
            f"with no enum, pattern or format: any text is accepted and only fails in the "
            f"controller. {advice}",
        )

    def _list_type(self, node: SchemaNode) -> None:
        items = node.schema.get("items")
        item_type = items.get("type") if isinstance(items, dict) else None
        if item_type == "object":
            hint = "map with x-kubernetes-list-map-keys naming the item's key field(s)"
        elif item_type in ("string", "integer"):
            hint = "set (if items are unique) or atomic"
        else:
            hint = "atomic"
        self.emit(
            "list-type-missing",
            node,
            f"{node.field_path()} has no x-kubernetes-list-type, so server-side apply treats it "
            f"as atomic and field managers overwrite each other's entries. Set "
            f"x-kubernetes-list-type: {hint}",
        )

    def _conditions(self, node: SchemaNode) -> None:
        s = node.schema
        items = as_dict(s.get("items"))
        problems: list[str] = []
        if s.get("x-kubernetes-list-type") != "map" or s.get("x-kubernetes-list-map-keys") != [
            "type"
        ]:
            problems.append(
                "not a map-list keyed by type (x-kubernetes-list-type: map, "
                "x-kubernetes-list-map-keys: [type])"
            )
        props = as_dict(items.get("properties"))
        missing = [f for f in _METAV1_CONDITION_FIELDS if f not in props]
        if missing:
            problems.append("items lack " + ", ".join(missing))
        required = as_list(items.get("required"))
        not_required = [f for f in ("type", "status") if f in props and f not in required]
        if not_required:
            problems.append(", ".join(not_required) + " not required")
        if problems:
            self.emit(
                "conditions-shape",
                node,
                f"{node.field_path()} is not shaped like []metav1.Condition: "
                + "; ".join(problems)
                + ". Use metav1.Condition (type, status, observedGeneration, "
                "lastTransitionTime, reason, message) with +listType=map +listMapKey=type",
            )

    def _cross_namespace(self, node: SchemaNode) -> None:
        props = node.child_properties()
        ns = props.get("namespace")
        if not isinstance(ns, dict) or ns.get("type") != "string":
            return
        name = node.name
        if node.step == PROP and name in ("metadata", "objectMeta"):
            return
        if not _looks_like_reference(name, props):
            return
        ns_node = SchemaNode(ns, node, PROP, "namespace", node.top, node.depth + 1)
        self.emit(
            "cross-namespace-reference",
            ns_node,
            f"{node.field_path()} can point into another namespace ({ns_node.field_path()}) "
            f"although {self.view.kind or 'the resource'} is namespaced: anyone who may create "
            "it in one namespace can make the controller act on objects in another. Resolve "
            "references in the object's own namespace, or require an explicit grant from the "
            "target namespace (as Gateway API's ReferenceGrant does)",
        )

    def _cel(self, node: SchemaNode, seen: set[Location]) -> None:
        rules = node.schema.get(VALIDATIONS)
        if not isinstance(rules, list):
            return
        for rule in rules:
            if not isinstance(rule, dict):
                continue
            texts = [rule.get("rule"), rule.get("messageExpression")]
            for text in texts:
                if not isinstance(text, str):
                    continue
                lookups: list[bool] = []
                for steps, lookup in zip(cel_reads(text, membership=lookups), lookups, strict=True):
                    chain = _resolve(node, steps)
                    if len(chain) != len(steps):
                        continue  # the path leaves the declared schema
                    target = chain[-1] if chain else node
                    if lookup and isinstance(target.schema.get("additionalProperties"), dict):
                        continue
                    missing = unbounded(target.schema)
                    key = target.location()
                    if missing is None or key in seen:
                        continue
                    seen.add(key)
                    path = target.field_path() or "the root"
                    self.emit(
                        "unbounded-cel-input",
                        target,
                        f"{path} is read by the CEL rule {text.strip()!r} but has no {missing}: "
                        "the API server estimates its cost for the largest possible input and "
                        f"may reject the CRD or the rule. Set {missing} to a realistic bound",
                        extra=(("rule", text.strip()),),
                    )

    def _opaque_status(self, node: SchemaNode) -> None:
        s = node.schema
        kind = None
        if s.get("x-kubernetes-embedded-resource") is True:
            kind = "a whole embedded object"
        elif s.get(PUF) is True and not node.child_properties() and "items" not in s:
            if node.parent is not None and node.parent.schema.get(PUF) is True:
                return  # reported at the outermost opaque node
            kind = "an opaque blob (x-kubernetes-preserve-unknown-fields, no properties)"
        elif s.get("type") == "string" and s.get("format") == "byte":
            kind = "binary data (format: byte)"
        if kind is None:
            return
        section = node
        while section.parent is not None and section.depth > 2:
            section = section.parent
        self.opaque.setdefault(section.key, []).append((node, kind))

    def _report_opaque(self, nodes: list[tuple[SchemaNode, str]]) -> None:
        """One finding per status field: its first opaque node, and how many more."""
        node, kind = nodes[0]
        more = ""
        if len(nodes) > 1:
            others = ", ".join(n.field_path() for n, _ in nodes[1:4])
            more = f" (and {len(nodes) - 1} more opaque field(s) there: {others}{', ...' if len(nodes) > 4 else ''})"
        self.emit(
            "status-as-cache",
            node,
            f"{node.field_path()} keeps {kind} in status{more}: status should report observed "
            "state compactly, and caches belong in the controller (or a ConfigMap/Secret it "
            "owns). Declare the fields clients need, or drop it from status",
        )

