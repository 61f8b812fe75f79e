"""``v1`` ServiceAccount: typed decoding (the vendored ``io.k8s.api.core.v1.ServiceAccount``:
``secrets: "x"`` is kube's 400 ``ServiceAccount in version "v1" cannot be handled as a
ServiceAccount: json: cannot unmarshal string into Go struct field
ServiceAccount.secrets of type []v1.ObjectReference``), its Table; a delete answers the
object. ``ValidateServiceAccount`` checks ObjectMeta alone: ``secrets`` and
``imagePullSecrets`` entries are not validated, as in kube. As kube's strategy
(pkg/registry/core/serviceaccount/strategy.go) does on create and update, each
``secrets`` entry keeps its ``name`` only (``cleanSecretReferences``), and setting the
annotation ``kubernetes.io/enforce-mountable-secrets`` is answered with the warning
``metadata.annotations[kubernetes.io/enforce-mountable-secrets]: deprecated in v1.32+;
prefer separate namespaces to isolate access to mounted secrets`` (an update only when the
old object lacked it).

``serviceaccounts/token`` (``TokenRequest``, ``authentication.k8s.io/v1``; ``kubectl create
token``) issues a signed token for the ServiceAccount as kube-apiserver's ``TokenREST``
does: ``spec.audiences`` defaults to the server's API audiences, ``spec.expirationSeconds``
to 3600 (at least 600, at most 2^32), ``spec.boundObjectRef`` may bind it to a Pod running
as that ServiceAccount, to a Secret or to a Node (ServiceAccountTokenNodeBinding, GA in
kube 1.33); the token then dies with that object. A Pod-bound token also names the Node
the Pod is scheduled to (its name, and uid when that Node is stored). The answer is 201
with ``status.token`` and ``status.expirationTimestamp``; nothing is stored.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from kubewerk.apiserver.auth.protobody import decoder
from kubewerk.apiserver.kindrules.gojson import struct_order
from kubewerk.apiserver.kinds.configmaps import core_decoder
from kubewerk.apiserver.kinds.schemas import OBJECT_REFERENCE, object_schema
from kubewerk.apiserver.registry import ServedResource
from kubewerk.apiserver.request import RestResponse, Target
from kubewerk.apiserver.strategy import AGE, PrinterColumn, Strategy
from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.meta import age, now_rfc3339

if TYPE_CHECKING:
    from kubewerk.apiserver.app import ApiServer
    from kubewerk.apiserver.auth.types import UserInfo

JSON = dict[str, Any]
TOKEN_GROUP = "authentication.k8s.io"
TOKEN_API_VERSION = "authentication.k8s.io/v1"
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
MAX_EXPIRATION_SECONDS = 1 << 32


ENFORCE_MOUNTABLE_SECRETS = "kubernetes.io/enforce-mountable-secrets"


def _clean_secret_references(account: JSON) -> None:
    """``cleanSecretReferences``: a ``secrets`` entry is its name and nothing else."""
    secrets = account.get("secrets")
    if isinstance(secrets, list):
        account["secrets"] = [
            {"name": ref["name"]} if isinstance(ref, dict) and ref.get("name") else {}
            for ref in secrets
        ]


def annotations_of(obj: JSON | None) -> JSON:
    """The object's ``metadata.annotations`` ({} when absent or not a mapping)."""
    meta = (obj or {}).get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return annotations if isinstance(annotations, dict) else {}


class ServiceAccountStrategy(Strategy):
    """The default strategy, typed decoding, kube's ``secrets`` clean-up and warning, and
    the ``token`` subresource (create only)."""

    subresources: ClassVar[dict[str, tuple[str, ...]]] = {"token": ("create",)}
    subresource_kinds: ClassVar[dict[str, tuple[str, str, str]]] = {
        "token": ("authentication.k8s.io", "v1", "TokenRequest")
    }
    prunes_unknown_fields = False  # typed_decode does it

    def typed_decode(self, obj: JSON, version: str) -> list[str] | None:
        """Decode into ``v1.ServiceAccount``: unknown fields dropped and returned; raises
        ``ValueError`` with the decoder's text for a value of the wrong type."""
        unknown: list[str] = core_decoder().decode(obj, "io.k8s.api.core.v1.ServiceAccount")
        return unknown

    def prepare_for_create(self, obj: JSON) -> None:
        super().prepare_for_create(obj)
        _clean_secret_references(obj)

    def prepare_for_update(self, new: JSON, old: JSON) -> None:
        _clean_secret_references(new)

    def warnings(self, obj: JSON, old: JSON | None) -> Sequence[str]:
        if ENFORCE_MOUNTABLE_SECRETS in annotations_of(old):
            return []
        if ENFORCE_MOUNTABLE_SECRETS not in annotations_of(obj):
            return []
        return [
            f"metadata.annotations[{ENFORCE_MOUNTABLE_SECRETS}]: deprecated in v1.32+; "
            "prefer separate namespaces to isolate access to mounted secrets"
        ]

    def to_storage(self, obj: JSON) -> JSON:
        struct_order(obj, ("secrets", "imagePullSecrets", "automountServiceAccountToken"))
        return obj


