"""Field names as words, for the rules that judge a field by its name."""

from __future__ import annotations

import re
from functools import lru_cache

_WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@lru_cache(maxsize=8192)
def words(name: str) -> tuple[str, ...]:
    """A field name split into lower-case words: ``clientSecretRef`` → client, secret, ref;
    ``apiKEY`` → api, key; ``tls_private_key`` → tls, private, key."""
    return tuple(w.lower() for w in _WORD_RE.findall(name))
