"""Three real CRDs from the corpus re-modelled as kubewerk classes.

KEDA ``ScaledObject`` (keda.sh/v1alpha1), External Secrets ``ExternalSecret``
(external-secrets.io/v1) and Flux ``GitRepository`` (source.toolkit.fluxcd.io/v1).
Field names, types, constraints, defaults and rules follow the upstream CRDs in the
corpus (``tests/data/corpus``, read through the ``corpus_dir`` fixture); descriptions are
our own (short) words.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from kubewerk.model import (
    Condition,
    Int32,
    Int64,
    KubeModel,
    ListType,
    MapType,
    Nullable,
    PrinterColumn,
    Quantity,
    Resource,
    Rule,
)

# --------------------------------------------------------------------------- KEDA


class HPAScalingPolicy(KubeModel):
    """One scaling policy."""

    period_seconds: Int32
    type: str
    value: Int32


class HPAScalingRules(KubeModel):
    """Scaling rules for one direction."""

    policies: Annotated[list[HPAScalingPolicy], ListType.ATOMIC] | None = None
    select_policy: str | None = None
    stabilization_window_seconds: Int32 | None = None
    tolerance: Quantity | None = None


class HPABehavior(KubeModel):
    """Scaling behaviour up and down."""

    scale_down: HPAScalingRules | None = None
    scale_up: HPAScalingRules | None = None


class HorizontalPodAutoscalerConfig(KubeModel):
    """Settings for the HPA that KEDA manages."""

    behavior: HPABehavior | None = None
    name: str | None = None


class ScalingModifiers(KubeModel):
    """Composite-metric scaling."""

    activation_target: str | None = None
    formula: str | None = None
    metric_type: Literal["AverageValue", "Value"] | None = None
    target: str | None = None


class AdvancedConfig(KubeModel):
    """Advanced scaling options."""

    horizontal_pod_autoscaler_config: HorizontalPodAutoscalerConfig | None = None
    restore_to_original_replica_count: bool | None = None
    scaling_modifiers: ScalingModifiers | None = None


class Fallback(KubeModel):
    """Replicas to use while the scaler fails."""

    behavior: Literal[
        "static",
        "currentReplicas",
        "currentReplicasIfHigher",
        "currentReplicasIfLower",
        "scalingModifiers",
    ] = "static"
    failure_threshold: Annotated[Int32, Field(ge=0)]
    replicas: Annotated[Int32, Field(ge=0)]


class ScaleTarget(KubeModel):
    """The object to scale."""

    api_version: str | None = None
    env_source_container_name: str | None = None
    kind: str | None = None
    name: Annotated[str, Field(min_length=1)]


class AuthenticationRef(KubeModel):
    """The (Cluster)TriggerAuthentication a trigger uses."""

    kind: Literal["TriggerAuthentication", "ClusterTriggerAuthentication"] | None = None
    name: str


class ScaleTriggers(KubeModel):
    """One scaler."""

    authentication_ref: AuthenticationRef | None = None
    metadata: dict[str, str]
    metric_type: str | None = None
    name: str | None = None
    type: Annotated[str, Field(min_length=1)]
    use_cached_metrics: bool | None = None


class ScaledObjectSpec(
    KubeModel,
    rules=[
        Rule(
            "!has(self.minReplicaCount) || self.minReplicaCount <= "
            "(has(self.maxReplicaCount) ? self.maxReplicaCount : 100)",
            message="minReplicaCount must be less than or equal to maxReplicaCount",
        )
    ],
):
    """What to scale and when."""

    advanced: AdvancedConfig | None = None
    cooldown_period: Annotated[Int32, Field(ge=0)] | None = None
    fallback: Fallback | None = None
    idle_replica_count: Annotated[Int32, Field(ge=0)] | None = None
    initial_cooldown_period: Annotated[Int32, Field(ge=0)] | None = None
    max_replica_count: Annotated[Int32, Field(ge=1)] | None = None
    min_replica_count: Annotated[Int32, Field(ge=0)] | None = None
    polling_interval: Annotated[Int32, Field(ge=1)] | None = None
    scale_target_ref: ScaleTarget
    triggers: Annotated[list[ScaleTriggers], Field(min_length=1)]


class KedaCondition(KubeModel):
    """A KEDA condition."""

    message: str | None = None
    reason: str | None = None
    status: str
    type: str


class HealthStatus(KubeModel):
    """Health of one trigger."""

    number_of_failures: Int32 | None = None
    status: str | None = None


class GroupVersionKindResource(KubeModel):
    """The scale target's group, version, kind and resource."""

    group: str
    kind: str
    resource: str
    version: str


class TriggerActivityStatus(KubeModel):
    """Whether a trigger is active."""

    is_active: bool | None = None


