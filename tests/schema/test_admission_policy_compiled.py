"""What the engine works out once per policy and binding gives the same verdicts as
reading them on every request: compiled bindings, parsed selectors, the activation names
an expression reads and what it reads of them (the values cut down to that), one
activation per evaluation rather than per expression."""

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
    matching,
    projection,
)
from kubewerk.schema.admission_policy.cel_env import Compiled, compile_expression
from kubewerk.schema.admission_policy.matching import Match, compile_criteria
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


def _compiled(expression: str) -> Compiled:
    out = compile_expression(
        expression, returns=None, params=True, authorizer=True, declared_variables=frozenset("a")
    )
    assert out.ok, out.detail
    return out


TRIPLE_QUOTE_COMMENT = "// '''\nobject.spec.replicas < 3 && '''x''' != ''"


def test_reads_are_the_checked_expressions_names() -> None:
    assert _compiled("object.spec.x == oldObject.spec.x").reads == {"object", "oldObject"}
    # a leading dot names the root scope's variable
    assert _compiled(".object.spec").reads == {"object"}
    # names in string literals and comments are not reads
    strings = "'request' + \"params\" + r'authorizer' + '''namespaceObject''' // object"
    assert _compiled(strings).reads == frozenset()
    assert _compiled("{'objects': 1, 'myobject': 2}.myobject > 1").reads == frozenset()
    assert _compiled("variables.a && request.userInfo.username == 'x'").reads == {
        "variables",
        "request",
    }
    # a comment holding ''' does not hide what follows it (a scan of the text that
    # skipped string literals took it for the start of one, up to the next ''')
    assert _compiled(TRIPLE_QUOTE_COMMENT).reads == {"object"}


def test_a_comment_with_triple_quotes_hides_no_read() -> None:
    pol = compile_policy(policy(validations=[{"expression": TRIPLE_QUOTE_COMMENT}]))
    got = admit([pol], [binding()], req(deploy(2)))
    assert got.allowed, got.error
    assert [d.evaluation for d in got.outcomes[0].decisions] == ["admit"]


@pytest.mark.parametrize(
    ("expression", "selects"),
    [
        (
            "has(object.spec.version) && object.spec.replicas <= 3",
            {"object": {"spec": {"version": None, "replicas": None}}},
        ),
        (
            "'app' in object.metadata.labels && object.metadata.name != ''",
            {"object": {"metadata": {"labels": None, "name": None}}},
        ),
        # a shorter path absorbs a longer one
        ("object.spec.a.b == 1 && size(object.spec) > 0", {"object": {"spec": None}}),
        # a method or macro on a selected value uses that value whole
        ("object.spec.all(k, k != '')", {"object": {"spec": None}}),
        ("object.metadata.labels.size() > 0", {"object": {"metadata": {"labels": None}}}),
        # index, optional selection, a bare use: the whole variable
        ("object['spec'] == {}", {"object": None}),
        ("object.?spec.x.orValue(1) == 1", {"object": None}),
        ("cel.bind(o, object, o.spec.x == 1)", {"object": None}),
        # a comprehension variable named like one counts as a read of it, whole
        ("[1].all(object, object > 0)", {"object": None}),
        (".object.spec.x == 1", {"object": {"spec": {"x": None}}}),
        (
            "params.data.max == '3' && namespaceObject.metadata.labels.env == 'x'",
            {
                "params": {"data": {"max": None}},
                "namespaceObject": {"metadata": {"labels": {"env": None}}},
            },
        ),
        ("request.userInfo.username == ''", {"request": {"userInfo": {"username": None}}}),
    ],
)
def test_what_an_expression_selects(expression: str, selects: dict[str, Any]) -> None:
    compiled = _compiled(expression)
    assert dict(compiled.selects) == selects
    assert compiled.reads == set(selects)


def test_project_keeps_what_is_selected_and_present() -> None:
    obj = {"spec": {"a": 1, "b": {"c": 2, "d": 3}}, "metadata": {"name": "x"}, "status": {}}
    assert projection.project(obj, None) is obj
    assert projection.project(obj, {"spec": {"b": {"c": None}, "z": None}}) == {
        "spec": {"b": {"c": 2}}
    }
    # a value that is not a map is kept whole, whatever is selected under it
    assert projection.project({"spec": [1, {"a": 1}]}, {"spec": {"a": None}}) == {
        "spec": [1, {"a": 1}]
    }
    assert projection.project(None, {"spec": None}) is None


def _obj(name: str, **fields: Any) -> dict[str, Any]:
    meta = fields.pop("metadata", {})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, **meta},
        **fields,
    }


