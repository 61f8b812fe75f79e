"""Kubernetes protobuf request bodies (``kubewerk.apiserver.protobuf``).

Test vectors are built with the tiny encoder below (field numbers as in k8s.io/api and
k8s.io/apimachinery ``generated.proto``), plus bytes the real kubectl 1.32 sent for
``kubectl create configmap/secret/namespace/serviceaccount`` (captured once from this
server). Expected objects are what Go's encoding/json writes for the decoded struct.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kubewerk.apiserver import protobuf as pb
from kubewerk.apiserver.protobuf import ProtobufError
from kubewerk.core.errors import ApiError
from tests.apiserver.helpers import DB_PATH, Api

PROTO = "application/vnd.kubernetes.protobuf"
CMS = "/api/v1/namespaces/default/configmaps"

# -- a tiny encoder -------------------------------------------------------------------


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def vi(number: int, value: int) -> bytes:
    return key(number, 0) + varint(value)


def ld(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return key(number, 2) + varint(len(data)) + data


def entry(number: int, k: str, v: bytes | str) -> bytes:
    return ld(number, ld(1, k) + ld(2, v))


def ts(seconds: int, nanos: int = 0) -> bytes:
    return vi(1, seconds) + (vi(2, nanos) if nanos else b"")


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return pb.MAGIC + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw) + ld(3, "") + ld(4, "")


def meta(name: str = "x", **more: bytes) -> bytes:
    """ObjectMeta as Go writes it: every non-pointer field, zero or not."""
    return ld(
        1,
        ld(1, name)
        + ld(2, "")
        + ld(3, "")
        + ld(4, "")
        + ld(5, "")
        + ld(6, "")
        + vi(7, 0)
        + ld(8, b"")
        + b"".join(more.values()),
    )


# -- the wire format ------------------------------------------------------------------


def test_varints() -> None:
    assert pb.read_varint(b"\x00", 0, 1) == (0, 1)
    assert pb.read_varint(b"\xac\x02", 0, 2) == (300, 2)
    minus_one = varint(-1)
    assert len(minus_one) == 10
    assert pb.read_varint(minus_one, 0, 10) == ((1 << 64) - 1, 10)
    # int64 / int32 fields read the low bits as Go does
    assert pb.decode_message("DeleteOptions", vi(1, -1)) == {"gracePeriodSeconds": -1}
    assert pb.decode_message("DeleteOptions", vi(1, -(2**63))) == {"gracePeriodSeconds": -(2**63)}
    assert pb.decode_message("EventSeries", vi(1, -5)) == {"count": -5, "lastObservedTime": None}
    assert pb.decode_message("EventSeries", vi(1, 2**32 + 7)) == {
        "count": 7,
        "lastObservedTime": None,
    }
    # a 10th byte with more than one bit set: the excess is dropped, as in Go
    assert pb.read_varint(b"\xff" * 9 + b"\x7f", 0, 10)[0] == (1 << 64) - 1


def test_varint_errors() -> None:
    with pytest.raises(ProtobufError, match=r"^proto: integer overflow$"):
        pb.read_varint(b"\xff" * 10 + b"\x01", 0, 11)
    with pytest.raises(ProtobufError, match=r"^unexpected EOF$"):
        pb.read_varint(b"\x80\x80", 0, 2)
    with pytest.raises(ProtobufError, match=r"^unexpected EOF$"):
        pb.read_varint(b"", 0, 0)


def test_lengths() -> None:
    assert pb.read_length(b"\x03abc", 0, 4) == (1, 4)
    with pytest.raises(ProtobufError, match=r"^unexpected EOF$"):
        pb.read_length(b"\x04abc", 0, 4)
    with pytest.raises(ProtobufError, match=r"^proto: negative length found during unmarshaling$"):
        pb.read_length(varint(-2), 0, 10)


@pytest.mark.parametrize(
    "unknown",
    [
        vi(99, 12345),  # varint
        key(99, 1) + b"\x01" * 8,  # 64-bit
        ld(99, b"anything at all"),  # length-delimited
        key(99, 5) + b"\x01" * 4,  # 32-bit
        key(99, 3) + vi(1, 5) + ld(2, "x") + key(3, 3) + key(3, 4) + key(99, 4),  # nested groups
    ],
)
def test_unknown_fields_are_skipped(unknown: bytes) -> None:
    data = unknown + ld(1, "a") + unknown + ld(3, "ns") + unknown
    assert pb.decode_message("ObjectReference", data) == {"kind": "a", "name": "ns"}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (key(99, 1) + b"\x01" * 7, "unexpected EOF"),
        (key(99, 5) + b"\x01" * 3, "unexpected EOF"),
        (key(99, 2) + b"\x05abc", "unexpected EOF"),
        (key(99, 3) + vi(1, 1), "unexpected EOF"),  # group never closed
        (key(99, 6), "proto: illegal wireType 6"),
        (key(99, 7), "proto: illegal wireType 7"),
        (key(1, 4), "proto: ObjectReference: wiretype end group for non-group"),
        (key(0, 2) + b"\x00", "proto: ObjectReference: illegal tag 0 (wire type 2)"),
        (vi(1, 5), "proto: wrong wireType = 0 for field Kind"),
        (ld(3, "abc")[:-1], "unexpected EOF"),
        (b"\x0a", "unexpected EOF"),
    ],
)
def test_malformed(data: bytes, message: str) -> None:
    with pytest.raises(ProtobufError) as err:
        pb.decode_message("ObjectReference", data)
    assert str(err.value) == message


def test_wrong_wire_type_names_the_go_field() -> None:
    with pytest.raises(ProtobufError, match=r"^proto: wrong wireType = 0 for field UID$"):
        pb.decode_message("ObjectReference", vi(4, 1))
    with pytest.raises(ProtobufError, match=r"^proto: wrong wireType = 2 for field Immutable$"):
        pb.decode_message("ConfigMap", ld(4, "x"))
    with pytest.raises(ProtobufError, match=r"^proto: wrong wireType = 0 for field ObjectMeta$"):
        pb.decode_message("ConfigMap", vi(1, 1))


# -- Go JSON semantics ----------------------------------------------------------------


def test_zero_values_follow_the_go_json_tags() -> None:
    # non-pointer strings written as "" by Go are left out (omitempty) ...
    assert pb.decode_message("ObjectMeta", meta("x")[2:]) == {"name": "x"}
    # ... unless the tag has no omitempty
    assert pb.decode_message("OwnerReference", b"") == {
        "apiVersion": "",
        "kind": "",
        "name": "",
        "uid": "",
    }
    # pointer fields: present exactly when on the wire, even when zero
    assert pb.decode_message("LeaseSpec", ld(1, "") + vi(2, 0) + vi(5, 0)) == {
        "holderIdentity": "",
        "leaseDurationSeconds": 0,
        "leaseTransitions": 0,
    }
    assert pb.decode_message("LeaseSpec", b"") == {}
    assert pb.decode_message("ConfigMap", vi(4, 0)) == {"metadata": {}, "immutable": False}
    # structs are never left out
    assert pb.decode_message("Namespace", b"") == {"metadata": {}, "spec": {}, "status": {}}


def test_object_meta_in_full() -> None:
    owner = ld(5, "v1") + ld(1, "ConfigMap") + ld(3, "owner") + ld(4, "u-1") + vi(6, 1) + vi(7, 0)
    managed = (
        ld(1, "kubectl")
        + ld(2, "Update")
        + ld(3, "v1")
        + ld(4, ts(1700000000))
        + ld(6, "FieldsV1")
        + ld(7, ld(1, b'{"f:data":{".":{}}}'))
    )
    data = (
        ld(1, "cm")
        + ld(2, "gen-")
        + ld(3, "default")
        + ld(4, "/self")
        + ld(5, "uid-1")
        + ld(6, "42")
        + vi(7, 3)
        + ld(8, ts(1700000000, 999))
        + ld(9, ts(1700000060))
        + vi(10, 30)
        + entry(11, "app", "web")
        + entry(11, "tier", "")
        + entry(12, "note", "é")
        + ld(13, owner)
        + ld(13, ld(5, "v1") + ld(1, "Secret") + ld(3, "s") + ld(4, "u-2"))
        + ld(14, "a/b")
        + ld(14, "c")
        + ld(17, managed)
    )
    assert pb.decode_message("ObjectMeta", data) == {
        "name": "cm",
        "generateName": "gen-",
        "namespace": "default",
        "selfLink": "/self",
        "uid": "uid-1",
        "resourceVersion": "42",
        "generation": 3,
        "creationTimestamp": "2023-11-14T22:13:20Z",  # nanos dropped, as Time does
        "deletionTimestamp": "2023-11-14T22:14:20Z",
        "deletionGracePeriodSeconds": 30,
        "labels": {"app": "web", "tier": ""},
        "annotations": {"note": "é"},
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": "owner",
                "uid": "u-1",
                "controller": True,
                "blockOwnerDeletion": False,
            },
            {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u-2"},
        ],
        "finalizers": ["a/b", "c"],
        "managedFields": [
            {
                "manager": "kubectl",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2023-11-14T22:13:20Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}}},
            }
        ],
    }


def test_times() -> None:
    # the zero time: empty message, or Go's year-1 instant
    assert pb.time_json(b"") is None
    assert pb.time_json(ts(-62135596800)) is None
    assert pb.time_json(vi(1, 0)) == "1970-01-01T00:00:00Z"
    assert pb.time_json(ts(253402300799)) == "9999-12-31T23:59:59Z"
    assert pb.time_json(ts(-62135596799)) == "0001-01-01T00:00:01Z"
    assert pb.microtime_json(ts(1700000000, 123456789)) == "2023-11-14T22:13:20.123456Z"
    assert pb.microtime_json(ts(1700000000)) == "2023-11-14T22:13:20.000000Z"
    assert pb.microtime_json(ts(1700000000, -1500)) == "2023-11-14T22:13:19.999999Z"
    assert pb.microtime_json(ts(-62135596800, 999)) is None  # truncated to the zero time
    with pytest.raises(ProtobufError, match="outside the years 1 to 9999"):
        pb.time_json(ts(2**62))
    # Time and MicroTime fields: null when zero unless a pointer is absent / omitzero
    assert pb.decode_message("ObjectMeta", ld(8, b"")) == {}
    assert pb.decode_message("ObjectMeta", ld(9, b"")) == {"deletionTimestamp": None}
    assert pb.decode_message("NamespaceCondition", ld(1, "T")) == {
        "type": "T",
        "status": "",
        "lastTransitionTime": None,
    }
    # a Time seen twice: the last one wins (Time.Unmarshal replaces)
    assert pb.decode_message("ObjectMeta", ld(8, ts(1)) + ld(8, ts(2))) == {
        "creationTimestamp": "1970-01-01T00:00:02Z"
    }


def test_singular_messages_seen_twice_are_merged() -> None:
    data = ld(2, ld(1, "Pod") + ld(3, "a")) + ld(2, ld(3, "b") + ld(2, "ns"))
    assert pb.decode_message("Event", data)["involvedObject"] == {
        "kind": "Pod",
        "namespace": "ns",
        "name": "b",
    }


def test_maps() -> None:
    data = (
        entry(2, "k", "v1")
        + entry(2, "k", "v2")
        + ld(2, ld(2, "no key"))
        + ld(2, ld(1, "no value"))
    )
    data += ld(2, ld(1, "x") + vi(7, 1) + ld(2, "y"))  # unknown field inside an entry
    assert pb.decode_message("ConfigMap", data)["data"] == {
        "k": "v2",
        "": "no key",
        "no value": "",
        "x": "y",
    }
    with pytest.raises(ProtobufError, match=r"^unexpected EOF$"):
        pb.decode_message("ConfigMap", ld(2, ld(1, "k")[:-1]))


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert pb.decode_message("LocalObjectReference", ld(1, b"a\xff\xe2\x82b")) == {
        "name": "a\ufffd\ufffd\ufffdb"
    }


# -- each kind ------------------------------------------------------------------------


def test_configmap_and_secret() -> None:
    cm = (
        meta("cm")
        + vi(4, 1)
        + entry(2, "a", "b")
        + entry(3, "bin", bytes(range(256)))
        + entry(3, "empty", b"")
    )
    assert pb.decode_object(envelope("v1", "ConfigMap", cm), "v1", "ConfigMap") == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "cm"},
        "immutable": True,
        "data": {"a": "b"},
        "binaryData": {"bin": base64.b64encode(bytes(range(256))).decode(), "empty": ""},
    }
    secret = (
        meta("s")
        + entry(2, "p", b"\x00\xff")
        + entry(4, "plain", "text")
        + ld(3, "kubernetes.io/tls")
    )
    assert pb.decode_object(envelope("v1", "Secret", secret), "v1", "Secret") == {
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": {"name": "s"},
        "data": {"p": "AP8="},
        "stringData": {"plain": "text"},
        "type": "kubernetes.io/tls",
    }
    assert pb.decode_message("Secret", ld(3, "")) == {"metadata": {}}


def test_namespace_and_service_account() -> None:
    cond = (
        ld(1, "NamespaceDeletionContentFailure")
        + ld(2, "True")
        + ld(4, ts(1700000000))
        + ld(5, "R")
        + ld(6, "M")
    )
    ns = (
        meta("n") + ld(2, ld(1, "kubernetes") + ld(1, "x/y")) + ld(3, ld(1, "Active") + ld(2, cond))
    )
    assert pb.decode_message("Namespace", ns[:0] + ns) == {
        "metadata": {"name": "n"},
        "spec": {"finalizers": ["kubernetes", "x/y"]},
        "status": {
            "phase": "Active",
            "conditions": [
                {
                    "type": "NamespaceDeletionContentFailure",
                    "status": "True",
                    "lastTransitionTime": "2023-11-14T22:13:20Z",
                    "reason": "R",
                    "message": "M",
                }
            ],
        },
    }
    sa = (
        meta("sa")
        + ld(2, ld(3, "tok") + ld(1, "Secret"))
        + ld(3, ld(1, "pull"))
        + ld(3, b"")
        + vi(4, 0)
    )
    assert pb.decode_message("ServiceAccount", sa) == {
        "metadata": {"name": "sa"},
        "secrets": [{"kind": "Secret", "name": "tok"}],
        "imagePullSecrets": [{"name": "pull"}, {}],
        "automountServiceAccountToken": False,
    }


def test_core_event() -> None:
    ref = (
        ld(1, "Pod")
        + ld(2, "default")
        + ld(3, "p")
        + ld(4, "u")
        + ld(5, "v1")
        + ld(6, "7")
        + ld(7, "spec.x")
    )
    ev = (
        meta("p.1")
        + ld(2, ref)
        + ld(3, "Started")
        + ld(4, "started it")
        + ld(5, ld(1, "kubelet") + ld(2, "node"))
        + ld(6, ts(1700000000))
        + ld(7, ts(1700000001))
        + vi(8, 2)
        + ld(9, "Normal")
        + ld(10, b"")
        + ld(12, "")
        + ld(14, "")
        + ld(15, "")
    )
    assert pb.decode_object(envelope("v1", "Event", ev), "v1", "Event") == {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": {"name": "p.1"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": "p",
            "uid": "u",
            "apiVersion": "v1",
            "resourceVersion": "7",
            "fieldPath": "spec.x",
        },
        "reason": "Started",
        "message": "started it",
        "source": {"component": "kubelet", "host": "node"},
        "firstTimestamp": "2023-11-14T22:13:20Z",
        "lastTimestamp": "2023-11-14T22:13:21Z",
        "count": 2,
        "type": "Normal",
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    }
    series = ld(11, vi(1, 3) + ld(2, ts(1700000002, 5000))) + ld(13, ld(3, "other"))
    got = pb.decode_message("Event", series)
    assert got["series"] == {"count": 3, "lastObservedTime": "2023-11-14T22:13:22.000005Z"}
    assert got["related"] == {"name": "other"}
    assert got["involvedObject"] == {} and got["source"] == {} and got["firstTimestamp"] is None


def test_events_k8s_io_event() -> None:
    ev = (
        meta("e", ns=ld(3, "default"))
        + ld(2, ts(1700000000, 123456000))
        + ld(3, vi(1, 0) + ld(2, b""))
        + ld(4, "example.com/ctl")
        + ld(5, "ctl-1")
        + ld(6, "Reconcile")
        + ld(7, "Done")
        + ld(8, ld(1, "Database") + ld(3, "db1"))
        + ld(10, "all good")
        + ld(11, "Normal")
        + ld(12, b"")
        + ld(13, b"")
        + ld(14, b"")
        + vi(15, 0)
    )
    assert pb.decode_object(
        envelope("events.k8s.io/v1", "Event", ev), "events.k8s.io/v1", "Event"
    ) == {
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": {"name": "e", "namespace": "default"},
        "eventTime": "2023-11-14T22:13:20.123456Z",
        "series": {"count": 0, "lastObservedTime": None},
        "reportingController": "example.com/ctl",
        "reportingInstance": "ctl-1",
        "action": "Reconcile",
        "reason": "Done",
        "regarding": {"kind": "Database", "name": "db1"},
        "note": "all good",
        "type": "Normal",
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    }


def test_lease() -> None:
    spec = (
        ld(1, "pod-a")
        + vi(2, 15)
        + ld(3, ts(1700000000, 1000))
        + ld(4, ts(1700000010, 999999999))
        + vi(5, 4)
        + ld(6, "OldestEmulationVersion")
        + ld(7, "pod-b")
    )
    assert pb.decode_object(
        envelope("coordination.k8s.io/v1", "Lease", meta("l") + ld(2, spec)),
        "coordination.k8s.io/v1",
        "Lease",
    ) == {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {"name": "l"},
        "spec": {
            "holderIdentity": "pod-a",
            "leaseDurationSeconds": 15,
            "acquireTime": "2023-11-14T22:13:20.000001Z",
            "renewTime": "2023-11-14T22:13:30.999999Z",
            "leaseTransitions": 4,
            "strategy": "OldestEmulationVersion",
            "preferredHolder": "pod-b",
        },
    }


def test_delete_options() -> None:
    opts = (
        vi(1, 0) + ld(2, ld(1, "u-1") + ld(2, "")) + ld(4, "Foreground") + ld(5, "All") + vi(3, 0)
    )
    assert pb.decode_delete_options(envelope("v1", "DeleteOptions", opts)) == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": "u-1", "resourceVersion": ""},
        "orphanDependents": False,
        "propagationPolicy": "Foreground",
        "dryRun": ["All"],
    }
    assert pb.decode_delete_options(pb.MAGIC + ld(2, b"")) == {
        "kind": "DeleteOptions",
        "apiVersion": "meta.k8s.io/v1",
    }
    with pytest.raises(ApiError) as err:
        pb.decode_delete_options(envelope("v1", "ConfigMap", b""))
    assert (err.value.code, err.value.message) == (
        400,
        "decoded object cannot be converted to DeleteOptions",
    )
    with pytest.raises(ApiError) as err:
        pb.decode_delete_options(envelope("v1", "DeleteOptions", vi(4, 1)))
    assert err.value.message == "proto: wrong wireType = 0 for field PropagationPolicy"


# -- real kubectl bytes ---------------------------------------------------------------

KUBECTL_132 = {
    "ConfigMap": (
        "6b3873000a0f0a0276311209436f6e6669674d617012230a120a02633112001a0022002a0032003800420012060a0161"
        "12016212050a016512001a002200",
        {
            "kind": "ConfigMap",
            "apiVersion": "v1",
            "metadata": {"name": "c1"},
            "data": {"a": "b", "e": ""},
        },
    ),
    "Secret": (
        "6b3873000a0c0a027631120653656372657412330a120a02733112001a0022002a00320038004200120f0a0170120a70c3"
        "a4737377c3b67264120a0a0175120561646d696e1a001a002200",
        {
            "kind": "Secret",
            "apiVersion": "v1",
            "metadata": {"name": "s1"},
            "data": {"p": base64.b64encode("pässwörd".encode()).decode(), "u": "YWRtaW4="},
        },
    ),
    "Namespace": (
        "6b3873000a0f0a02763112094e616d657370616365121a0a120a026e3112001a0022002a0032003800420012001a020a"
        "001a002200",
        {
            "kind": "Namespace",
            "apiVersion": "v1",
            "metadata": {"name": "n1"},
            "spec": {},
            "status": {},
        },
    ),
    "ServiceAccount": (
        "6b3873000a140a027631120e536572766963654163636f756e7412150a130a0373613112001a0022002a00320038"
        "0042001a002200",
        {"kind": "ServiceAccount", "apiVersion": "v1", "metadata": {"name": "sa1"}},
    ),
}


@pytest.mark.parametrize("kind", sorted(KUBECTL_132))
def test_real_kubectl_bytes(kind: str) -> None:
    hexdata, expected = KUBECTL_132[kind]
    assert pb.decode_object(bytes.fromhex(hexdata), "v1", kind) == expected


# -- error wording --------------------------------------------------------------------


def _bad(body: bytes, api_version: str = "v1", kind: str = "ConfigMap") -> str:
    with pytest.raises(ApiError) as err:
        pb.decode_object(body, api_version, kind)
    assert err.value.code == 400 and err.value.reason == "BadRequest"
    return err.value.message


def test_error_messages() -> None:
    assert (
        _bad(b"")
        == "the object provided is unrecognized (must be of type ConfigMap): empty data (<empty>)"
    )
    assert _bad(b"{}") == (
        "the object provided is unrecognized (must be of type ConfigMap): provided data does not "
        "appear to be a protobuf message, expected prefix [107 56 115 0] ({})"
    )
    assert (
        _bad(b"k8s\x00")
        == "the object provided is unrecognized (must be of type ConfigMap): empty body (6b387300)"
    )
    assert _bad(b"k8s\x00\x0a\x05\x0a") == (
        "the object provided is unrecognized (must be of "
        "type ConfigMap): unexpected EOF (6b3873000a050a)"
    )
    assert _bad(b"\x01" * 40).endswith(f"({'01' * 30} ...)")
    assert _bad(envelope("v1", "ConfigMap", ld(2, ld(1, "k")[:-1]))) == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: unexpected EOF'
    )
    # (a Pod in a ConfigMap's request decodes: the kind check after decoding refuses it)
    assert _bad(envelope("v1", "Widget", b"")) == (
        'Widget in version "v1" cannot be handled as a ConfigMap: '
        'no kind "Widget" is registered for version "v1"'
    )
    assert _bad(
        envelope("coordination.k8s.io/v1", "Lease", ld(2, vi(1, 1))),
        "coordination.k8s.io/v1",
        "Lease",
    ) == (
        'Lease in version "v1" cannot be handled as a Lease: '
        "proto: wrong wireType = 0 for field HolderIdentity"
    )


def test_kind_and_version_default_to_the_request() -> None:
    body = pb.MAGIC + ld(2, meta("d"))
    assert pb.decode_object(body, "coordination.k8s.io/v1", "Lease") == {
        "kind": "Lease",
        "apiVersion": "coordination.k8s.io/v1",
        "metadata": {"name": "d"},
        "spec": {},
    }
    # a kind with no version takes the request's group and version
    body = pb.MAGIC + ld(1, ld(2, "Secret")) + ld(2, meta("d"))
    assert pb.decode_object(body, "v1", "ConfigMap")["kind"] == "Secret"


# -- over HTTP ------------------------------------------------------------------------


async def proto(api: Api, method: str, path: str, body: bytes, **kw: Any) -> tuple[int, Any]:
    return await api.request(
        method,
        path,
        raw=body,
        content_type=PROTO,
        headers={"Accept": "application/vnd.kubernetes.protobuf, application/json"},
        **kw,
    )


async def test_create_and_update_over_http(api: Api) -> None:
    body = envelope(
        "v1",
        "ConfigMap",
        meta("p", labels=entry(11, "app", "web")) + entry(2, "a", "1") + entry(3, "b", b"\x00\x01"),
    )
    status, created = await proto(api, "POST", CMS, body)
    assert status == 201, created
    assert created["data"] == {"a": "1"} and created["binaryData"] == {"b": "AAE="}
    assert (
        created["metadata"]["labels"] == {"app": "web"}
        and created["metadata"]["namespace"] == "default"
    )
    assert created["metadata"]["uid"] and created["metadata"]["creationTimestamp"]
    status, got = await api.get(f"{CMS}/p")
    assert status == 200 and got == created

    rv = created["metadata"]["resourceVersion"]
    update = envelope("v1", "ConfigMap", meta("p", rv=ld(6, rv)) + entry(2, "a", "2"))
    status, updated = await proto(api, "PUT", f"{CMS}/p", update)
    assert status == 200, updated
    assert (
        updated["data"] == {"a": "2"}
        and "binaryData" not in updated
        and "labels" not in updated["metadata"]
    )
    status, stale = await proto(api, "PUT", f"{CMS}/p", update)
    assert status == 409 and stale["reason"] == "Conflict"

    # the same checks as for JSON bodies
    status, err = await proto(api, "POST", CMS, envelope("v1", "Secret", meta("s")))
    assert (
        status == 400
        and err["message"]
        == "the kind in the data (Secret) does not match the expected kind (ConfigMap)"
    )
    status, err = await proto(api, "POST", CMS, envelope("v1", "ConfigMap", meta("Bad_Name")))
    assert status == 422 and err["reason"] == "Invalid"
    status, err = await proto(
        api, "POST", "/api/v1/namespaces/other/configmaps", envelope("v1", "ConfigMap", meta("q"))
    )
    assert status == 404 and err["reason"] == "NotFound"


async def test_every_kind_over_http(api: Api) -> None:
    cases = [
        ("/api/v1/namespaces", envelope("v1", "Namespace", meta("pns") + ld(2, b"") + ld(3, b""))),
        (
            "/api/v1/namespaces/default/secrets",
            envelope("v1", "Secret", meta("s") + entry(2, "k", b"\xff")),
        ),
        (
            "/api/v1/namespaces/default/serviceaccounts",
            envelope("v1", "ServiceAccount", meta("sa")),
        ),
        (
            "/api/v1/namespaces/default/events",
            envelope(
                "v1",
                "Event",
                meta("ev")
                + ld(2, ld(1, "Pod") + ld(3, "p"))
                + ld(3, "Started")
                + ld(10, ts(1700000000, 5)),
            ),
        ),
        (
            "/apis/events.k8s.io/v1/namespaces/default/events",
            envelope(
                "events.k8s.io/v1",
                "Event",
                meta("ev2")
                + ld(2, ts(1700000000, 7000))
                + ld(4, "c/x")
                + ld(5, "i")
                + ld(6, "A")
                + ld(7, "R")
                + ld(11, "Normal")
                + ld(8, ld(1, "Pod") + ld(3, "p")),
            ),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            envelope(
                "coordination.k8s.io/v1",
                "Lease",
                meta("lease") + ld(2, ld(1, "me") + vi(2, 15) + ld(4, ts(1700000000, 42000))),
            ),
        ),
    ]
    for path, body in cases:
        status, obj = await proto(api, "POST", path, body)
        assert status == 201, (path, obj)
    status, ns = await api.get("/api/v1/namespaces/pns")
    assert ns["status"] == {"phase": "Active"} and ns["spec"] == {"finalizers": ["kubernetes"]}
    status, secret = await api.get("/api/v1/namespaces/default/secrets/s")
    assert secret["data"] == {"k": "/w=="} and secret["type"] == "Opaque"
    status, ev = await api.get("/api/v1/namespaces/default/events/ev")
    assert (
        ev["involvedObject"] == {"kind": "Pod", "name": "p"}
        and ev["eventTime"] == "2023-11-14T22:13:20.000000Z"
    )
    status, ev2 = await api.get("/apis/events.k8s.io/v1/namespaces/default/events/ev2")
    assert ev2["eventTime"] == "2023-11-14T22:13:20.000007Z" and ev2["regarding"] == {
        "kind": "Pod",
        "name": "p",
    }
    status, lease = await api.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/lease")
    assert lease["spec"] == {
        "holderIdentity": "me",
        "leaseDurationSeconds": 15,
        "renewTime": "2023-11-14T22:13:20.000042Z",
    }


async def test_strict_field_validation_has_nothing_to_report(api: Api) -> None:
    # protobuf decoding cannot see unknown fields (kube-apiserver falls back to the
    # non-strict protobuf decoder): an unknown field number is skipped, no error, no warning
    body = envelope("v1", "ConfigMap", meta("strict") + ld(77, "unknown") + entry(2, "a", "b"))
    status, created = await proto(api, "POST", CMS + "?fieldValidation=Strict", body)
    assert status == 201 and created["data"] == {"a": "b"}


async def test_delete_options_over_http(api: Api) -> None:
    await proto(api, "POST", CMS, envelope("v1", "ConfigMap", meta("gone")))
    wrong = envelope("v1", "DeleteOptions", ld(2, ld(1, "not-the-uid")))
    status, err = await proto(api, "DELETE", f"{CMS}/gone", wrong)
    assert (
        status == 409 and "Precondition failed: UID in precondition: not-the-uid" in err["message"]
    )
    status, err = await proto(
        api, "DELETE", f"{CMS}/gone", envelope("v1", "DeleteOptions", ld(5, "All"))
    )
    assert status == 200
    assert (await api.get(f"{CMS}/gone"))[0] == 200  # dry run
    status, err = await proto(api, "DELETE", f"{CMS}/gone", b"k8s\x00\x12\x02\x0a")
    assert status == 400 and err["message"] == "unexpected EOF"
    status, _ = await proto(api, "DELETE", f"{CMS}/gone", envelope("v1", "DeleteOptions", vi(1, 0)))
    assert status == 200 and (await api.get(f"{CMS}/gone"))[0] == 404


async def test_custom_resources_refuse_protobuf(api: Api) -> None:
    status, err = await proto(
        api, "POST", DB_PATH, envelope("demo.kubewerk.dev/v1", "Database", meta("db"))
    )
    assert status == 415 and err["reason"] == "UnsupportedMediaType"
    assert err["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml (custom resources accept JSON and YAML only)"
    )
    status, err = await proto(
        api, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", pb.MAGIC
    )
    assert status == 415 and "CustomResourceDefinition" in err["message"]


async def test_malformed_bodies_are_400_never_5xx(api: Api) -> None:
    good = envelope("v1", "ConfigMap", meta("m") + entry(2, "a", "b") + ld(13, b""))
    for cut in range(len(good)):
        status, err = await proto(api, "POST", CMS, good[:cut])
        if status != 400:
            # a cut that still parses (a shorter but complete message) must be a normal answer
            assert status in (201, 409, 422), (cut, status, err)
        else:
            assert err["reason"] == "BadRequest" and err["message"], err
    for junk in (b"\xff" * 20, b"k8s\x00" + b"\xff" * 20, b"k8s\x00\x12\x05\x0f\xff\xff\xff\xff"):
        status, err = await proto(api, "POST", CMS, junk)
        assert status == 400, (junk, err)
