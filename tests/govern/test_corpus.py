"""``kubewerk lint`` over the real corpus: pinned per-rule counts and a checked sample."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from kubewerk.govern.findings import Finding, sort_key
from kubewerk.govern.lint import lint_documents
from kubewerk.govern.loader import gc_paused, iter_sources
from kubewerk.govern.rules import RULES


@pytest.fixture(scope="module")
def corpus_findings(corpus_dir: Path) -> list[Finding]:
    with gc_paused():
        docs = (d for batch in iter_sources([str(corpus_dir / "crds")]) for d in batch)
        result = lint_documents(docs, frozenset(RULES))
    assert result.crds == 258
    return sorted(result.findings, key=sort_key)


def test_corpus_counts_per_rule(corpus_findings: list[Finding]) -> None:
    """Pinned: a change in any rule's behaviour on real CRDs shows up here."""
    counts = dict(sorted(Counter(f.rule for f in corpus_findings).items()))
    assert counts == {
        "conditions-shape": 113,
        "cross-namespace-reference": 345,
        "deprecated-api": 6,
        "list-type-missing": 4752,
        "logic-in-spec": 129,
        "no-floats": 20,
        "plaintext-credential": 33,
        "preserve-unknown-fields": 26,
        "status-as-cache": 106,
        "status-without-subresource": 32,
        "structural-schema": 57,
        "unbounded-cel-input": 97,
        "version-discipline": 70,
    }
    for f in corpus_findings:
        assert f.line is not None and f.line >= 1
        assert f.crd or f.rule == "structural-schema"
        assert f.message


