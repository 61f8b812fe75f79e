"""Names and hashes the workload controllers give what they make.

* ``pod-template-hash``: as kube's ``controller.ComputeHash`` — FNV-32a over the pod
  template, then the collision count as 8 little-endian bytes (its low 4 set), the 32-bit
  sum printed in decimal and each digit mapped through ``SafeEncodeString``'s alphabet
  (``bcdfghjklmnpqrstvwxz2456789``). kube feeds the hasher Go's ``spew`` dump of its typed
  struct; we feed it the template's canonical JSON (sorted keys, no spaces), so the label
  has kube's form and the same properties (stable, changes with the template and the
  collision count) but not a cluster's exact value for the same template.
* ReplicaSets are ``<deployment>-<hash>``; controller-made Pods ``<owner>-`` plus five
  generated characters; StatefulSet Pods ``<set>-<ordinal>``; CronJob Jobs
  ``<cronjob>-<scheduled time in Unix minutes>``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
POD_TEMPLATE_HASH = "pod-template-hash"
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def fnv32a(data: bytes, h: int = _FNV_OFFSET) -> int:
    """FNV-1a, 32 bits (Go's ``hash/fnv.New32a``), continuing from ``h``."""
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each byte mapped into the no-vowels alphabet."""
    return "".join(SAFE_ALPHABET[b % len(SAFE_ALPHABET)] for b in text.encode())


def pod_template_hash(template: Any, collision_count: int | None = None) -> str:
    """The ``pod-template-hash`` of ``template`` (see the module docstring)."""
    h = fnv32a(orjson.dumps(template, option=orjson.OPT_SORT_KEYS))
    if collision_count is not None:
        h = fnv32a((collision_count & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4), h)
    return safe_encode(str(h))


def replicaset_name(deployment: str, template_hash: str) -> str:
    return f"{deployment}-{template_hash}"


def pod_prefix(owner: str) -> str:
    """The ``generateName`` a controller gives its Pods (``getPodsPrefix``): ``owner-``,
    or the bare name when the dash would make an invalid name prefix."""
    prefix = f"{owner}-"
    return prefix if len(prefix) <= 253 - 5 else owner


def stateful_pod_name(statefulset: str, ordinal: int) -> str:
    return f"{statefulset}-{ordinal}"


def stateful_claim_name(template: str, statefulset: str, ordinal: int) -> str:
    """A StatefulSet Pod's claim from ``volumeClaimTemplates``: ``<template>-<set>-<n>``."""
    return f"{template}-{statefulset}-{ordinal}"


def cronjob_job_name(cronjob: str, scheduled: dt.datetime) -> str:
    """``getJobName``: the scheduled time in minutes since the epoch."""
    return f"{cronjob}-{int(scheduled.timestamp()) // 60}"


def ordinal_of(statefulset: str, pod: str) -> int | None:
    """The ordinal of ``pod`` if it is named as one of ``statefulset``'s (else None)."""
    prefix = f"{statefulset}-"
    if not pod.startswith(prefix):
        return None
    rest = pod[len(prefix) :]
    return int(rest) if rest.isdigit() and (rest == "0" or not rest.startswith("0")) else None
