"""``pods/eviction``: a ``policy/v1`` Eviction, the delete that respects PodDisruptionBudgets
(``kubectl drain``), as kube-apiserver's ``EvictionREST`` answers it
(``pkg/registry/core/pod/storage/eviction.go``).

The Eviction's name must be the Pod's (400 ``name in URL does not match name in Eviction
object``); its ``deleteOptions`` are the delete's, with the request's ``dryRun`` when they
name none (a different one on both sides is a 400). A Pod that is Pending, Succeeded,
Failed or already being deleted is deleted without looking at budgets. Otherwise the
PodDisruptionBudgets of its namespace whose selector matches its labels (``{}`` matches
every Pod, no selector none, as ``LabelSelectorAsSelector``) decide: none, the Pod is
deleted; more than one, the answer is a Failure Status with code 500 (``This pod has more
than one PodDisruptionBudget, ...``) and nothing happens; one, its status must have been
computed for its generation (else 429 TooManyRequests, cause ``DisruptionBudget`` ``The
disruption budget NAME is still being processed by the server.``), allow a disruption (0:
429 with ``needs D healthy pods and has C currently``; negative: 403), and is then written
back with ``disruptionsAllowed`` one less, the Pod in ``disruptedPods`` and, at zero,
``DisruptionAllowed=False``/``InsufficientPods``. A Pod that is not Ready while the budget
already has its healthy Pods is deleted without spending the budget (with the Pod's
resourceVersion as a precondition, a change meanwhile is 429); with
``unhealthyPodEvictionPolicy: AlwaysAllow`` a Pod that is not Ready is deleted that way
whatever the budget's state. Before the delete the Pod gets the ``DisruptionTarget``
condition (``EvictionByEvictionAPI``, ``Eviction API: evicting``), as on 1.31+ clusters.
The answer is a Success Status, 201.

The budget's status is the disruption controller's: the simulated cluster runs one
(``simulate/disruption.py``); without it nothing keeps a budget up to date, and it refuses
every eviction it covers (429), as a cluster whose controller manager is down does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kubewerk.apiserver.protobuf import decode_object
from kubewerk.apiserver.request import RestResponse, Target
from kubewerk.core.errors import ApiError
from kubewerk.core.meta import now_rfc3339
from kubewerk.core.selectors import LabelSelectorError, label_selector_from_dict

if TYPE_CHECKING:
    from kubewerk.apiserver.app import ApiServer
    from kubewerk.apiserver.auth.types import UserInfo

JSON = dict[str, Any]

EVICTION_API_VERSION = "policy/v1"
MAX_DISRUPTED_PODS = 2000
"""``MaxDisruptedPodSize``: a budget listing more Pods than this refuses evictions."""
_PROCESSING_RETRY_SECONDS = 10


def _too_many_requests(message: str, retry_after: int, cause: str) -> ApiError:
    """``NewTooManyRequests`` with a ``DisruptionBudget`` cause."""
    details: JSON = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return ApiError(429, "TooManyRequests", message, details)


def _budget_processing(name: str) -> ApiError:
    return _too_many_requests(
        "Cannot evict pod as it would violate the pod's disruption budget.",
        _PROCESSING_RETRY_SECONDS,
        f"The disruption budget {name} is still being processed by the server.",
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _delete_options(body: JSON, query: dict[str, str]) -> JSON:
    """``propagateDryRun``: the Eviction's deleteOptions with the request's dryRun."""
    options = body.get("deleteOptions")
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise ApiError.bad_request("deleteOptions of an Eviction must be an object")
    options = dict(options)
    request_dry = ["All"] if query.get("dryRun") else []
    body_dry = options.get("dryRun") or []
    if not body_dry:
        if request_dry:
            options["dryRun"] = request_dry
    elif request_dry and list(body_dry) != request_dry:
        raise ApiError.bad_request(
            f"Non-matching dry-run options in request and content: "
            f"[{' '.join(request_dry)}] and [{' '.join(str(d) for d in body_dry)}]"
        )
    return options


def _ignores_budgets(pod: JSON) -> bool:
    """``canIgnorePDB``: a Pending or finished Pod, or one already being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Pending", "Succeeded", "Failed") or bool(
        (pod.get("metadata") or {}).get("deletionTimestamp")
    )


def _ready(pod: JSON) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(
        isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
    )


def _guarded(options: JSON) -> bool:
    """Whether the delete options carry a resourceVersion precondition."""
    return bool((options.get("preconditions") or {}).get("resourceVersion"))


