"""govern.loader reads manifests as the embedded API server reads YAML bodies (and as
a cluster does): one reader, ``core.yamlgo``."""

from __future__ import annotations

import re
import time

import pytest

from kubewerk.apiserver.decode import DecodeError, yaml_value
from kubewerk.govern.loader import InputError, Source, parse

TRICKY = """\
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
  labels: &labels {{app: w}}
spec:
  port: 22:22
  date: 2001-12-14
  enabled: y
  off: n
  mode: 0777
  big: 9223372036854775808
  huge: 1{zeros}
  bin: !!binary aGVsbG8=
  set: !!set {{a, b}}
  custom: !mine value
  1: one
  true: yes
  copy: *labels
  merged:
    <<: *labels
    tier: web
"""


def _source(text: str, name: str = "m.yaml") -> Source:
    return Source(name, name, text)


def test_a_manifest_reads_as_the_server_reads_it() -> None:
    text = TRICKY.format(zeros="0" * 400)
    [doc] = parse(_source(text))
    assert doc.data == yaml_value(text.encode())
    spec = doc.data["spec"]
    assert spec["port"] == "22:22" and spec["date"] == "2001-12-14"  # no base-60, no dates
    assert spec["enabled"] is True and spec["false"] is False  # go-yaml's y / n (key "off" too)
    assert (
        spec["mode"] == 511
        and spec["big"] == 9.223372036854776e18
        and spec["huge"] == "1" + "0" * 400
    )
    assert (
        spec["bin"] == "hello"
        and spec["set"] == {"a": None, "b": None}
        and spec["custom"] == "value"
    )
    assert spec["1"] == "one" and spec["true"] is True
    assert spec["merged"] == {"app": "w", "tier": "web"}
    spec["copy"]["app"] = "changed"  # aliases are copies
    assert doc.data["metadata"]["labels"] == {"app": "w"} and spec["merged"]["app"] == "w"
    assert doc.line_of(("spec", "mode")) == 11


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("a: 1\nspec: &s {me: *s}\n", "value contains itself", 2),
        ("a: 1\nspec: &s\n  b:\n    <<: *s\n", "value contains itself", 2),
        ("a: 1\nv: .nan\n", "json: unsupported value: NaN", 2),
        ("a: 1\nv: !!bool maybe\n", "cannot decode !!str `maybe` as a !!bool", 2),
    ],
)
def test_documents_a_cluster_refuses_are_refused_with_file_and_line(
    text: str, message: str, line: int
) -> None:
    with pytest.raises(InputError) as info:
        parse(_source(text))
    assert info.value.file == "m.yaml" and info.value.line == line
    assert message in str(info.value) and str(info.value).startswith(
        f"m.yaml:{line}: invalid YAML: "
    )
    with pytest.raises(DecodeError, match=re.escape(message)):
        yaml_value(text.encode())


def test_alias_bombs_are_refused_before_expansion() -> None:
    text = "kind: Thing\nl0: &l0 [" + ", ".join(["lol"] * 10) + "]\n"
    for level in range(1, 5):  # 100,000 strings once expanded
        text += f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 10) + "]\n"
    started = time.perf_counter()
    with pytest.raises(InputError, match="document contains excessive aliasing"):
        parse(_source(text))
    assert time.perf_counter() - started < 1.0


def test_several_documents_keep_their_lines() -> None:
    docs = parse(_source("a: 1\n---\n---\nkind: X\nb: [z]\n"))
    assert [d.data for d in docs] == [{"a": 1}, {"kind": "X", "b": ["z"]}]
    assert [d.index for d in docs] == [0, 2]
    assert docs[1].line_of(("b",)) == 5
