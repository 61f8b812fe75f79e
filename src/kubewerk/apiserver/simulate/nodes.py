"""Fake Nodes: registration, status and Lease heartbeats (the kubelet's side), and the
node lifecycle controller's reaction when a node stops reporting (``fail_node``).

Each node is registered as a kubelet registers itself (labels ``kubernetes.io/hostname``,
``kubernetes.io/os``, ``kubernetes.io/arch``, their ``beta.`` forms, the pool's own;
``spec.podCIDR`` a /24 of ``pod_cidr``), then reports through ``/status``: capacity and
allocatable, the four conditions with the kubelet's reasons and messages, addresses,
``daemonEndpoints`` and ``nodeInfo``. Its Lease in ``kube-node-lease`` is renewed every
``heartbeat_seconds``.

A failed node stops renewing and reporting; ``node_monitor_grace_seconds`` later its
conditions turn ``Unknown`` (``NodeStatusUnknown``, "Kubelet stopped posting node
status."), it is tainted ``node.kubernetes.io/unreachable`` (NoSchedule and NoExecute),
its Pods' ``Ready`` condition turns False, and each Pod that does not tolerate the
NoExecute taint long enough is evicted (``DisruptionTarget``, reason
``DeletionByTaintManager``, then deleted — it stays Terminating until the node comes back,
as on a cluster). ``recover_node`` brings it back. A cordoned node (``spec.unschedulable``)
is tainted ``node.kubernetes.io/unschedulable`` (NoSchedule) as the node lifecycle
controller taints it, and the taint goes with ``uncordon``.
"""

from __future__ import annotations

import hashlib
import ipaddress
from typing import Any

from kubewerk.apiserver.simulate.config import NodePool
from kubewerk.apiserver.simulate.engine import (
    KUBELET,
    Engine,
    changed_copy,
    set_condition,
    split_key,
)
from kubewerk.apiserver.simulate.events import node_ref, object_ref
from kubewerk.apiserver.simulate.fit import tolerates

JSON = dict[str, Any]

UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NODE_PREFIX = "/core/nodes//"
_CONDITIONS = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "KubeletReady", "kubelet is posting ready status"),
)


def _fake_id(name: str, what: str) -> str:
    return hashlib.sha256(f"{what}:{name}".encode()).hexdigest()[:32]