# objects with every shape a select chain can meet: absent, null, wrong types, lists
SHAPES: list[dict[str, Any]] = [
    _obj(
        "web",
        metadata={
            "namespace": "default",
            "labels": {"tier": "web", "app": "a"},
            "annotations": {"note": "x"},
            "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {"f:replicas": {}}}}],
        },
        spec={"replicas": 3, "version": "16", "template": {"metadata": {"labels": {"app": "b"}}}},
        status={"ready": 1},
    ),
    _obj("bare"),
    _obj("null", spec=None),
    _obj("text", spec="text"),
    _obj("list", spec=[1, 2]),
    _obj(
        "types", metadata={"labels": {}}, spec={"replicas": "3", "template": None, "version": 16.5}
    ),
    _obj(
        "big",
        metadata={"labels": None},
        spec={"replicas": 2**63 - 1, "template": {"metadata": []}, "version": None},
    ),
]
EXPRESSIONS = [
    "has(object.spec.replicas)",
    "has(object.spec.version) && object.spec.replicas <= 3",
    "has(object.metadata.labels) && 'app' in object.metadata.labels",
    "object.metadata.labels.map(k, k) == ['tier', 'app']",
    "size(object.spec) > 1",
    "object.spec == {'replicas': 3}",
    "object.spec.template.metadata.labels.app == 'b'",
    "has(object.spec.template.metadata.labels)",
    "object.?spec.replicas.orValue(0) < 5",
    "object['spec']['replicas'] < 5",
    "[1].all(object, object > 0) && object.spec.replicas > 0",
    "cel.bind(s, object.spec, s.replicas > 1)",
    ".object.spec.replicas > 1",
    "object.spec.replicas.foo == 1",
    "has(object.spec.replicas.foo)",
    "object.metadata.managedFields.size() >= 0",
    "string(object.spec.replicas) == '3'",
    "type(object.spec) == map",
    "object.spec.exists(k, k == 'replicas')",
    "oldObject == null || oldObject.spec.replicas <= object.spec.replicas",
    "object.status.ready == 1 || object.metadata.annotations.note == 'x'",
    "object.spec.version == '16'",
]


@pytest.mark.parametrize("shape", range(len(SHAPES)), ids=[s["metadata"]["name"] for s in SHAPES])
@pytest.mark.parametrize("failure_policy", ["Fail", "Ignore"])
def test_projected_values_decide_as_whole_ones(shape: int, failure_policy: str) -> None:
    obj = SHAPES[shape]
    request = req(obj)
    match = Match(request.resource, request.kind)
    # each expression alone, over its own projection (the whole object for some)
    selective = []
    for e in EXPRESSIONS:
        alone = compile_policy(
            policy(validations=[{"expression": e}], failurePolicy=failure_policy)
        )
        if alone.projections:
            selective.append(e)
        cut = engine.validate(alone, request, match, None, json_values=True)
        assert cut == engine.validate(alone, request, match, None)
        # and as with every variable handed over whole, whatever the expression reads
        everything = {"object": request.object, "oldObject": request.old_object}
        full = engine._Activation(everything, alone)
        assert cut == engine._evaluate(alone, full, failure_policy == "Fail")
    assert len(selective) > len(EXPRESSIONS) // 2
    # the selective ones together, with a variable, a match condition, message
    # expressions and an audit annotation; for an update too
    validations = [
        {"expression": e, "messageExpression": "'no: ' + object.metadata.name"} for e in selective
    ]
    pol = compile_policy(
        policy(
            validations=[*validations, {"expression": "variables.s.replicas < 4"}],
            variables=[{"name": "s", "expression": "object.spec"}],
            matchConditions=[{"name": "m", "expression": "object.metadata.name != 'skip'"}],
            auditAnnotations=[{"key": "k", "valueExpression": "string(object.spec.replicas)"}],
            failurePolicy=failure_policy,
        )
    )
    assert pol.projections  # there is something to cut
    for request in (req(obj), req(obj, "UPDATE", old=SHAPES[0]), req(obj, "UPDATE", old=obj)):
        match = matches(pol.criteria, request)
        assert match is not None
        whole = engine.validate(pol, request, match, None)
        cut = engine.validate(pol, request, match, None, json_values=True)
        assert cut == whole


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_engine_table_decides_the_same_with_json_values(case: Any) -> None:
    _, policies, bindings, params, request, _ = case
    compiled = [compile_policy(p) for p in policies]
    whole = admit(compiled, bindings, request, params=ParamStore(params))
    cut = admit(compiled, bindings, request, params=ParamStore(params), json_values=True)
    assert cut.outcomes == whole.outcomes
    assert cut.warnings == whole.warnings
    assert cut.audit_annotations == whole.audit_annotations
    assert (cut.error is None) is (whole.error is None)
    if cut.error is not None and whole.error is not None:
        assert cut.error.to_status() == whole.error.to_status()


def test_json_values_hand_cel_only_what_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[dict[str, Any]] = []
    real, real_once = engine.activation, engine.evaluate_once

    def recording(key: tuple[bool, bool, bool], data: dict[str, Any]) -> Any:
        built.append(data)
        return real(key, data)

    def recording_once(program: Any, data: dict[str, Any]) -> Any:
        built.append(data)
        return real_once(program, data)

    monkeypatch.setattr(engine, "activation", recording)
    monkeypatch.setattr(engine, "evaluate_once", recording_once)
    pol = compile_policy(
        policy(
            validations=[
                {"expression": "has(object.spec.version)"},
                {"expression": "object.spec.replicas <= 3"},
                {"expression": "'app' in object.metadata.labels"},
            ]
        )
    )
    # what cel-cpp is handed (these validations are otherwise decided by the Python
    # shortcut without calling cel-cpp at all: tests/schema/test_admission_policy_shortcut.py)
    pol.shortcut = None
    request = req(SHAPES[0])
    assert admit([pol], [binding()], request, json_values=True).allowed
    assert built[-1] == {
        "object": {
            "spec": {"version": "16", "replicas": 3},
            "metadata": {"labels": {"tier": "web", "app": "a"}},
        }
    }
    assert admit([pol], [binding()], request).allowed
    assert built[-1] == {"object": SHAPES[0]}


