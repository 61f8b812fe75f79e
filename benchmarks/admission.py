"""Admission benchmark: creates through the embedded server with and without admission.

Starts, each in its own process, the embedded API server (memory store, the stack
``kubewerk up`` serves) and a ``kubewerk.webhook`` validating webhook over TLS on
loopback (a CA and serving certificate from ``kubewerk.webhook.certs``). Then, in one
run, alternating rounds (the order rotated each round) of ``wrk`` POSTing ConfigMaps
with ``generateName`` in one namespace:

- (a) no admission configuration stored (the synchronous write path);
- (b) one ValidatingAdmissionPolicy with three validations bound to the namespace;
- (c) one ValidatingWebhookConfiguration calling the webhook over TLS with its caBundle.

Each mode is set up through the API before its round and removed after it. Printed:
each mode's creates/s (median over rounds) and its ratio to (a), and the API server
process's CPU time per create (user + system from /proc/PID/stat around each wrk run,
divided by the creates wrk counted: steadier than rates on a shared machine). Target
(issue 14): the policy costs <= 20% of a create, i.e. (b)/(a) >= 0.8.

    .venv/bin/python benchmarks/admission.py [-c 32] [-d 5] [-r 3] [--profile FILE]

``--in-process`` measures the same two first modes without HTTP, wrk or other
processes: one ``ApiServer`` called through ASGI, alternating rounds of ``-n`` creates
(after a warm-up) without admission and with the policy, and prints the µs per create
of each (wall clock, and the process's CPU time, median and best round) and the
policy's share; ``--profile FILE`` there dumps cProfile stats of one more round with
the policy into FILE and of one without into FILE.none.

    .venv/bin/python benchmarks/admission.py --in-process [-n 2000] [-r 5] [--profile FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

import apiserver  # benchmarks/apiserver.py: the API server process and its start

NS = "bench"
PATH = f"/apis/demo.kubewerk.dev/v1/namespaces/{NS}/databases"
BODY = json.dumps(
    {
        "apiVersion": "demo.kubewerk.dev/v1",
        "kind": "Database",
        "metadata": {"generateName": "db-", "labels": {"app": "bench", "tier": "web"}},
        "spec": {"engine": "postgres", "version": "16", "replicas": 2},
    }
).encode()
BAD = dict(json.loads(BODY), spec={"engine": "postgres", "replicas": 5})
AR = "/apis/admissionregistration.k8s.io/v1"
POLICY = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "bench-policy"},
    "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": ["demo.kubewerk.dev"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["databases"],
                }
            ]
        },
        "validations": [
            {"expression": "has(object.spec.version)", "message": "spec.version is required"},
            {"expression": "object.spec.replicas <= 3", "message": "at most 3 replicas"},
            {
                "expression": "has(object.metadata.labels) && 'app' in object.metadata.labels",
                "messageExpression": "'database ' + object.metadata.name + ' has no app label'",
            },
        ],
    },
}
BINDING = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicyBinding",
    "metadata": {"name": "bench-binding"},
    "spec": {
        "policyName": "bench-policy",
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"bench": "yes"}}},
    },
}


def serve_webhook_raw(q: Any, cert: str, key: str) -> None:
    """A validating webhook: the kubewerk.webhook server with a typed Database handler."""
    import asyncio

    from kubewerk.model import KubeModel, Resource
    from kubewerk.webhook import AdmissionRequest, Allowed, Denied, WebhookApp, WebhookServer

    class Spec(KubeModel):
        engine: str
        version: str | None = None
        replicas: int | None = None
        storage: str | None = None

    class Database(
        Resource[Spec, dict[str, Any]], group="demo.kubewerk.dev", version="v1", kind="Database"
    ):
        """The demo Database as the webhook sees it."""

    app = WebhookApp()

    @app.validating(Database, "/validate")
    async def check(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed | Denied:
        if (db.spec.replicas or 1) > 3:
            return Denied("at most 3 replicas")
        return Allowed()

    async def main() -> None:
        server = WebhookServer(app, host="127.0.0.1", port=0, cert_file=cert, key_file=key)
        async with server:
            q.put(server.port)
            await asyncio.Event().wait()

    asyncio.run(main())


def call(base: str, method: str, path: str, body: Any = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        base + path, data, {"Content-Type": "application/json"}, method=method
    )
    with urllib.request.urlopen(req) as answer:
        return json.loads(answer.read())


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process ``pid`` has used so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    # after the command: state is field 3, utime 14 and stime 15 (1-based, man 5 proc)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(url: str, connections: int, duration: int) -> tuple[float, int]:
    """(creates/s, creates answered) from one wrk thread; fails on any non-2xx answer."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write('wrk.method = "POST"\n')
        script.write(f"wrk.body = [==[{BODY.decode()}]==]\n")
        script.write('wrk.headers["Content-Type"] = "application/json"\n')
    try:
        out = subprocess.run(
            ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "-s", script.name, url],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(script.name)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        raise RuntimeError(f"{bad.group(1)} non-2xx answers from {url}:\n{out}")
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    count = re.search(r"(\d+) requests in", out)
    if match is None or count is None:
        raise RuntimeError(out)
    return float(match.group(1)), int(count.group(1))