class ScaledObjectStatus(KubeModel):
    """What KEDA observed."""

    authentications_types: str | None = None
    composite_scaler_name: str | None = None
    conditions: list[KedaCondition] | None = None
    external_metric_names: list[str] | None = None
    health: dict[str, HealthStatus] | None = None
    hpa_name: str | None = None
    last_active_time: datetime | None = None
    original_replica_count: Int32 | None = None
    paused_replica_count: Int32 | None = None
    resource_metric_names: list[str] | None = None
    scale_target_gvkr: GroupVersionKindResource | None = Field(
        default=None, alias="scaleTargetGVKR"
    )
    scale_target_kind: str | None = None
    triggers_activity: dict[str, TriggerActivityStatus] | None = None
    triggers_types: str | None = None


def _cond(name: str) -> str:
    return f'.status.conditions[?(@.type=="{name}")].status'


class ScaledObject(
    Resource[ScaledObjectSpec, ScaledObjectStatus],
    group="keda.sh",
    version="v1alpha1",
    short_names=["so"],
    printer_columns=[
        PrinterColumn("ScaleTargetKind", json_path=".status.scaleTargetKind", type="string"),
        PrinterColumn("ScaleTargetName", json_path=".spec.scaleTargetRef.name", type="string"),
        PrinterColumn("Min", json_path=".spec.minReplicaCount", type="integer"),
        PrinterColumn("Max", json_path=".spec.maxReplicaCount", type="integer"),
        PrinterColumn("Ready", json_path=_cond("Ready"), type="string"),
        PrinterColumn("Active", json_path=_cond("Active"), type="string"),
        PrinterColumn("Fallback", json_path=_cond("Fallback"), type="string"),
        PrinterColumn("Paused", json_path=_cond("Paused"), type="string"),
        PrinterColumn("Triggers", json_path=".status.triggersTypes", type="string"),
        PrinterColumn("Authentications", json_path=".status.authenticationsTypes", type="string"),
        PrinterColumn("Age", json_path=".metadata.creationTimestamp", type="date"),
    ],
):
    """A KEDA ScaledObject: event-driven autoscaling of a workload."""


# ------------------------------------------------------------------ External Secrets

DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
ObjectName = Annotated[str, Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN)]
SecretKey = Annotated[str, Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")]
ConversionStrategy = Literal["Default", "Unicode"]
DecodingStrategy = Literal["Auto", "Base64", "Base64URL", "None"]
NullBytePolicy = Literal["Ignore", "Fail"]


class RemoteRef(KubeModel):
    """Which secret (and which part of it) to read from the provider."""

    conversion_strategy: ConversionStrategy | None = None
    decoding_strategy: DecodingStrategy | None = None
    key: str
    metadata_policy: Literal["None", "Fetch"] | None = None
    null_byte_policy: NullBytePolicy | None = None
    property: str | None = None
    version: str | None = None


class GeneratorRef(KubeModel):
    """A generator to take values from."""

    api_version: str = "generators.external-secrets.io/v1alpha1"
    kind: Literal[
        "ACRAccessToken",
        "BeyondtrustWorkloadCredentialsDynamicSecret",
        "ClusterGenerator",
        "CloudsmithAccessToken",
        "ECRAuthorizationToken",
        "Fake",
        "GCRAccessToken",
        "GithubAccessToken",
        "GitlabDeployToken",
        "QuayAccessToken",
        "Password",
        "SSHKey",
        "STSSessionToken",
        "UUID",
        "VaultDynamicSecret",
        "Webhook",
        "Grafana",
        "MFA",
    ]
    name: ObjectName


class StoreRef(KubeModel):
    """A (Cluster)SecretStore."""

    kind: Literal["SecretStore", "ClusterSecretStore"] | None = None
    name: ObjectName | None = None


class SourceRef(KubeModel, min_properties=1, max_properties=1):
    """Where a value comes from: a store or a generator."""

    generator_ref: GeneratorRef | None = None
    store_ref: StoreRef | None = None


class ExternalSecretData(KubeModel):
    """One key of the target secret."""

    remote_ref: RemoteRef
    secret_key: SecretKey
    source_ref: SourceRef | None = None


class FindName(KubeModel):
    """Secrets whose names match."""

    regexp: str | None = None


class Find(KubeModel):
    """Find many secrets."""

    conversion_strategy: ConversionStrategy | None = None
    decoding_strategy: DecodingStrategy | None = None
    name: FindName | None = None
    null_byte_policy: NullBytePolicy | None = None
    path: str | None = None
    tags: dict[str, str] | None = None


class RewriteMerge(KubeModel):
    """Merge secrets into one key."""

    conflict_policy: Literal["Ignore", "Error"] = "Error"
    into: str = ""
    priority: list[str] | None = None
    priority_policy: Literal["IgnoreNotFound", "Strict"] = "Strict"
    strategy: Literal["Extract", "JSON"] = "Extract"


class RewriteRegexp(KubeModel):
    """Rename keys with a regular expression."""

    source: str
    target: str


class RewriteTransform(KubeModel):
    """Rename keys with a template."""

    template: str


class Rewrite(KubeModel, min_properties=1, max_properties=1):
    """One rewrite step."""

    merge: RewriteMerge | None = None
    regexp: RewriteRegexp | None = None
    transform: RewriteTransform | None = None


class ExternalSecretDataFrom(KubeModel):
    """Many keys at once."""

    extract: RemoteRef | None = None
    find: Find | None = None
    rewrite: list[Rewrite] | None = None
    source_ref: SourceRef | None = None


class SyncWindow(KubeModel):
    """A cron-scheduled window."""

    duration: str
    schedule: Annotated[
        str,
        Field(
            min_length=1,
            pattern=r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly)"
            r"|@every [^\s]+.*|[^\s]+( [^\s]+){4})$",
        ),
    ]