def _check_preconditions(pod: JSON, options: JSON) -> None:
    """The delete's preconditions against the Pod before its condition is written (the
    ``getLatestPod`` of ``addConditionAndDeletePod``), worded as kube words them."""
    pre = options.get("preconditions") or {}
    meta = pod["metadata"]
    name = meta.get("name", "")
    uid, rv = pre.get("uid"), pre.get("resourceVersion")
    if uid and uid != meta.get("uid"):
        raise ApiError.conflict(
            "Pod",
            "",
            name,
            f"the UID in the precondition ({uid}) does not match the UID in record "
            f"({meta.get('uid')}). The object might have been deleted and then recreated",
        )
    if rv and rv != meta.get("resourceVersion"):
        raise ApiError.conflict(
            "Pod",
            "",
            name,
            f"the ResourceVersion in the precondition ({rv}) does not match the "
            f"ResourceVersion in record ({meta.get('resourceVersion')}). The object might "
            "have been modified",
        )


def _with_precondition(options: JSON, resource_version: str) -> JSON:
    out = dict(options)
    out["preconditions"] = {
        **(options.get("preconditions") or {}),
        "resourceVersion": resource_version,
    }
    return out


class _Eviction:
    """One server's ``pods/eviction`` create handler."""

    def __init__(self, server: ApiServer) -> None:
        self.server = server

    def _target(self, resource: str, group: str, namespace: str, name: str | None) -> Target:
        rtype = self.server.registry.get(group, resource)
        if rtype is None:
            raise ApiError.internal(f"{resource} are not served")
        return Target(rtype, rtype.storage_version, namespace, name)

    def __call__(
        self, target: Target, body: JSON, user: UserInfo, query: dict[str, str]
    ) -> RestResponse:
        name = target.name or ""
        namespace = target.namespace or ""
        kind, api_version = body.get("kind"), body.get("apiVersion")
        if kind not in (None, "", "Eviction") or api_version not in (
            None,
            "",
            EVICTION_API_VERSION,
            "policy/v1beta1",
        ):
            raise ApiError.bad_request(
                f"the body of the request must be a {EVICTION_API_VERSION} Eviction, "
                f"not {api_version or '<no apiVersion>'} {kind or '<no kind>'}"
            )
        meta = body.get("metadata") or {}
        if not isinstance(meta, dict) or meta.get("name") != name:
            raise ApiError.bad_request("name in URL does not match name in Eviction object")
        options = _delete_options(body, query)
        dry_run = bool(options.get("dryRun"))
        pods = self._target("pods", "", namespace, name)
        pod = self.server.api.get(pods, {}).body
        if _ignores_budgets(pod):
            finished = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if not (pod["metadata"].get("deletionTimestamp") or finished or _guarded(options)):
                # shouldEnforceResourceVersion: not racing a Pending Pod that becomes ready
                options = _with_precondition(options, pod["metadata"]["resourceVersion"])
            return self._evict(pods, pod, options, dry_run)

        budgets = self._budgets(namespace, pod)
        if len(budgets) > 1:
            return RestResponse(
                201,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": "This pod has more than one PodDisruptionBudget, which the "
                    "eviction subresource does not support.",
                    "code": 500,
                },
            )
        if budgets:
            budget = budgets[0]
            status = budget.get("status") or {}
            current, desired = (
                _int(status.get("currentHealthy")),
                _int(status.get("desiredHealthy")),
            )
            always = (budget.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow"
            if not _ready(pod) and (always or current >= desired > 0):
                # an unready Pod does not count as healthy: nothing to spend (AlwaysAllow:
                # whatever the budget's state; IfHealthyBudget, the default: while the
                # budget has its healthy Pods)
                guarded = _with_precondition(options, pod["metadata"]["resourceVersion"])
                try:
                    return self._evict(pods, pod, guarded, dry_run)
                except ApiError as exc:
                    if exc.code == 409 and not _guarded(options):
                        raise _budget_processing(budget["metadata"]["name"]) from None
                    raise
            self._spend(namespace, budget, name, dry_run)
        return self._evict(pods, pod, options, dry_run)

    def _budgets(self, namespace: str, pod: JSON) -> list[JSON]:
        """``getPodDisruptionBudgets``: the namespace's budgets whose selector matches the
        Pod (``LabelSelectorAsSelector``: no selector matches nothing, ``{}`` every Pod; an
        invalid one nothing)."""
        pdbs = self._target("poddisruptionbudgets", "policy", namespace, None)
        items, _ = self.server.api.list(pdbs, {})
        labels = (pod.get("metadata") or {}).get("labels") or {}
        out = []
        for pdb in items:
            try:
                parsed = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
            except LabelSelectorError:
                continue
            if not parsed.nothing and parsed.matches(labels):
                out.append(pdb)
        return out

    def _spend(self, namespace: str, budget: JSON, pod_name: str, dry_run: bool) -> None:
        """``checkAndDecrement``: refuse, or write the budget back one disruption poorer."""
        name = budget["metadata"]["name"]
        status = dict(budget.get("status") or {})
        if _int(status.get("observedGeneration")) < _int(budget["metadata"].get("generation")):
            raise _budget_processing(name)
        allowed = status.get("disruptionsAllowed")
        allowed = _int(allowed)
        if allowed < 0:
            raise ApiError.forbidden(
                "poddisruptionbudget", "policy", name, "pdb disruptions allowed is negative"
            )
        disrupted = dict(status.get("disruptedPods") or {})
        if len(disrupted) > MAX_DISRUPTED_PODS:
            raise ApiError.forbidden(
                "poddisruptionbudget",
                "policy",
                name,
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            )
        if allowed == 0:
            raise _too_many_requests(
                "Cannot evict pod as it would violate the pod's disruption budget.",
                0,
                f"The disruption budget {name} needs {_int(status.get('desiredHealthy'))} "
                f"healthy pods and has {_int(status.get('currentHealthy'))} currently",
            )
        if dry_run:
            return
        now = now_rfc3339()
        status["disruptionsAllowed"] = allowed - 1
        if allowed - 1 == 0:
            status["conditions"] = _insufficient(status, now)
        disrupted[pod_name] = now
        status["disruptedPods"] = disrupted
        updated = {**budget, "status": status}
        target = self._target("poddisruptionbudgets", "policy", namespace, name)
        target.subresource = "status"
        self.server.api.update(target, updated, {})

    def _evict(self, pods: Target, pod: JSON, options: JSON, dry_run: bool) -> RestResponse:
        """The ``DisruptionTarget`` condition (not on a dry run), then the delete."""
        if not dry_run:
            _check_preconditions(pod, options)
            pod = self._disruption_target(pods, pod)
            if _guarded(options):
                # the condition's write moved the Pod on: the precondition follows it
                options = _with_precondition(options, pod["metadata"]["resourceVersion"])
        query = {"dryRun": "All"} if dry_run else {}
        self.server.api.delete(pods, {k: v for k, v in options.items() if k != "dryRun"}, query)
        return RestResponse(
            201,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "code": 201,
            },
        )

    def _disruption_target(self, pods: Target, pod: JSON) -> JSON:
        status = dict(pod.get("status") or {})
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        wanted = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        }
        old = next((c for c in conditions if c.get("type") == "DisruptionTarget"), None)
        if old is not None and all(old.get(k) == v for k, v in wanted.items()):
            return pod
        now = now_rfc3339()
        entry = {**wanted, "lastProbeTime": None, "lastTransitionTime": now}
        if old is not None and old.get("status") == "True":
            entry["lastTransitionTime"] = old.get("lastTransitionTime", now)
        status["conditions"] = [c for c in conditions if c.get("type") != "DisruptionTarget"] + [
            entry
        ]
        target = Target(pods.rtype, pods.version, pods.namespace, pods.name, "status")
        return self.server.api.update(target, {**pod, "status": status}, {}).body


