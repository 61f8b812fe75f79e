"""What a ``MODULE:ATTR`` target of ``kubewerk run``, ``gen rbac`` and ``webhook serve``
names, when the attribute is a factory rather than the object itself."""

from __future__ import annotations

import inspect
from typing import Any


def takes_no_arguments(obj: Any) -> bool:
    """True when ``obj`` is callable and its signature accepts a call without arguments.

    A target such as ``mypkg.operator:make_manager`` is a factory and is called; one such
    as ``json:loads`` needs an argument, so calling it could only fail with a
    ``TypeError`` about that call. Callables without an inspectable signature count as
    taking arguments: nothing is called that might not be a factory.
    """
    if not callable(obj):
        return False
    try:
        inspect.signature(obj).bind()
    except TypeError:
        return False
    except ValueError:  # no signature (some builtins)
        return False
    return True