def resource_type() -> ServedResource:
    return ServedResource(
        group="",
        resource="serviceaccounts",
        kind="ServiceAccount",
        list_kind="ServiceAccountList",
        singular="serviceaccount",
        namespaced=True,
        versions=["v1"],
        storage_version="v1",
        short_names=["sa"],
        strategic_kind="ServiceAccount",
        return_deleted_object=True,
        strategy=ServiceAccountStrategy(
            columns=[PrinterColumn("Secrets", "string", ".secrets"), AGE],
            cells=lambda o: [len(o.get("secrets") or []), age(o)],
        ),
        schemas={
            "v1": object_schema(
                "ServiceAccount binds together a name, a principal and secrets.",
                {
                    "secrets": {"type": "array", "items": OBJECT_REFERENCE},
                    "imagePullSecrets": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                    },
                    "automountServiceAccountToken": {"type": "boolean"},
                },
            )
        },
    )


def _invalid(name: str, errors: list[FieldError]) -> ApiError:
    return ApiError.invalid("TokenRequest", TOKEN_GROUP, name, errors)


def token_request(server: ApiServer) -> Any:
    """The ``serviceaccounts/token`` create handler of ``server`` (see the module doc)."""

    def create(target: Target, body: JSON, user: UserInfo, query: dict[str, str]) -> RestResponse:
        name = target.name or ""
        namespace = target.namespace or ""
        kind, api_version = body.get("kind"), body.get("apiVersion")
        if kind not in (None, "", "TokenRequest") or api_version not in (
            None,
            "",
            TOKEN_API_VERSION,
        ):
            raise ApiError.bad_request(
                f"the body of the request must be a {TOKEN_API_VERSION} TokenRequest, "
                f"not {api_version or '<no apiVersion>'} {kind or '<no kind>'}"
            )
        meta = body.get("metadata") or {}
        spec = body.get("spec") or {}
        if not isinstance(meta, dict) or not isinstance(spec, dict):
            raise ApiError.bad_request("metadata and spec of a TokenRequest must be objects")
        # kube's TokenREST.Create, in its order: the body's name and namespace, the
        # ServiceAccount, then ValidateTokenRequest (reported for the name "")
        if meta.get("name") and meta["name"] != name:
            raise _invalid(
                name,
                [
                    FieldError.invalid(
                        "metadata.name",
                        meta["name"],
                        "must match the service account name if specified",
                    )
                ],
            )
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise _invalid(
                name,
                [
                    FieldError.invalid(
                        "metadata.namespace",
                        meta["namespace"],
                        "must match the service account namespace if specified",
                    )
                ],
            )
        seconds = spec.get("expirationSeconds")
        if seconds is None:
            seconds = DEFAULT_EXPIRATION_SECONDS
        if isinstance(seconds, bool) or not isinstance(seconds, int):
            raise ApiError.bad_request(
                'TokenRequest in version "v1" cannot be handled as a TokenRequest: '
                "spec.expirationSeconds must be an integer"
            )
        audiences = spec.get("audiences") or []
        if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
            raise ApiError.bad_request("spec.audiences of a TokenRequest must be a list of strings")
        account = server._lookup("serviceaccounts", namespace, name)
        if account is None:
            raise ApiError.not_found("serviceaccounts", "", name)
        if seconds < MIN_EXPIRATION_SECONDS:
            raise _invalid(
                "",
                [
                    FieldError.invalid(
                        "spec.expirationSeconds",
                        seconds,
                        "may not specify a duration less than 10 minutes",
                    )
                ],
            )
        if seconds > MAX_EXPIRATION_SECONDS:
            raise _invalid(
                "",
                [
                    FieldError.invalid(
                        "spec.expirationSeconds",
                        seconds,
                        "may not specify a duration larger than 2^32 seconds",
                    )
                ],
            )
        bound = _bound_object(server, namespace, name, spec.get("boundObjectRef"))
        tokens = server.service_accounts
        audiences = list(audiences) or list(tokens.audiences)
        created = now_rfc3339()
        token, exp = tokens.issue(account, audiences, seconds, bound, _pod_node(server, bound))
        return RestResponse(
            201,
            {
                "kind": "TokenRequest",
                "apiVersion": TOKEN_API_VERSION,
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": created},
                "spec": {
                    "audiences": audiences,
                    "expirationSeconds": seconds,
                    "boundObjectRef": spec.get("boundObjectRef"),
                },
                "status": {
                    "token": token,
                    "expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(exp)),
                },
            },
        )

    return create