# The sample: for every rule (13), the first finding in report order (sorted by file and
# line) from each of the first three projects that have one - 37 findings. Stratifying by
# rule keeps rare rules from being drowned by list-type-missing (4752 of ~5800 findings),
# and by project keeps one CRD generator's habits from filling a rule's share; taking the
# first in report order rather than choosing keeps the sample unpicked. Each was checked
# by hand against the CRD file; the comment says why it is a true positive.
SAMPLE: list[tuple[str, str, str]] = [
    (
        "conditions-shape",
        "argoproj+argo-cd/argoproj.io_applications.yaml",
        "status.conditions",
    ),  # ApplicationCondition: no list-map, no status/reason
    (
        "conditions-shape",
        "external-secrets+external-secrets/external-secrets.io_clusterexternalsecrets.yaml",
        "status.conditions",
    ),  # no x-kubernetes-list-type: map keyed by type
    (
        "conditions-shape",
        "fluxcd+kustomize-controller/kustomize.toolkit.fluxcd.io_kustomizations.yaml",
        "status.conditions",
    ),  # metav1.Condition items but no +listType=map
    (
        "cross-namespace-reference",
        "cert-manager+cert-manager/acme.cert-manager.io_challenges.yaml",
        "spec.solver.http01.gatewayHTTPRoute.parentRefs[*].namespace",
    ),  # Gateway API parentRef may name another namespace
    (
        "cross-namespace-reference",
        "crossplane+crossplane/protection.crossplane.io_usages.yaml",
        "spec.of.resourceRef.namespace",
    ),  # namespaced Usage may protect an object elsewhere
    (
        "cross-namespace-reference",
        "external-secrets+external-secrets/external-secrets.io_secretstores.yaml",
        "spec.provider.akeyless.authSecretRef.kubernetesAuth.secretRef.namespace",
    ),  # namespaced SecretStore schema accepts a Secret in another namespace
    (
        "deprecated-api",
        "argoproj+argo-cd/argoproj.io_clusterworkflowtemplates.yaml",
        "",
    ),  # apiextensions.k8s.io/v1beta1
    (
        "deprecated-api",
        "vmware-tanzu+velero/velero.io_resticrepositories.yaml",
        "",
    ),  # apiextensions.k8s.io/v1beta1
    (
        "list-type-missing",
        "argoproj+argo-cd/argoproj.io_applications.yaml",
        "operation.info",
    ),  # array of objects, no list type
    (
        "list-type-missing",
        "cert-manager+cert-manager/cert-manager.io_certificaterequests.yaml",
        "spec.extra[*]",
    ),  # map of string arrays, no list type
    (
        "list-type-missing",
        "crossplane+crossplane/apiextensions.crossplane.io_compositeresourcedefinitions.yaml",
        "spec.connectionSecretKeys",
    ),  # string array, no list type
    (
        "logic-in-spec",
        "crossplane+crossplane/apiextensions.crossplane.io_compositeresourcedefinitions.yaml",
        "spec.conversion.strategy",
    ),  # free string, description lists the only valid values
    (
        "logic-in-spec",
        "external-secrets+external-secrets/external-secrets.io_clustersecretstores.yaml",
        "spec.provider.gcpsm.secretVersionSelectionPolicy",
    ),  # two documented values, no enum
    (
        "logic-in-spec",
        "istio+istio/telemetry.istio.io_telemetries.yaml",
        "spec.accessLogging[*].filter.expression",
    ),  # CEL text accepted unchecked
    ("no-floats", "istio+istio/crd.projectcalico.org_globalnetworkpolicies.yaml", "spec.order"),  # type: number
    (
        "no-floats",
        "strimzi+strimzi-kafka-operator/kafka.strimzi.io_kafkas.yaml",
        "spec.kafka.quotas.controllerMutationRate",
    ),  # type: number
    (
        "plaintext-credential",
        "cert-manager+cert-manager/cert-manager.io_certificates.yaml",
        "spec.keystores.jks.password",
    ),  # literal keystore password
    (
        "plaintext-credential",
        "istio+istio/metallb.io_bgppeers.yaml",
        "spec.password",
    ),  # BGP MD5 password in spec
    (
        "plaintext-credential",
        "kedacore+keda/keda.sh_clustertriggerauthentications.yaml",
        "spec.hashiCorpVault.credential.token",
    ),  # Vault token in spec
    (
        "preserve-unknown-fields",
        "argoproj+argo-cd/argoproj.io_clusterworkflowtemplates.yaml",
        "",
    ),  # v1beta1 default true
    (
        "preserve-unknown-fields",
        "istio+istio/extensions.istio.io_trafficextensions.yaml",
        "status",
    ),  # status: preserve-unknown-fields
    (
        "preserve-unknown-fields",
        "kyverno+kyverno/cilium.io_ciliumnetworkpolicies.yaml",
        "spec",
    ),  # spec: preserve-unknown-fields
    (
        "status-as-cache",
        "argoproj+argo-cd/argoproj.io_applications.yaml",
        "status.history[*].source.helm.valuesObject",
    ),  # opaque Helm values copied into status history
    (
        "status-as-cache",
        "cert-manager+cert-manager/acme.cert-manager.io_challenges.yaml",
        "status",
    ),  # status: presented/processing/reason/state only
    (
        "status-as-cache",
        "crossplane+crossplane/ops.crossplane.io_operations.yaml",
        "status.pipeline[*].output",
    ),  # opaque function output kept in status
    (
        "status-without-subresource",
        "argoproj+argo-cd/argoproj.io_applications.yaml",
        "status",
    ),  # no subresources at all
    (
        "status-without-subresource",
        "external-secrets+external-secrets/generators.external-secrets.io_generatorstates.yaml",
        "status",
    ),  # no subresources at all
    (
        "status-without-subresource",
        "istio+istio/crd.projectcalico.org_caliconodestatuses.yaml",
        "status",
    ),  # no subresources at all
    (
        "structural-schema",
        "argoproj+argo-cd/argoproj.io_clusterworkflowtemplates.yaml",
        "apiVersion",
    ),  # v1 API server rejects v1beta1
    (
        "structural-schema",
        "kubernetes-sigs+cluster-api/nogroup_noplural.yaml",
        "status.storedVersions",
    ),  # upstream test fixture: partial CRD
    (
        "structural-schema",
        "kyverno+kyverno/nogroup_noplural.yaml",
        "spec.group",
    ),  # upstream test fixture: no spec
    (
        "unbounded-cel-input",
        "crossplane+crossplane/apiextensions.crossplane.io_compositeresourcedefinitions.yaml",
        "spec.claimNames.plural",
    ),  # lowerAscii() over an unbounded string
    (
        "unbounded-cel-input",
        "istio+istio/extensions.istio.io_trafficextensions.yaml",
        "spec.wasm.url",
    ),  # isURL()/url() over an unbounded string
    (
        "unbounded-cel-input",
        "strimzi+strimzi-kafka-operator/kafka.strimzi.io_kafkabridges.yaml",
        "spec.rack.envVarName",
    ),  # string compared in a rule, no maxLength
    (
        "version-discipline",
        "crossplane+crossplane/apiextensions.crossplane.io_compositeresourcedefinitions.yaml",
        "",
    ),  # v1 and v2 schemas differ, conversion None
    (
        "version-discipline",
        "external-secrets+external-secrets/external-secrets.io_clusterexternalsecrets.yaml",
        "",
    ),  # deprecated v1beta1 without deprecationWarning
    (
        "version-discipline",
        "istio+istio/telemetry.istio.io_telemetries.yaml",
        "",
    ),  # storage v1alpha1 while v1 is served
]


def test_sample_of_true_positives(corpus_findings: list[Finding]) -> None:
    by_rule: dict[str, list[Finding]] = {}
    for f in corpus_findings:
        by_rule.setdefault(f.rule, []).append(f)
    picked: list[tuple[str, str, str]] = []
    for rule in sorted(by_rule):
        projects: set[str] = set()
        for f in by_rule[rule]:
            project = Path(f.file).parent.name
            if project in projects:
                continue
            projects.add(project)
            picked.append((rule, f"{project}/{Path(f.file).name}", f.field))
            if len(projects) == 3:
                break
    assert len(picked) >= 30
    assert picked == SAMPLE