class SyncWindows(KubeModel):
    """When syncing is allowed or denied."""

    kind: Literal["allow", "deny"]
    windows: Annotated[list[SyncWindow], Field(min_length=1)]


class Manifest(KubeModel):
    """A non-Secret target object."""

    api_version: Annotated[str, Field(min_length=1)]
    kind: Annotated[str, Field(min_length=1)]


class TemplateMetadata(KubeModel):
    """Metadata of the generated secret."""

    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None
    labels: dict[str, str] | None = None


class TemplateRefItem(KubeModel):
    """One key of a template source."""

    key: SecretKey
    template_as: Literal["Values", "KeysAndValues"] = "Values"


class TemplateRef(KubeModel):
    """A ConfigMap or Secret holding templates."""

    items: list[TemplateRefItem]
    name: ObjectName


class TemplateFrom(KubeModel):
    """A template source."""

    config_map: TemplateRef | None = None
    literal: str | None = None
    secret: TemplateRef | None = None
    target: str = "Data"
    values_decoding_strategy: DecodingStrategy | None = None


class ExternalSecretTemplate(KubeModel):
    """How to render the target."""

    data: dict[str, str] | None = None
    engine_version: Literal["v2"] = "v2"
    merge_policy: Literal["Replace", "Merge"] = "Replace"
    metadata: TemplateMetadata | None = None
    template_from: list[TemplateFrom] | None = None
    type: str | None = None


class ExternalSecretTarget(KubeModel):
    """The secret (or other object) to write."""

    creation_policy: Literal["Owner", "Orphan", "Merge", "None", "CreateOrMerge"] = "Owner"
    deletion_policy: Literal["Delete", "Merge", "Retain"] = "Retain"
    immutable: bool | None = None
    manifest: Manifest | None = None
    name: ObjectName | None = None
    template: ExternalSecretTemplate | None = None


class ExternalSecretSpec(KubeModel):
    """What to fetch and where to put it."""

    data: list[ExternalSecretData] | None = None
    data_from: list[ExternalSecretDataFrom] | None = None
    refresh_interval: str = "1h0m0s"
    refresh_policy: Literal["CreatedOnce", "Periodic", "OnChange"] | None = None
    secret_store_ref: StoreRef | None = None
    sync_windows: SyncWindows | None = None
    target: ExternalSecretTarget = ExternalSecretTarget(
        creation_policy="Owner", deletion_policy="Retain"
    )


class SecretBinding(KubeModel, map_type=MapType.ATOMIC):
    """The secret that was written."""

    name: str = ""


class ExternalSecretCondition(KubeModel):
    """An ExternalSecret condition."""

    last_transition_time: datetime | None = None
    message: str | None = None
    reason: str | None = None
    status: str
    type: Literal["Ready", "Deleted"]


class ExternalSecretStatus(KubeModel):
    """What the controller observed."""

    binding: SecretBinding | None = None
    conditions: list[ExternalSecretCondition] | None = None
    refresh_time: Annotated[datetime | None, Nullable] = None
    synced_resource_version: str | None = None


class ExternalSecret(
    Resource[ExternalSecretSpec, ExternalSecretStatus],
    group="external-secrets.io",
    version="v1",
    short_names=["es"],
    categories=["external-secrets"],
    printer_columns=[
        PrinterColumn("StoreType", json_path=".spec.secretStoreRef.kind", type="string"),
        PrinterColumn("Store", json_path=".spec.secretStoreRef.name", type="string"),
        PrinterColumn("Refresh Interval", json_path=".spec.refreshInterval", type="string"),
        PrinterColumn(
            "Status", json_path='.status.conditions[?(@.type=="Ready")].reason', type="string"
        ),
        PrinterColumn("Ready", json_path=_cond("Ready"), type="string"),
        PrinterColumn("Last Sync", json_path=".status.refreshTime", type="date"),
    ],
    selectable_fields=[
        ".spec.secretStoreRef.name",
        ".spec.secretStoreRef.kind",
        ".spec.target.name",
        ".spec.refreshInterval",
    ],
):
    """An ExternalSecret: a Secret kept in sync with an external secret manager."""