def test_values_cel_cannot_convert_fail_unless_said_to_be_json() -> None:
    # beyond uint64 CEL refuses to convert the object, even in a part no expression
    # reads: without json_values the engine hands the object over whole, as before
    obj = dict(SHAPES[0], status={"huge": 2**64})
    pol = compile_policy(policy(validations=[{"expression": "object.spec.replicas <= 3"}]))
    verdict = admit([pol], [binding()], req(obj))
    assert not verdict.allowed
    assert "out of range" in verdict.outcomes[0].decisions[0].message


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


_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["*"]},
    {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*/*"]},
    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["namespaces"]},
    {"apiGroups": ["apps"], "apiVersions": ["v1", "v2"], "operations": ["UPDATE", "CREATE"]},
    {
        "apiGroups": ["apps"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["deployments/scale", "deployments/*", "*/status"],
        "scope": "Namespaced",
    },
    {
        "apiGroups": ["*"],
        "apiVersions": ["*"],
        "operations": ["*"],
        "resources": ["*"],
        "scope": "Cluster",
    },
    {
        "apiGroups": ["*"],
        "apiVersions": ["*"],
        "operations": ["*"],
        "resources": ["deployments"],
        "resourceNames": ["web", "db"],
        "scope": "*",
    },
    {"apiGroups": ["apps"], "apiVersions": [], "operations": ["CREATE"], "resources": ["*"]},
]


@pytest.mark.parametrize("rule", _RULES)
def test_compiled_rules_match_as_the_mapping(rule: dict[str, Any]) -> None:
    compiled = matching._compile_rule(rule)
    assert isinstance(compiled, matching._Rule)
    names = rule.get("resourceNames") or []
    for op in ("CREATE", "UPDATE", "DELETE"):
        for obj, sub in (
            (deploy(), ""),
            (deploy(), "scale"),
            (deploy(), "status"),
            (deploy(name="db", ns=""), ""),
            ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web"}}, ""),
            (
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "c", "namespace": "x"},
                },
                "",
            ),
        ):
            request = req(obj, op, old=obj, sub_resource=sub)
            for resource in (request.resource, ("apps", "v2", "deployments"), ("", "v1", "pods")):
                want = matching.rule_matches(rule, request, resource) and (
                    not names or request.name in names
                )
                assert matching._compiled_rule_matches(compiled, request, resource) is want


@pytest.mark.parametrize(
    "rule",
    [
        {"apiGroups": "apps", "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["*"]},
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": "CREATE", "resources": ["*"]},
        {"apiGroups": ["apps", 1], "apiVersions": ["v1"], "operations": ["*"], "resources": ["*"]},
        {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": [None, "*"]},
        {
            "apiGroups": ["*"],
            "apiVersions": ["*"],
            "operations": ["*"],
            "resources": ["*"],
            "scope": 3,
        },
    ],
)
def test_rules_of_other_shapes_are_matched_as_mappings(rule: dict[str, Any]) -> None:
    # a string where kube has a list matches by substring, as the mapping does
    assert matching._compile_rule(rule) is rule
    request = req(deploy())
    criteria = {"resourceRules": [rule, "not a rule"]}
    got = matches(compile_criteria(criteria), request)
    want = matching.rule_matches(rule, request, request.resource)
    assert (got is not None) is want


def test_a_sole_batch_converts_once_and_decides_as_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []
    real, real_once = engine.activation, engine.evaluate_once

    def counting(key: tuple[bool, bool, bool], data: dict[str, Any]) -> Any:
        calls.append("activation")
        return real(key, data)

    def counting_once(program: Any, data: dict[str, Any]) -> Any:
        calls.append("once")
        return real_once(program, data)

    monkeypatch.setattr(engine, "activation", counting)
    monkeypatch.setattr(engine, "evaluate_once", counting_once)
    validations = [
        {"expression": "object.spec.replicas > 1"},
        {
            "expression": "object.spec.replicas < 5",
            "messageExpression": "'too many: ' + string(object.spec.replicas)",
        },
    ]
    pol = compile_policy(policy(validations=validations))
    # all true: the list alone, converted for that one evaluation
    assert admit([pol], [binding()], req(deploy(3))).allowed
    assert calls == ["once"]
    # a denial: its message expression then needs the data again, in an activation
    calls.clear()
    denied = admit([pol], [binding()], req(deploy(7)))
    assert calls == ["once", "activation"]
    assert denied.outcomes == admit([_unbatched(pol)], [binding()], req(deploy(7))).outcomes
    assert denied.outcomes[0].decisions[1].message == "too many: 7"
