"""``version-discipline``: conversion, storage and deprecation mistakes across versions."""

from __future__ import annotations

from kubewerk.govern.crd_view import CRDView, strip_descriptions, version_stability
from kubewerk.govern.findings import Severity
from kubewerk.govern.rules.base import Emit, Rule
from kubewerk.govern.rules.example import Example, Where


class VersionDiscipline(Rule):
    """Three checks over the CRD's versions:

    - error: several served (or storage) versions whose schemas differ (descriptions
      aside) with `conversion.strategy: None` (the default) — the API server only
      rewrites `apiVersion`, so objects stored as one version are served as the others
      unchanged. Reported once, naming the versions that differ from the storage version
      (or, without one, the first).
    - warning: an alpha/beta storage version while a GA version is served.
    - info: `deprecated: true` without a `deprecationWarning`.
    """

    id = "version-discipline"
    severity = Severity.WARNING
    other_severities = (Severity.ERROR, Severity.INFO)
    summary = (
        "versions with different schemas and conversion None (error); a pre-release storage "
        "version beside a GA one (warning); deprecated versions without a warning (info)"
    )
    # a backslash ending a line below joins it with the next: the example (and
    # docs/lint-rules.md) keeps each schema on one line
    example = Example(
        Where.CRD_SPEC,
        bad="""\
versions:
- name: v1beta1
  served: true
  storage: false
  schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, \
properties: {size: {type: string}}}}}}
- name: v1
  served: true
  storage: true
  schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, \
properties: {replicas: {type: integer}}}}}}
""",
        good="""\
versions:
- name: v1beta1
  served: true
  storage: false
  schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, \
properties: {size: {type: string}}}}}}
- name: v1
  served: true
  storage: true
  schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, \
properties: {replicas: {type: integer}}}}}}
conversion:
  strategy: Webhook
  webhook:
    conversionReviewVersions: [v1]
    clientConfig: {service: {namespace: widgets-system, name: widgets-conversion}}
""",
        note="""\
Or keep the schemas identical. If a kustomize patch adds the webhook at deploy time, lint
the rendered output.""",
    )

    @classmethod
    def check_crd(cls, crd: CRDView, emit: Emit) -> None:
        versions = [v for v in crd.versions if v.served or v.storage]
        if len(versions) > 1 and crd.conversion_strategy == "None":
            reference = crd.storage_version or versions[0]
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
                    cls.finding(
                        f"version(s) {', '.join(differing)} have a different schema from "
                        f"{reference.name} but spec.conversion.strategy is None: the API server "
                        "only rewrites apiVersion, so objects stored as one version are served as "
                        "the others unchanged. Add a conversion webhook, or keep the schemas "
                        "identical (if a kustomize patch adds the webhook at deploy time, lint "
                        "the rendered output)",
                        ("spec", "conversion")
                        if "conversion" in crd.spec
                        else ("spec", "versions"),
                        severity=Severity.ERROR,
                        versions=tuple(differing),
                    )
                )
        storage = crd.storage_version
        if storage is not None and version_stability(storage.name) in ("alpha", "beta"):
            ga = [v.name for v in crd.versions if v.served and version_stability(v.name) == "ga"]
            if ga:
                emit(
                    cls.finding(
                        f"storage version {storage.name} is a pre-release version while GA "
                        f"version {ga[0]} is served: objects are persisted in the less stable "
                        f"shape. Make {ga[0]} the storage version (and migrate stored objects)",
                        (*storage.location, "storage"),
                        versions=(storage.name,),
                    )
                )
        for v in crd.versions:
            if v.deprecated and not v.deprecation_warning:
                emit(
                    cls.finding(
                        f"version {v.name} is deprecated without deprecationWarning: clients "
                        "only get the generic warning. Say what to use instead, e.g. "
                        f'deprecationWarning: "{crd.group}/{v.name} {crd.kind} is deprecated; '
                        'use <newer version>"',
                        (*v.location, "deprecated"),
                        severity=Severity.INFO,
                        versions=(v.name,),
                    )
                )