# --------------------------------------------------------------------------- Flux


class LocalObjectReference(KubeModel):
    """A reference to an object in the same namespace."""

    name: str


class GitRepositoryRef(KubeModel):
    """Another GitRepository."""

    name: str


class GitRepositoryInclude(KubeModel):
    """An artifact to include."""

    from_path: str | None = None
    repository: GitRepositoryRef
    to_path: str | None = None


class GitRepositoryRefSpec(KubeModel):
    """The Git reference to check out."""

    branch: str | None = None
    commit: str | None = None
    name: str | None = None
    semver: str | None = None
    tag: str | None = None


class GitRepositoryVerification(KubeModel):
    """Commit signature verification."""

    mode: Literal["head", "HEAD", "Tag", "TagAndHEAD"] = "HEAD"
    secret_ref: LocalObjectReference


class GitRepositorySpec(
    KubeModel,
    rules=[
        Rule(
            "!has(self.serviceAccountName) || (has(self.provider) && "
            "(self.provider == 'azure' || self.provider == 'aws'))",
            message="serviceAccountName can only be set when provider is 'azure' or 'aws'",
        )
    ],
):
    """Which repository to fetch, how often and how."""

    ignore: str | None = None
    include: list[GitRepositoryInclude] | None = None
    interval: Annotated[str, Field(pattern=r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$")]
    provider: Literal["generic", "aws", "azure", "github"] | None = None
    proxy_secret_ref: LocalObjectReference | None = None
    recurse_submodules: bool | None = None
    ref: GitRepositoryRefSpec | None = None
    secret_ref: LocalObjectReference | None = None
    service_account_name: str | None = None
    sparse_checkout: list[str] | None = None
    suspend: bool | None = None
    timeout: Annotated[str, Field(pattern=r"^([0-9]+(\.[0-9]+)?(ms|s|m))+$")] = "60s"
    url: Annotated[str, Field(pattern=r"^(http|https|ssh)://.*$")]
    verify: GitRepositoryVerification | None = None


class Artifact(KubeModel):
    """The output of a reconciliation."""

    digest: Annotated[str, Field(pattern=r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$")]
    last_update_time: datetime
    metadata: dict[str, str] | None = None
    path: str
    revision: str
    size: Int64 | None = None
    url: str


class GitRepositoryStatus(KubeModel):
    """What the source controller observed."""

    artifact: Artifact | None = None
    conditions: list[Condition] | None = None
    included_artifacts: list[Artifact] | None = None
    last_handled_reconcile_at: str | None = None
    observed_generation: Int64 | None = None
    observed_ignore: str | None = None
    observed_include: list[GitRepositoryInclude] | None = None
    observed_recurse_submodules: bool | None = None
    observed_sparse_checkout: list[str] | None = None
    source_verification_mode: str | None = None


class GitRepository(
    Resource[GitRepositorySpec, GitRepositoryStatus],
    group="source.toolkit.fluxcd.io",
    version="v1",
    short_names=["gitrepo"],
    categories=["all", "fluxcd", "fluxcd-sources"],
    printer_columns=[
        PrinterColumn("URL", json_path=".spec.url", type="string"),
        PrinterColumn("Age", json_path=".metadata.creationTimestamp", type="date"),
        PrinterColumn("Ready", json_path=_cond("Ready"), type="string"),
        PrinterColumn(
            "Status", json_path='.status.conditions[?(@.type=="Ready")].message', type="string"
        ),
    ],
):
    """A Flux GitRepository: a Git source the Flux controllers fetch and package."""

    # upstream's spec is optional at the root (Go: `json:"spec,omitempty"`)
    spec: GitRepositorySpec | None = None  # type: ignore[assignment]
    status: GitRepositoryStatus | None = GitRepositoryStatus(observed_generation=-1)


REMODELLED = {
    "kedacore+keda/keda.sh_scaledobjects.yaml": (ScaledObject, "v1alpha1"),
    "external-secrets+external-secrets/external-secrets.io_externalsecrets.yaml": (
        ExternalSecret,
        "v1",
    ),
    "fluxcd+source-controller/source.toolkit.fluxcd.io_gitrepositories.yaml": (
        GitRepository,
        "v1",
    ),
}
