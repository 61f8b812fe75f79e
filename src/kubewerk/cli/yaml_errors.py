"""How ``kubewerk`` commands name a file that is not valid YAML: one line, the same
``PATH:LINE: invalid YAML: <context>, <problem>`` form as ``kubewerk lint``."""

from __future__ import annotations

from typing import Any


def invalid_yaml(path: Any, exc: Exception) -> str:
    """The one-line message for ``exc`` (a PyYAML error) raised while reading ``path``.

    The line is the problem's (else the context's) 1-based line when PyYAML marks one;
    PyYAML's own multi-line rendering with "in <string>, line L, column C" is never
    used, so the message is always a single line.
    """
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else f"{path}"
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    text = f"{context}, {problem}" if context else str(problem)
    return f"{where}: invalid YAML: {' '.join(text.split())}"
