"""Go's ``regexp`` through RE2: compiling, matching and Go's error wording.

Kubernetes checks schema ``pattern`` values and the CEL ``matches``/``find`` functions
with Go's ``regexp`` (RE2 syntax, linear time). Every compiled pattern is cached and
shared by all schemas (patterns repeat a lot across CRDs); an invalid pattern raises
``re2.error``, and :func:`go_regexp_error` words that error the way Go does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import re2

_RE_CACHE: dict[str, Any] = {}
_TEST_CACHE: dict[str, Callable[[str], bool]] = {}
_RE_OPTIONS = re2.Options()
_RE_OPTIONS.log_errors = False
_RE_OPTIONS.max_mem = 8 << 20
_TEST_OPTIONS = re2.Options()
_TEST_OPTIONS.log_errors = False
_TEST_OPTIONS.max_mem = 8 << 20
_TEST_OPTIONS.never_capture = True


def compile_go_regexp(pattern: str) -> Any:
    """Compile with RE2 semantics (Go's ``regexp``); raises ``re2.error`` if invalid."""
    compiled = _RE_CACHE.get(pattern)
    if compiled is None:
        compiled = re2.compile(pattern, _RE_OPTIONS)
        if len(_RE_CACHE) > 4096:
            _RE_CACHE.clear()
        _RE_CACHE[pattern] = compiled
    return compiled


def go_regexp_tester(pattern: str) -> Callable[[str], bool]:
    """A fast ``regexp.MatchString`` for ``pattern`` (RE2, no captures, linear time).

    Raises ``re2.error`` (as :func:`compile_go_regexp` does) if the pattern is invalid.
    """
    tester = _TEST_CACHE.get(pattern)
    if tester is None:
        compile_go_regexp(pattern)  # raises re2.error with the usual text if invalid
        # bytes in, so text that is not valid UTF-8 (a lone surrogate) is still matched
        search = re2.compile(pattern, _TEST_OPTIONS).search
        # recent short answers: values such as "100Mi" or "TCP" repeat across objects
        seen: dict[str, bool] = {}

        def tester(text: str) -> bool:
            exact = type(text) is str
            if exact:
                hit = seen.get(text)
                if hit is not None:
                    return hit
            data = text.encode("utf-8", "surrogatepass")
            result = search(data) is not None
            if exact and len(text) <= 64:
                if len(seen) >= 512:
                    seen.clear()
                seen[text] = result
            return result

        if len(_TEST_CACHE) > 4096:
            _TEST_CACHE.clear()
        _TEST_CACHE[pattern] = tester
    return tester


_RE2_TO_GO: Final = {
    "missing )": "missing closing )",
    "missing ]": "missing closing ]",
    "unexpected )": "unexpected )",
    "invalid escape sequence": "invalid escape sequence",
    "bad repetition operator": "invalid nested repetition operator",
    "missing argument to repetition operator": "missing argument to repetition operator",
    "trailing \\": "trailing backslash at end of expression",
    "invalid character class range": "invalid character class range",
    "invalid character class": "invalid character class",
    "invalid named capture group": "invalid named capture",
    "invalid repetition size": "invalid repeat count",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "pattern too large - compile failed": "expression too large",
}


def go_regexp_error(pattern: str, exc: Exception) -> str:
    """RE2's error text in Go ``regexp``'s words: ``error parsing regexp: <code>: `<expr>```."""
    arg = exc.args[0] if exc.args else ""
    text = arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)
    code, _, rest = text.partition(": ")
    go_code = _RE2_TO_GO.get(code)
    if go_code is None:
        return f"error parsing regexp: {text}: `{pattern}`"
    return f"error parsing regexp: {go_code}: `{rest or pattern}`"
