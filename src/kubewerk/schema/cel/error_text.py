"""cel-cpp's error texts in the words cel-go (and so kube-apiserver) uses.

kubewerk evaluates CEL with cel-cpp (through cel-expr-python); Kubernetes reports the
errors of cel-go. Both CRD rules (:mod:`.rules`) and admission policy expressions
(:mod:`kubewerk.schema.admission_policy`) print their errors through these two
functions, so a message differs from kube-apiserver's in one place at most.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["clean_compile_error", "runtime_error"]

_STATUS_CODE: Final = re.compile(r"^[A-Z_]+: ")
_TRAILING_CODE: Final = re.compile(r" \[[A-Z_]+\]$")
_UNDECLARED: Final = re.compile(
    r"ERROR: <input>:(\d+):(\d+): undeclared reference to '([A-Za-z_][\w.]*)' \(in container ''\)\n"
    r" \| (.*)\n \| \.*\^"
)
_KEY_NOT_FOUND: Final = re.compile(r'Key not found in map : "(.*)"')
_INDEX_ERROR: Final = re.compile(r"Index error: index=(-?\d+) size=\d+")


def _first_identifier(m: re.Match[str]) -> str:
    """cel-go names an undeclared qualified reference by its first identifier, at that
    identifier's column; cel-cpp names the whole ``a.b.c`` at its last dot."""
    line, col, full, snippet = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
    if "." not in full:
        return m.group(0)
    head = full.rpartition(".")[0]
    start = col - 1 - len(head)
    if start < 0 or snippet[start : start + len(head)] != head:
        return m.group(0)
    first = full.split(".", 1)[0]
    return (
        f"ERROR: <input>:{line}:{start + 1}: undeclared reference to '{first}' "
        f"(in container '')\n | {snippet}\n | {'.' * start}^"
    )


def clean_compile_error(text: str) -> str:
    """cel-cpp's compile status text as cel-go's ``Issues.String()`` reads it
    (``ERROR: <input>:line:col: …`` with the snippet and caret lines): the status code
    prefix and suffix dropped, an undeclared qualified reference named as cel-go
    names it."""
    text = _STATUS_CODE.sub("", text.strip())
    text = _TRAILING_CODE.sub("", text)
    return _UNDECLARED.sub(_first_identifier, text)


def runtime_error(text: str) -> str:
    """cel-cpp's evaluation error in cel-go's words where they differ (``no such key``,
    ``no such overload``, ``division by zero``, ``modulus by zero``, ``index out of
    range``); any other text is returned without its status code prefix."""
    text = _STATUS_CODE.sub("", text)
    m = _KEY_NOT_FOUND.match(text)
    if m:
        return f"no such key: {m.group(1)}"
    if text.startswith("No matching overloads found"):
        return "no such overload"
    if text == "divide by zero":
        return "division by zero"
    if text.startswith("modulus by zero"):
        return "modulus by zero"
    m = _INDEX_ERROR.match(text)
    if m:
        return f"index out of range: {m.group(1)}"
    return text