async def asgi(app: Any, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
    """One request straight into the ASGI app ``app``: (status, response body); ``body``
    is sent as is when bytes, else as JSON."""
    from request_profile import call  # the sibling benchmark's ASGI call

    raw = body if isinstance(body, bytes) else (json.dumps(body).encode() if body else b"")
    return await call(app, method, path, raw)


async def in_process(n: int, rounds: int, profile: str | None) -> int:
    """Alternating rounds of ``n`` creates through the ASGI app without admission and
    with the bound policy; prints µs per create and the policy's share of a create."""
    from kubewerk.apiserver.app import ApiServer
    from kubewerk.apiserver.storage import open_store

    app = ApiServer(open_store("memory"))
    await app.start()
    try:
        return await _in_process(app, n, rounds, profile)
    finally:
        await app.stop()


async def _in_process(app: Any, n: int, rounds: int, profile: str | None) -> int:
    import asyncio
    import cProfile
    import gc

    import yaml

    from kubewerk.cli import demo_data

    with open(os.path.join(os.path.dirname(demo_data.__file__), "crd.yaml")) as f:
        crd = yaml.safe_load(f)
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    status, _ = await asgi(app, "POST", crds, crd)
    assert status == 201, status
    for _ in range(500):
        _, raw = await asgi(app, "GET", f"{crds}/{crd['metadata']['name']}")
        conds = json.loads(raw).get("status", {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
            break
        await asyncio.sleep(0.01)
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    ns["metadata"]["labels"] = {"bench": "yes"}
    status, _ = await asgi(app, "POST", "/api/v1/namespaces", ns)
    assert status == 201, status

    cpu: dict[bool, list[float]] = {False: [], True: []}

    async def creates(count: int, on: bool | None = None) -> float:
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(count):
            status, raw = await asgi(app, "POST", PATH, BODY)
            if status != 201:
                raise RuntimeError(f"create answered {status}: {raw[:300]!r}")
        if on is not None:  # CPU time too: less moved by other processes on the machine
            cpu[on].append((time.process_time() - start_cpu) / count * 1e6)
        return (time.perf_counter() - start) / count * 1e6

    async def policy(on: bool) -> None:
        if on:
            for path, obj in (
                (f"{AR}/validatingadmissionpolicies", POLICY),
                (f"{AR}/validatingadmissionpolicybindings", BINDING),
            ):
                status, raw = await asgi(app, "POST", path, obj)
                assert status == 201, raw
            status, _ = await asgi(app, "POST", PATH, BAD)
            assert status == 422, status
        else:
            for path in (
                f"{AR}/validatingadmissionpolicybindings/bench-binding",
                f"{AR}/validatingadmissionpolicies/bench-policy",
            ):
                status, raw = await asgi(app, "DELETE", path)
                assert status == 200, raw
        await asgi(app, "DELETE", PATH)  # the store the same size for every round

    await creates(200)  # warm-up
    await policy(True)
    await creates(200)
    await policy(False)
    per: dict[bool, list[float]] = {False: [], True: []}
    for r in range(rounds):
        for on in (False, True) if r % 2 == 0 else (True, False):
            if on:
                await policy(True)
            per[on].append(await creates(n, on))
            if on:
                await policy(False)
            else:
                await asgi(app, "DELETE", PATH)
    off, on_ = statistics.median(per[False]), statistics.median(per[True])
    print(f"in-process creates, {rounds} rounds of {n} (median µs per create):")
    for label, on in (("(a) no admission", False), ("(b) one VAP, 3 validations", True)):
        runs = " ".join(f"{x:.0f}" for x in per[on])
        print(f"  {label:30s} {statistics.median(per[on]):7.1f}   [{runs}]")
    print("  CPU time per create (process_time), median and best round:")
    for label, on in (("(a) no admission", False), ("(b) one VAP, 3 validations", True)):
        print(f"    {label:28s} {statistics.median(cpu[on]):7.1f}  best {min(cpu[on]):7.1f}")
    cpu_share = statistics.median(cpu[True]) / statistics.median(cpu[False]) - 1
    best_share = min(cpu[True]) / min(cpu[False]) - 1
    print(f"  policy's CPU: {cpu_share:.0%} (median), {best_share:.0%} (best rounds)")
    share = on_ / off - 1
    verdict = "met" if share <= 0.20 else "NOT met"
    print(f"VAP cost: {share:.0%} of a create (target <= 20%: {verdict})")
    if profile:
        for on, path in ((False, profile + ".none"), (True, profile)):
            if on:
                await policy(True)
            prof = cProfile.Profile()
            prof.enable()
            await creates(n)
            prof.disable()
            prof.dump_stats(path)
            print(f"cProfile of {n} creates {'with' if on else 'without'} the policy: {path}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-c", "--connections", type=int, default=32)
    parser.add_argument("-d", "--duration", type=int, default=5)
    parser.add_argument("-r", "--rounds", type=int, default=3)
    parser.add_argument("--profile", help="cProfile the API server into FILE")
    parser.add_argument(
        "--in-process", action="store_true", help="no HTTP: ASGI calls into one ApiServer"
    )
    parser.add_argument("-n", type=int, default=2000, help="creates per in-process round")
    args = parser.parse_args()
    if args.in_process:
        import asyncio

        return asyncio.run(in_process(args.n, args.rounds, args.profile))

    from kubewerk.webhook.certs import make_certificates, write_certificates

    tmp = tempfile.mkdtemp(prefix="kubewerk-bench-")
    certs = make_certificates("hooks", "default", days=1, extra_names=["127.0.0.1"])
    files = write_certificates(certs, os.path.join(tmp, "certs"))
    # the API server as ``kubewerk up --store memory`` runs it (the sibling benchmark's)
    api_proc, api_port = apiserver.start(apiserver.serve_api, args.profile)
    hook_proc, hook_port = apiserver.start(serve_webhook_raw, str(files["cert"]), str(files["key"]))
    base = f"http://127.0.0.1:{api_port}"
    webhooks = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "bench-webhook"},
        "webhooks": [
            {
                "name": "check.bench.kubewerk.dev",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{hook_port}/validate",
                    "caBundle": certs.ca_bundle,
                },
                "rules": [
                    {
                        "apiGroups": ["demo.kubewerk.dev"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["databases"],
                    }
                ],
                "namespaceSelector": {"matchLabels": {"bench": "yes"}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
            }
        ],
    }
    try:
        import yaml

        from kubewerk.cli import demo_data

        crd_file = os.path.join(os.path.dirname(demo_data.__file__), "crd.yaml")
        with open(crd_file) as f:
            call(
                base,
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                yaml.safe_load(f),
            )
        time.sleep(1.0)  # established
        ns = {"apiVersion": "v1", "kind": "Namespace"}
        call(
            base,
            "POST",
            "/api/v1/namespaces",
            {**ns, "metadata": {"name": NS, "labels": {"bench": "yes"}}},
        )

        def setup(mode: str) -> None:
            if mode == "policy":
                call(base, "POST", f"{AR}/validatingadmissionpolicies", POLICY)
                call(base, "POST", f"{AR}/validatingadmissionpolicybindings", BINDING)
            elif mode == "webhook":
                call(base, "POST", f"{AR}/validatingwebhookconfigurations", webhooks)
            # the chain must answer (and deny) as configured before measuring
            try:
                call(base, "POST", PATH, BAD)
                denied = False
            except urllib.error.HTTPError:
                denied = True
            if denied != (mode != "none"):
                raise RuntimeError(f"{mode}: the check request was not answered as expected")

        def teardown(mode: str) -> None:
            if mode == "policy":
                call(base, "DELETE", f"{AR}/validatingadmissionpolicybindings/bench-binding")
                call(base, "DELETE", f"{AR}/validatingadmissionpolicies/bench-policy")
            elif mode == "webhook":
                call(base, "DELETE", f"{AR}/validatingwebhookconfigurations/bench-webhook")
            call(base, "DELETE", PATH)  # keep the store the same size for every round

        modes = ["none", "policy", "webhook"]
        rates: dict[str, list[float]] = {m: [] for m in modes}
        # the API server process's CPU time per create (µs): steadier than rates on a
        # machine shared with other work
        cpu: dict[str, list[float]] = {m: [] for m in modes}
        assert api_proc.pid is not None
        for r in range(args.rounds):
            order = modes[r % 3 :] + modes[: r % 3]
            for mode in order:
                setup(mode)
                before = cpu_seconds(api_proc.pid)
                rate, count = wrk(base + PATH, args.connections, args.duration)
                cpu[mode].append((cpu_seconds(api_proc.pid) - before) / max(count, 1) * 1e6)
                rates[mode].append(rate)
                teardown(mode)
                time.sleep(0.5)
        none = statistics.median(rates["none"])
        print(f"creates/s, {args.connections} connections, {args.rounds} rounds (median):")
        labels = {
            "none": "(a) no admission",
            "policy": "(b) one VAP, 3 validations",
            "webhook": "(c) one validating webhook, TLS",
        }
        for mode in modes:
            rate = statistics.median(rates[mode])
            runs = " ".join(f"{x:.0f}" for x in rates[mode])
            print(f"  {labels[mode]:34s} {rate:8.0f}/s  {rate / none:5.2f}x (a)   [{runs}]")
        print("API server CPU per create (µs, median and best round):")
        for mode in modes:
            runs = " ".join(f"{x:.0f}" for x in cpu[mode])
            print(
                f"  {labels[mode]:34s} {statistics.median(cpu[mode]):8.1f}  best "
                f"{min(cpu[mode]):7.1f}   [{runs}]"
            )
        cpu_share = statistics.median(cpu["policy"]) / statistics.median(cpu["none"]) - 1
        print(f"policy's server CPU: {cpu_share:.0%} of a create's (median of rounds)")
        policy_cost = 1 - statistics.median(rates["policy"]) / none
        verdict = "met" if policy_cost <= 0.20 else "NOT met"
        print(f"VAP cost: {policy_cost:.0%} of a create (target <= 20%: {verdict})")
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        api_proc.terminate()
        hook_proc.terminate()
        api_proc.join(10)
        hook_proc.join(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
