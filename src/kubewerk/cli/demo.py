"""``kubewerk demo``: start the embedded control plane, apply a CRD and objects, show them."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kubewerk.cli import UsageError

DEMO_KUBECONFIG = Path(".kubewerk") / "demo-kubeconfig"


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "demo",
        help="start the embedded API server, apply a "
        "sample CRD and objects, show them with kubectl",
        description="A two-minute tour: starts the embedded API server, "
        "installs the Database CRD, creates two objects, and shows them "
        "with the real kubectl (or over HTTP when kubectl is missing).",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the server running afterwards (Ctrl-C stops it)"
    )
    parser.add_argument(
        "--port", type=int, default=0, help="port to listen on (default: a free one)"
    )
    parser.add_argument(
        "--kubeconfig",
        default=str(DEMO_KUBECONFIG),
        metavar="PATH",
        help=f"where to write the kubeconfig (default: {DEMO_KUBECONFIG})",
    )
    parser.set_defaults(func=run)


def _data(name: str) -> str:
    return resources.files("kubewerk.cli.demo_data").joinpath(name).read_text()


class _Http:
    """Plain-HTTP fallback for machines without kubectl."""

    def __init__(self, base: str) -> None:
        self.base = base

    def call(
        self, method: str, path: str, body: Any = None, ctype: str = "application/json"
    ) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self.base + path, data=data, method=method, headers={"Content-Type": ctype}
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return json.loads(exc.read())


def run(args: argparse.Namespace) -> int:
    from kubewerk.apiserver.server import EmbeddedServer

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, not {args.port}")
    started = time.perf_counter()
    try:
        server = EmbeddedServer("memory", port=args.port).start_in_thread()
    except OSError as exc:
        print(
            f"kubewerk: error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}",
            file=sys.stderr,
        )
        return 2  # the port asked for is taken: a usage error, as for up and dashboard
    try:
        try:
            path = server.write_kubeconfig(args.kubeconfig)
        except OSError as exc:
            raise UsageError(
                f"--kubeconfig {args.kubeconfig}: cannot write it: {exc.strerror or exc}"
            ) from None
        print(
            f"==> embedded API server on {server.url} (ready in "
            f"{(time.perf_counter() - started) * 1000:.0f} ms)"
        )
        print(f"==> kubeconfig: {path}  (export KUBECONFIG={path.resolve()})")
        kubectl = shutil.which("kubectl")
        if kubectl:
            _with_kubectl(kubectl, path)
        else:
            print("==> kubectl not found: showing the same steps over plain HTTP")
            _with_http(_Http(server.url))
        if args.keep:
            print(f"==> server keeps running on {server.url}; press Ctrl-C to stop", flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
        return 0
    finally:
        server.stop_thread()


def _with_kubectl(kubectl: str, kubeconfig: Path) -> None:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}

    def k(*argv: str, stdin: str | None = None) -> None:
        print(f"\n$ {shlex.join(['kubectl', *argv])}", flush=True)
        proc = subprocess.run(
            [kubectl, *argv], input=stdin, text=True, env=env, capture_output=True, timeout=60
        )
        sys.stdout.write(proc.stdout)
        sys.stdout.write(proc.stderr)
        sys.stdout.flush()

    k("get", "namespaces")
    k("apply", "-f", "-", stdin=_data("crd.yaml"))
    k("wait", "--for=condition=Established", "crd/databases.demo.kubewerk.dev", "--timeout=10s")
    k("apply", "-f", "-", stdin=_data("databases.yaml"))
    k("get", "databases")
    k(
        "patch",
        "database",
        "orders",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"replicas":3,"conditions":[{"type":"Ready","status":"True","reason":"Demo"}]}}',
    )
    k("get", "db", "-l", "team=checkout")
    k("get", "database", "orders", "-o", "yaml")
    print("\n# the schema rejects what a real cluster rejects:")
    bad = _data("databases.yaml").split("---")[0].replace("engine: postgres", "engine: oracle")
    k("apply", "-f", "-", stdin=bad)
    k("explain", "database.spec")


def _with_http(http: _Http) -> None:
    def show(title: str, body: Any) -> None:
        print(f"\n# {title}")
        print(yaml.safe_dump(body, sort_keys=False).rstrip())

    crd = yaml.safe_load(_data("crd.yaml"))
    http.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    for _ in range(200):
        got = http.call(
            "GET",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/databases.demo.kubewerk.dev",
        )
        if any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (got.get("status") or {}).get("conditions") or []
        ):
            break
        time.sleep(0.01)
    for doc in yaml.safe_load_all(_data("databases.yaml")):
        http.call("POST", "/apis/demo.kubewerk.dev/v1/namespaces/default/databases", doc)
    listed = http.call("GET", "/apis/demo.kubewerk.dev/v1/namespaces/default/databases")
    print("\nNAME       ENGINE     REPLICAS")
    for item in listed.get("items", []):
        spec = item.get("spec", {})
        print(
            f"{item['metadata']['name']:<10} "
            f"{spec.get('engine', ''):<10} {spec.get('replicas', '')}"
        )
    show(
        "GET databases/orders",
        http.call("GET", "/apis/demo.kubewerk.dev/v1/namespaces/default/databases/orders"),
    )