def _insufficient(status: JSON, now: str) -> list[JSON]:
    """``UpdateDisruptionAllowedCondition`` at zero: DisruptionAllowed False,
    InsufficientPods (its transition time kept when it was False already)."""
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    old = next((c for c in conditions if c.get("type") == "DisruptionAllowed"), None)
    entry: JSON = {
        "type": "DisruptionAllowed",
        "status": "False",
        "observedGeneration": _int(status.get("observedGeneration")),
        "lastTransitionTime": now,
        "reason": "InsufficientPods",
        "message": "",
    }
    if old is not None:
        if old.get("status") == "False":
            entry["lastTransitionTime"] = old.get("lastTransitionTime", now)
        entry["message"] = old.get("message", "")
        return [entry if c is old else c for c in conditions]
    return [*conditions, entry]


def decode_eviction(body: bytes) -> JSON:
    """A protobuf Eviction body (kubectl drain's client sends protobuf) as JSON."""
    return decode_object(body, EVICTION_API_VERSION, "Eviction")


def install_eviction(server: ApiServer) -> None:
    """Serve ``pods/eviction`` on ``server``."""
    rtype = server.registry.get("", "pods")
    if rtype is not None and "eviction" in rtype.strategy.subresources:
        server.serve_create(rtype, _Eviction(server), "eviction", protobuf_decoder=decode_eviction)