class Nodes:
    """The simulated nodes (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.pools: dict[str, NodePool] = {}
        self.index: dict[str, int] = {}
        """node name -> its number (its pod CIDR and address)"""
        self.failed: set[str] = set()
        self.unknown: set[str] = set()
        """failed nodes the lifecycle controller has marked (grace passed)"""
        self._next_ip: dict[str, int] = {}
        network = ipaddress.ip_network(engine.config.pod_cidr, strict=False)
        self._subnets = network.subnets(new_prefix=24) if network.prefixlen <= 24 else iter(())
        self._cidrs: list[str] = []
        n = 0
        for pool in engine.config.nodes:
            for i in range(pool.count):
                name = f"{pool.prefix}{i}"
                if name in self.pools:
                    raise ValueError(f"two node pools both make a node named {name}")
                self.pools[name] = pool
                self.index[name] = n
                n += 1
        for _ in range(n):
            self._cidrs.append(str(next(self._subnets, network)))
        self.cordoned: dict[str, bool] = {}
        """node -> whether its kubelet last saw it unschedulable"""
        engine.handlers["node"] = self.reconcile
        engine.handlers["node-heartbeat"] = self.heartbeat
        engine.handlers["node-monitor"] = self.monitor

    # -- registration and status ---------------------------------------------------------

    def register_all(self) -> None:
        for name in self.pools:
            self.register(name)
            self.engine.after(self.engine.config.heartbeat_seconds, "node-heartbeat", name)

    def register(self, name: str) -> None:
        engine = self.engine
        pool = self.pools[name]
        key = NODE_PREFIX + name
        if engine.get(key) is None:
            cidr = self._cidrs[self.index[name]]
            labels = {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "type": "kubewerk",
                **pool.labels,
            }
            spec: JSON = {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": f"kubewerk://{name}"}
            if pool.taints:
                spec["taints"] = [dict(t) for t in pool.taints]
            engine.create(
                "",
                "nodes",
                None,
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "labels": labels,
                        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
                    },
                    "spec": spec,
                },
                manager=KUBELET,
            )
        self.post_status(name)
        self.renew_lease(name)

    def host_ip(self, name: str) -> str:
        n = self.index.get(name, 0)
        return f"10.0.{n // 250}.{n % 250 + 2}"

    def pod_ip(self, name: str) -> str:
        """The next address of ``name``'s pod CIDR (cycling through .2-.254)."""
        cidr = ipaddress.ip_network(self._cidrs[self.index[name]])
        n = self._next_ip.get(name, 0)
        self._next_ip[name] = (n + 1) % 253
        return str(cidr.network_address + 2 + n)

    def post_status(self, name: str) -> None:
        """The kubelet's node status: capacity, conditions, addresses, nodeInfo."""
        engine = self.engine
        key = NODE_PREFIX + name
        node = engine.get(key)
        if node is None or name in self.failed:
            return
        pool = self.pools[name]
        now = engine.now()
        capacity = {
            "cpu": pool.cpu,
            "ephemeral-storage": pool.ephemeral_storage,
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": pool.memory,
            "pods": str(pool.pods),
        }
        status = dict(node.get("status") or {})
        conditions = list(status.get("conditions") or [])
        for ctype, reason, message in _CONDITIONS:
            status_value = "True" if ctype == "Ready" else "False"
            conditions = set_condition(conditions, ctype, status_value, reason, message, now)
            conditions = [
                {**c, "lastHeartbeatTime": now} if c.get("type") == ctype else c for c in conditions
            ]
        ordered = [
            next(c for c in conditions if c.get("type") == ctype) for ctype, _, _ in _CONDITIONS
        ]
        status.update(
            {
                "capacity": capacity,
                "allocatable": dict(capacity),
                "conditions": ordered,
                "addresses": [
                    {"type": "InternalIP", "address": self.host_ip(name)},
                    {"type": "Hostname", "address": name},
                ],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {
                    "architecture": "amd64",
                    "bootID": _fake_id(name, "boot"),
                    "containerRuntimeVersion": "kubewerk://simulated",
                    "kernelVersion": "0.0.0-kubewerk",
                    "kubeProxyVersion": engine.config.kubelet_version,
                    "kubeletVersion": engine.config.kubelet_version,
                    "machineID": _fake_id(name, "machine"),
                    "operatingSystem": "linux",
                    "osImage": "kubewerk simulated node",
                    "systemUUID": _fake_id(name, "system"),
                },
            }
        )
        new = changed_copy(node)
        new["status"] = status
        engine.update(key, new, status=True, manager=KUBELET)
        self.unknown.discard(name)

    def renew_lease(self, name: str) -> None:
        engine = self.engine
        rtype = engine.rtype("coordination.k8s.io", "leases")
        node = engine.get(NODE_PREFIX + name)
        if rtype is None or node is None:
            return
        key = rtype.key("kube-node-lease", name)
        renew = engine.clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease = engine.get(key)
        if lease is None:
            engine.create(
                "coordination.k8s.io",
                "leases",
                "kube-node-lease",
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": name,
                        "namespace": "kube-node-lease",
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "Node",
                                "name": name,
                                "uid": node["metadata"]["uid"],
                            }
                        ],
                    },
                    "spec": {
                        "holderIdentity": name,
                        "leaseDurationSeconds": 40,
                        "renewTime": renew,
                    },
                },
                manager=KUBELET,
            )
            return
        new = changed_copy(lease)
        new.setdefault("spec", {})["renewTime"] = renew
        engine.update(key, new, manager=KUBELET)

    def heartbeat(self, name: str) -> None:
        """Timer: renew the Lease; refresh the node status every ``node_status_seconds``."""
        engine = self.engine
        if name not in self.pools or engine.stopped:
            return
        engine.after(engine.config.heartbeat_seconds, "node-heartbeat", name)
        if name in self.failed:
            return
        self.renew_lease(name)
        node = engine.get(NODE_PREFIX + name)
        ready = next(
            (
                c
                for c in ((node or {}).get("status") or {}).get("conditions") or []
                if c.get("type") == "Ready"
            ),
            None,
        )
        from kubewerk.apiserver.simulate.clock import parse_rfc3339

        last = parse_rfc3339(str((ready or {}).get("lastHeartbeatTime") or ""))
        if last is None or (engine.clock.now() - last).total_seconds() >= (
            engine.config.node_status_seconds
        ):
            self.post_status(name)

    def reconcile(self, key: str) -> None:
        """A node changed: a simulated node deleted by a client registers again (as a
        kubelet does); a node cordoned or uncordoned gets or loses the node lifecycle
        controller's ``node.kubernetes.io/unschedulable`` NoSchedule taint."""
        _, name = split_key(key)
        node = self.engine.get(key)
        if node is None:
            if name in self.pools and name not in self.failed:
                self.register(name)
            return
        self._unschedulable_taint(key, node)
        self._schedulable_event(name, node)

    def _schedulable_event(self, name: str, node: JSON) -> None:
        """The kubelet's ``recordNodeSchedulableEvent``: NodeNotSchedulable when it sees its
        node cordoned, NodeSchedulable when uncordoned ("Node N status is now: ...")."""
        if name not in self.pools:
            return
        cordoned = (node.get("spec") or {}).get("unschedulable") is True
        if self.cordoned.get(name, False) == cordoned:
            return
        self.cordoned[name] = cordoned
        reason = "NodeNotSchedulable" if cordoned else "NodeSchedulable"
        self.engine.events.emit(
            node_ref(name),
            "Normal",
            reason,
            f"Node {name} status is now: {reason}",
            "kubelet",
            name,
        )

    def _unschedulable_taint(self, key: str, node: JSON) -> None:
        """``doNoScheduleTaintingPass`` for ``spec.unschedulable``: the taint (with its
        ``timeAdded``) while the node is cordoned, none otherwise."""
        spec = node.get("spec") or {}
        taints = [t for t in spec.get("taints") or [] if isinstance(t, dict)]
        tainted = any(
            t.get("key") == UNSCHEDULABLE and t.get("effect") == "NoSchedule" for t in taints
        )
        cordoned = spec.get("unschedulable") is True
        if cordoned == tainted:
            return
        if cordoned:
            taints.append(
                {"key": UNSCHEDULABLE, "effect": "NoSchedule", "timeAdded": self.engine.now()}
            )
        else:
            taints = [
                t
                for t in taints
                if not (t.get("key") == UNSCHEDULABLE and t.get("effect") == "NoSchedule")
            ]
        new = changed_copy(node)
        if taints:
            new.setdefault("spec", {})["taints"] = taints
        else:
            new.setdefault("spec", {}).pop("taints", None)
        self.engine.update(key, new)

    # -- failure ----------------------------------------------------------------------------

    def fail(self, name: str) -> None:
        if name not in self.pools:
            raise KeyError(f"no simulated node named {name!r}")
        self.failed.add(name)
        self.engine.after(self.engine.config.node_monitor_grace_seconds, "node-monitor", name)

    def recover(self, name: str) -> None:
        if name not in self.pools:
            raise KeyError(f"no simulated node named {name!r}")
        self.failed.discard(name)
        self.unknown.discard(name)
        engine = self.engine
        key = NODE_PREFIX + name
        node = engine.get(key)
        if node is not None:
            taints = [
                t
                for t in (node.get("spec") or {}).get("taints") or []
                if t.get("key") != UNREACHABLE
            ]
            if taints != ((node.get("spec") or {}).get("taints") or []):
                new = changed_copy(node)
                if taints:
                    new["spec"]["taints"] = taints
                else:
                    new["spec"].pop("taints", None)
                engine.update(key, new)
        self.post_status(name)
        self.renew_lease(name)
        for pod_key in sorted(self.pods_on(name)):
            engine.enqueue("pod", pod_key)

    def pods_on(self, name: str) -> list[str]:
        return self.engine.pods_on_node(name)

    def monitor(self, name: str) -> None:
        """The node lifecycle controller, ``node_monitor_grace_seconds`` after a node's
        last report: mark it Unknown, taint it, mark its Pods not ready, evict."""
        engine = self.engine
        if name not in self.failed:
            return
        key = NODE_PREFIX + name
        node = engine.get(key)
        if node is None:
            return
        now = engine.now()
        if name not in self.unknown:
            new = changed_copy(node)
            conditions = []
            for cond in (node.get("status") or {}).get("conditions") or []:
                conditions.append(
                    {
                        **cond,
                        "status": "Unknown",
                        "reason": "NodeStatusUnknown",
                        "message": "Kubelet stopped posting node status.",
                        "lastTransitionTime": now,
                    }
                )
            new.setdefault("status", {})["conditions"] = conditions
            stored = engine.update(key, new, status=True)
            node = engine.get(key) or node
            taints = [
                t
                for t in (node.get("spec") or {}).get("taints") or []
                if t.get("key") != UNREACHABLE
            ]
            taints += [
                {"key": UNREACHABLE, "effect": "NoSchedule", "timeAdded": now},
                {"key": UNREACHABLE, "effect": "NoExecute", "timeAdded": now},
            ]
            new = changed_copy(node)
            new.setdefault("spec", {})["taints"] = taints
            engine.update(key, new)
            if stored is not None:
                self.unknown.add(name)
                # RecordNodeStatusChange
                engine.events.emit(
                    {
                        "kind": "Node",
                        "name": name,
                        "uid": node["metadata"].get("uid", ""),
                        "apiVersion": "v1",
                    },
                    "Normal",
                    "NodeNotReady",
                    f"Node {name} status is now: NodeNotReady",
                    "node-controller",
                )
        for pod_key in sorted(set(self.pods_on(name))):
            self._on_unreachable(pod_key)

    def _on_unreachable(self, pod_key: str) -> None:
        engine = self.engine
        pod = engine.get(pod_key)
        if pod is None:
            return
        meta = pod["metadata"]
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return
        now = engine.now()
        conditions = list((pod.get("status") or {}).get("conditions") or [])
        ready = next((c for c in conditions if c.get("type") == "Ready"), None)
        if ready is not None and ready.get("status") != "False":
            new = changed_copy(pod)
            new["status"]["conditions"] = [
                {**c, "status": "False", "lastTransitionTime": now} if c is ready else c
                for c in conditions
            ]
            if engine.update(pod_key, new, status=True) is not None:
                # MarkPodsNotReady
                engine.events.emit(
                    object_ref(pod),
                    "Warning",
                    "NodeNotReady",
                    "Node is not ready",
                    "node-controller",
                )
            pod = engine.get(pod_key) or pod
        if meta.get("deletionTimestamp"):
            return
        taint = {"key": UNREACHABLE, "effect": "NoExecute"}
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        matching = [t for t in tolerations if tolerates([t], taint)]
        if matching:
            limits = [
                t["tolerationSeconds"] for t in matching if t.get("tolerationSeconds") is not None
            ]
            if not limits:
                return  # tolerated for ever
            seconds = max(0.0, float(min(limits)))
        else:
            seconds = engine.config.eviction_seconds
        if seconds <= 0:
            self.evict(pod_key)
        elif not engine.has_timer("pod-evict", pod_key):
            engine.after(seconds, "pod-evict", pod_key)

    def evict(self, pod_key: str) -> None:
        """The taint manager's eviction: ``DisruptionTarget`` on the Pod, then delete it."""
        engine = self.engine
        pod = engine.get(pod_key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in self.unknown:
            return
        new = changed_copy(pod)
        status = new.setdefault("status", {})
        status["conditions"] = set_condition(
            list(status.get("conditions") or []),
            "DisruptionTarget",
            "True",
            "DeletionByTaintManager",
            "Taint manager: deleting due to NoExecute taint",
            engine.now(),
            probe_times=True,
        )
        engine.update(pod_key, new, status=True)
        ns, pod_name = split_key(pod_key)
        # the taint eviction controller's emitPodDeletionEvent (its reference has no uid)
        engine.events.emit(
            {"kind": "Pod", "namespace": ns, "name": pod_name, "apiVersion": "v1"},
            "Normal",
            "TaintManagerEviction",
            f"Marking for deletion Pod {ns}/{pod_name}",
            "taint-eviction-controller",
        )
        engine.delete(pod_key)
