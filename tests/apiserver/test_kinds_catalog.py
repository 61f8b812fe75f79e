"""The built-in kinds' table (kinds/catalog.py): each line read into the registry's facts,
checked against ``kubectl api-resources`` of a v1.33+ cluster for a few kinds, and a slip
in the table (an unknown trait, strategy facts for a kind not in it) refused at once."""

from __future__ import annotations

import pytest

from kubewerk.apiserver.kinds import catalog
from kubewerk.apiserver.kinds.typed import KEEP_STATUS

ROWS = {row.kind: row for row in catalog.rows()}


def test_a_line_reads_as_the_registry_declares() -> None:
    pod = ROWS["Pod"]
    assert (pod.group, pod.versions, pod.resource, pod.namespaced) == ("", ("v1",), "pods", True)
    assert (pod.short_names, pod.categories) == (("po",), ("all",))
    assert (pod.status, pod.scale, pod.generation, pod.spec_fields) == (
        True,
        False,
        True,
        ("spec",),
    )
    rc = ROWS["ReplicationController"]
    assert (rc.short_names, rc.status, rc.scale, rc.generation) == (("rc",), True, True, True)
    assert rc.created_status == {"replicas": 0}
    hpa = ROWS["HorizontalPodAutoscaler"]
    assert hpa.versions == ("v2", "v1") and hpa.categories == ("all",) and not hpa.generation
    vap = ROWS["ValidatingAdmissionPolicy"]
    assert (vap.namespaced, vap.categories, vap.status) == (False, ("api-extensions",), True)
    assert ROWS["Node"].created_status == KEEP_STATUS and not ROWS["Node"].namespaced
    assert ROWS["ControllerRevision"].short_names == () and ROWS["Endpoints"].created_status is None


def test_every_kind_once_in_registration_order() -> None:
    kinds = [row.kind for row in catalog.rows()]
    assert len(kinds) == len(set(kinds)) == 29
    assert kinds[0] == "Pod" and kinds[-1] == "ValidatingAdmissionPolicyBinding"


def test_an_unknown_trait_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    table = {("", ("v1",)): (("Pod", "pods", "po", "all stauts"),)}
    monkeypatch.setattr(catalog, "_REGISTRY", table)
    with pytest.raises(ValueError, match=r"Pod: unknown traits \['stauts'\]"):
        catalog.rows()


def test_strategy_facts_for_a_missing_kind_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "_REGISTRY", {("", ("v1",)): (("Pod", "pods", "po", ""),)})
    with pytest.raises(ValueError, match=r"not in the registry table: .*'Service'"):
        catalog.rows()
