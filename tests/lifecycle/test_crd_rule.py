"""The CRD of a kind with ``lifecycle=``: ``status.phase`` as an enum with the generated
transition rule, evaluated by kubewerk.schema (the embedded server's CEL engine) for
legal, illegal, first-write and removal cases; and what the model refuses."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from kubewerk.core.errors import FieldError
from kubewerk.lifecycle import DEFAULT_LIFECYCLE, Lifecycle, LifecycleStatus
from kubewerk.lifecycle.transition_rule import phase_rule, removal_rule
from kubewerk.model import KubeModel, ModelDefinitionError, PrinterColumn, Resource, crd_for
from kubewerk.model.status_phase import PhaseDeclaration, PhaseSchema
from kubewerk.schema import validate_crd

from .models import CACHE_LIFECYCLE, GROUP, Cache, Database


def obj(kind: type[Any], phase: str | None = None, *, status: bool = True) -> dict[str, Any]:
    info = kind.kind_info()
    out: dict[str, Any] = {
        "apiVersion": info.api_version,
        "kind": info.kind,
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {},
    }
    if status:
        out["status"] = {} if phase is None else {"phase": phase}
    return out


def errors(kind: type[Any], new: dict[str, Any], old: dict[str, Any] | None) -> list[str]:
    found: list[FieldError] = kind.compiled_schema().validate(new, old)
    return [f"{e.field}: {e.detail}" for e in found]


def test_the_crd_has_the_phase_enum_the_rules_and_a_column() -> None:
    crd = crd_for(Database)
    assert validate_crd(crd) == []
    version = crd["spec"]["versions"][0]
    root = version["schema"]["openAPIV3Schema"]
    phase = root["properties"]["status"]["properties"]["phase"]
    assert phase["type"] == "string"
    assert phase["enum"] == ["Pending", "Active", "Reconciling", "Failed", "Deleting"]
    assert phase["maxLength"] == len("Reconciling")
    assert phase["description"].startswith("The lifecycle phase: Pending → Active | Failed;")
    assert phase["x-kubernetes-validations"] == [phase_rule(DEFAULT_LIFECYCLE).to_schema()]
    assert root["x-kubernetes-validations"] == [removal_rule().to_schema()]
    assert version["additionalPrinterColumns"] == [
        {
            "jsonPath": ".status.phase",
            "name": "Phase",
            "type": "string",
            "description": "The lifecycle phase",
        }
    ]
    assert version["subresources"] == {"status": {}}
    # the status model's own (shared, cached) schema is not changed
    plain = crd_for(_plain_kind())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert "enum" not in plain["properties"]["status"]["properties"]["phase"]


def _plain_kind() -> type[Any]:
    class PlainStatus(LifecycleStatus):
        """A status without a lifecycle."""

    class Plain(Resource[KubeModel, PlainStatus], group=GROUP):
        """A kind without lifecycle=."""

    return Plain


def test_the_rule_text_is_a_simple_lookup() -> None:
    rule = phase_rule(DEFAULT_LIFECYCLE)
    assert rule.rule == (
        "self == oldSelf || "
        "!(oldSelf in ['Pending', 'Active', 'Reconciling', 'Failed', 'Deleting']) || "
        "oldSelf + '>' + self in ['Pending>Active', 'Pending>Failed', 'Active>Reconciling', "
        "'Active>Deleting', 'Active>Failed', 'Reconciling>Active', 'Reconciling>Failed', "
        "'Failed>Reconciling', 'Failed>Deleting']"
    )
    assert rule.is_transition and rule.optional_old_self is None
    assert rule.message is not None and "\n" not in rule.message


LEGAL = [
    ("Pending", "Active"),
    ("Pending", "Failed"),
    ("Active", "Reconciling"),
    ("Active", "Deleting"),
    ("Active", "Failed"),
    ("Reconciling", "Active"),
    ("Reconciling", "Failed"),
    ("Failed", "Reconciling"),
    ("Failed", "Deleting"),
]


@pytest.mark.parametrize(("old", "new"), LEGAL)
def test_every_declared_transition_passes(old: str, new: str) -> None:
    assert errors(Database, obj(Database, new), obj(Database, old)) == []


def test_every_undeclared_transition_is_refused_with_the_phases_named() -> None:
    phases = [m.value for m in DEFAULT_LIFECYCLE.members]
    refused = 0
    for old in phases:
        for new in phases:
            if old == new or (old, new) in LEGAL:
                assert errors(Database, obj(Database, new), obj(Database, old)) == []
                continue
            targets = [t.value for t in DEFAULT_LIFECYCLE.targets(DEFAULT_LIFECYCLE.phase(old))]
            allowed = ", ".join(targets) if targets else f"none, {old} is terminal"
            assert errors(Database, obj(Database, new), obj(Database, old)) == [
                f"status.phase: illegal phase transition {old} → {new} "
                f"(allowed from {old}: {allowed})"
            ]
            refused += 1
    assert refused == 25 - 5 - len(LEGAL)


def test_the_first_write_of_a_phase_passes_whatever_the_phase() -> None:
    for phase in ("Pending", "Active", "Failed", "Deleting"):
        assert errors(Database, obj(Database, phase), None) == []  # create
        assert errors(Database, obj(Database, phase), obj(Database)) == []  # status: {}
        assert errors(Database, obj(Database, phase), obj(Database, status=False)) == []


def test_a_stored_phase_the_lifecycle_does_not_know_may_change_to_any_phase() -> None:
    stored = obj(Database, "Retired")  # written before the lifecycle changed
    assert errors(Database, obj(Database, "Failed"), stored) == []
    assert errors(Database, obj(Database, "Active"), stored) == []


def test_the_enum_still_refuses_undeclared_phases() -> None:
    found = errors(Database, obj(Database, "Paused"), obj(Database, "Active"))
    assert found[0].startswith('status.phase: supported values: "Pending", "Active"')


def test_the_phase_cannot_be_removed_once_set() -> None:
    message = "status.phase: status.phase may not be removed once set (it is Failed)"
    assert errors(Database, obj(Database), obj(Database, "Failed")) == [message]
    assert errors(Database, obj(Database, status=False), obj(Database, "Failed")) == [message]
    # nothing was set: nothing to keep
    assert errors(Database, obj(Database, status=False), obj(Database)) == []


def test_a_custom_lifecycle_rule() -> None:
    assert errors(Cache, obj(Cache, "Warm"), obj(Cache, "Waiting")) == []
    assert errors(Cache, obj(Cache, "Cold"), obj(Cache, "Waiting")) == [
        "status.phase: illegal phase transition Waiting → Cold "
        "(allowed from Waiting: Warm, Evicted)"
    ]
    assert errors(Cache, obj(Cache, "Warm"), obj(Cache, "Evicted")) == [
        "status.phase: illegal phase transition Evicted → Warm "
        "(allowed from Evicted: none, Evicted is terminal)"
    ]
    phase = crd_for(Cache)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][
        "status"
    ]["properties"]["phase"]
    assert phase["enum"] == ["Waiting", "Warm", "Cold", "Evicted"]
    assert phase["description"] == (
        "The lifecycle phase (CachePhase): Waiting → Warm | Evicted; Warm → Cold; "
        "Cold → Warm | Evicted."
    )


def test_api_errors_uses_the_same_rules() -> None:
    db = Database.from_dict(obj(Database, "Active"))
    assert [e.detail for e in db.api_errors(old=obj(Database, "Deleting"))] == [
        "illegal phase transition Deleting → Active (allowed from Deleting: none, "
        "Deleting is terminal)"
    ]
    assert db.api_errors(old=obj(Database, "Reconciling")) == []


def test_lifecycle_is_a_phase_declaration() -> None:
    assert isinstance(DEFAULT_LIFECYCLE, PhaseDeclaration)
    assert Database.kind_info().lifecycle is DEFAULT_LIFECYCLE
    assert isinstance(CACHE_LIFECYCLE.phase_schema(), PhaseSchema)


# -- what the model refuses -------------------------------------------------------------


class NoPhaseStatus(KubeModel):
    ready: bool = False


class IntPhaseStatus(KubeModel):
    phase: int = 0


class Other(enum.StrEnum):
    ONE = "One"
    TWO = "Two"


class EnumPhaseStatus(KubeModel):
    phase: Other | None = None


def test_a_kind_without_a_phase_field_is_refused() -> None:
    with pytest.raises(ModelDefinitionError, match="lifecycle= needs a status with a 'phase'"):

        class NoPhase(Resource[KubeModel, NoPhaseStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
            pass

    with pytest.raises(ModelDefinitionError, match="lifecycle= needs a status type"):

        class NoStatus(Resource[KubeModel, None], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
            pass

    with pytest.raises(ModelDefinitionError, match=r"status\.phase to be a string"):

        class IntPhase(
            Resource[KubeModel, IntPhaseStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE
        ):
            pass


def test_a_phase_enum_must_match_the_lifecycle() -> None:
    with pytest.raises(ModelDefinitionError, match=r"status.phase allows \['One', 'Two'\]"):

        class Mismatch(
            Resource[KubeModel, EnumPhaseStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE
        ):
            pass


def test_lifecycle_must_be_a_declaration() -> None:
    with pytest.raises(ModelDefinitionError, match="lifecycle= takes a lifecycle declaration"):

        class Bad(Resource[KubeModel, LifecycleStatus], group=GROUP, lifecycle="Pending"):  # type: ignore[arg-type]
            pass


def test_a_declared_phase_column_is_kept_and_not_doubled() -> None:
    lc = Lifecycle(
        Other, initial=Other.ONE, transitions=[(Other.ONE, Other.TWO)], terminal=[Other.TWO]
    )

    class Columned(
        Resource[KubeModel, LifecycleStatus],
        group=GROUP,
        lifecycle=lc,
        printer_columns=[PrinterColumn("State", json_path=".status.phase")],
    ):
        """Has its own phase column."""

    columns = crd_for(Columned)["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"] for c in columns] == ["State"]


def test_phase_schema_checks_its_input() -> None:
    with pytest.raises(ValueError, match="at least one phase"):
        PhaseSchema(phases=())
    with pytest.raises(ValueError, match="unique"):
        PhaseSchema(phases=("A", "A"))