def _bound_object(
    server: ApiServer, namespace: str, account: str, ref: Any
) -> tuple[str, JSON] | None:
    """The object ``boundObjectRef`` names (checked as kube's TokenREST), or None."""
    if ref is None:
        return None
    if not isinstance(ref, dict):
        raise ApiError.bad_request("spec.boundObjectRef of a TokenRequest must be an object")
    api_version, kind, ref_name = (
        ref.get("apiVersion", ""),
        ref.get("kind", ""),
        ref.get("name", ""),
    )
    group = api_version.rpartition("/")[0] if isinstance(api_version, str) else ""
    version = api_version.rpartition("/")[2] if isinstance(api_version, str) else ""
    if group == "" and kind == "Pod":
        obj = server._lookup("pods", namespace, str(ref_name))
        if obj is None:
            raise ApiError.not_found("pods", "", str(ref_name))
        running_as = (obj.get("spec") or {}).get("serviceAccountName", "")
        if running_as != account:
            raise ApiError.bad_request(
                f'cannot bind token for serviceaccount "{account}" to pod running with '
                "different serviceaccount name."
            )
    elif group == "" and kind == "Node":
        obj = server._lookup("nodes", "", str(ref_name))
        if obj is None:
            raise ApiError.not_found("nodes", "", str(ref_name))
    elif group == "" and kind == "Secret":
        obj = server._lookup("secrets", namespace, str(ref_name))
        if obj is None:
            raise ApiError.not_found("secrets", "", str(ref_name))
    else:
        raise ApiError.bad_request(
            f"cannot bind token to object of type {group}/{version}, Kind={kind}"
        )
    uid = (obj.get("metadata") or {}).get("uid", "")
    if ref.get("uid") and ref["uid"] != uid:
        raise ApiError.conflict(
            kind,
            group,
            str(ref_name),
            f"the UID in the bound object reference ({ref['uid']}) does not match the UID in "
            "record. The object might have been deleted and then recreated",
        )
    return kind, obj


def _pod_node(server: ApiServer, bound: tuple[str, JSON] | None) -> JSON | None:
    """The Node (its ``metadata``) a bound Pod is scheduled to, for the token's node
    claim (kube's ServiceAccountTokenPodNodeInfo, GA in 1.32): the stored Node, or its
    name alone when no such Node is stored; None for an unscheduled Pod or another
    binding."""
    if bound is None or bound[0] != "Pod":
        return None
    node_name = (bound[1].get("spec") or {}).get("nodeName")
    if not isinstance(node_name, str) or not node_name:
        return None
    node = server._lookup("nodes", "", node_name)
    if node is None:
        return {"name": node_name}
    meta = node.get("metadata")
    return meta if isinstance(meta, dict) else {"name": node_name}


def install_token_request(server: ApiServer) -> None:
    """Serve ``serviceaccounts/token`` on ``server``, and keep its ServiceAccount token
    Secrets filled as kube-controller-manager's tokens controller does
    (``apiserver.sa_tokens``)."""
    from kubewerk.apiserver import sa_tokens

    rtype = server.registry.get("", "serviceaccounts")
    if rtype is not None:
        server.serve_create(
            rtype, token_request(server), "token", protobuf_decoder=decoder("TokenRequest")
        )
    sa_tokens.install(server)
