"""What the engine works out once per policy and binding gives the same verdicts as
reading them on every request: compiled bindings, parsed selectors, the activation names
an expression reads, one activation per evaluation rather than per expression."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kubewerk.schema.admission_policy import (
    ParamStore,
    admit,
    compile_binding,
    compile_policy,
    engine,
    matches,
)
from kubewerk.schema.admission_policy.cel_env import top_level_refs
from kubewerk.schema.admission_policy.matching import compile_criteria
from tests.schema.test_admission_policy import CASES, binding, deploy, policy, req


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_compiled_bindings_decide_as_their_objects(case: Any) -> None:
    _, policies, bindings, params, request, _ = case
    compiled = [compile_policy(p) for p in policies]
    plain = admit(compiled, bindings, request, params=ParamStore(params))
    once = admit(
        compiled, [compile_binding(b) for b in bindings], request, params=ParamStore(params)
    )
    assert once.allowed is plain.allowed
    if plain.error is not None:
        assert once.error is not None
        assert once.error.to_status() == plain.error.to_status()
    assert once.warnings == plain.warnings
    assert once.audit_annotations == plain.audit_annotations
    assert once.outcomes == plain.outcomes


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        (None, {}, True),
        ({}, {"a": "b"}, True),
        ({"matchLabels": {}}, {}, True),
        ({"matchLabels": {"env": "prod"}}, {"env": "prod"}, True),
        ({"matchLabels": {"env": "prod"}}, {"env": "dev"}, False),
        ({"matchExpressions": [{"key": "env", "operator": "Exists"}]}, {"env": ""}, True),
        # unparsable: selects nothing (as an invalid stored selector does)
        ({"matchExpressions": [{"key": "env", "operator": "Bogus"}]}, {"env": "x"}, False),
        ({"matchLabels": {"bad key!": "x"}}, {"bad key!": "x"}, False),
    ],
)
def test_compiled_object_selector_selects_as_the_dict(
    selector: Any, labels: dict[str, str], selected: bool
) -> None:
    criteria = {"objectSelector": selector} if selector is not None else {}
    request = req(deploy(labels=labels))
    by_dict = matches(criteria, request, binding=True)
    compiled = compile_criteria(criteria)
    by_compiled = matches(compiled, request, binding=True)
    assert (by_dict is not None) is selected
    assert by_compiled == by_dict


def test_top_level_refs() -> None:
    assert top_level_refs("object.spec.x == oldObject.spec.x") == {"object", "oldObject"}
    # a leading dot names the root scope's variable
    assert top_level_refs(".object.spec") == {"object"}
    # names in string literals are not reads
    assert top_level_refs("'request' + \"params\" + r'authorizer' + '''namespaceObject'''") == (
        frozenset()
    )
    assert top_level_refs("objects.x + requests + myobject") == frozenset()
    assert top_level_refs("variables.a && request.userInfo.username == 'x'") == {
        "variables",
        "request",
    }


def test_policy_reads_only_what_its_expressions_name() -> None:
    pol = compile_policy(
        policy(
            validations=[
                {
                    "expression": "object.spec.replicas < 5",
                    "messageExpression": "'too many in ' + request.namespace",
                }
            ]
        )
    )
    assert pol.reads == {"object", "request"}


def test_one_activation_per_set_of_variable_values(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[dict[str, Any]] = []
    real = engine.activation

    def counting(key: tuple[bool, bool, bool], data: dict[str, Any]) -> Any:
        built.append(data)
        return real(key, data)

    monkeypatch.setattr(engine, "activation", counting)
    pol = compile_policy(
        policy(
            validations=[
                {"expression": "variables.r < 5"},
                {"expression": "variables.r >= 0"},
                {"expression": "has(object.spec)"},
                {"expression": "variables.r != 7"},
            ],
            variables=[{"name": "r", "expression": "object.spec.replicas"}],
        )
    )
    assert admit([pol], [binding()], req(deploy())).allowed
    # the variable's own evaluation (no variables yet), then every expression reading
    # `r`, and the one reading none: two conversions of the object, not five
    assert [sorted(d.get("variables", {})) for d in built] == [[], ["r"]]


def _unbatched(pol: Any) -> Any:
    return dataclasses.replace(pol, batch=None)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_batched_validations_decide_as_one_by_one(case: Any) -> None:
    _, policies, bindings, params, request, _ = case
    compiled = [compile_policy(p) for p in policies]
    batched = admit(compiled, bindings, request, params=ParamStore(params))
    single = admit([_unbatched(p) for p in compiled], bindings, request, params=ParamStore(params))
    assert batched.outcomes == single.outcomes
    assert batched.warnings == single.warnings
    assert batched.audit_annotations == single.audit_annotations
    assert (batched.error is None) is (single.error is None)
    if batched.error is not None and single.error is not None:
        assert batched.error.to_status() == single.error.to_status()


def test_batch_with_an_erring_or_non_bool_member_falls_back() -> None:
    pol = compile_policy(
        policy(
            validations=[
                {"expression": "object.spec.replicas > 1"},
                {"expression": "object.spec.missing == 1"},  # no such key: errs
                {"expression": "object.spec.replicas > 5", "message": "too few"},
                {"expression": "object.metadata.name"},  # dyn, a string at run time
                {"expression": "// a comment\nobject.spec.replicas < 9 // and one"},
            ],
            failurePolicy="Fail",
        )
    )
    assert pol.batch is not None and pol.batch[1] == (0, 1, 2, 3, 4)
    got = admit([pol], [binding()], req(deploy()))
    want = admit([_unbatched(pol)], [binding()], req(deploy()))
    assert got.outcomes == want.outcomes
    decisions = got.outcomes[0].decisions
    assert [d.evaluation for d in decisions] == ["admit", "error", "deny", "deny", "admit"]
    assert decisions[1].message == (
        "expression 'object.spec.missing == 1' resulted in error: no such key: missing"
    )
    # without the erring member, the list is evaluated once and gives the same decisions
    ok = compile_policy(
        policy(
            validations=[
                {"expression": "object.spec.replicas > 1"},
                {"expression": "object.spec.replicas > 5", "message": "too few"},
                {"expression": "// a comment\nobject.spec.replicas < 9 // and one"},
            ]
        )
    )
    out = admit([ok], [binding()], req(deploy())).outcomes[0].decisions
    assert [(d.evaluation, d.message) for d in out] == [
        ("admit", ""),
        ("deny", "too few"),
        ("admit", ""),
    ]


def test_no_batch_for_expressions_reading_variables_or_the_authorizer() -> None:
    pol = compile_policy(
        policy(
            validations=[
                {"expression": "variables.r > 1"},
                {"expression": "authorizer.requestResource.check('get').allowed()"},
                {"expression": "object.spec.replicas > 1"},
            ],
            variables=[{"name": "r", "expression": "object.spec.replicas"}],
        )
    )
    assert pol.batch is None
