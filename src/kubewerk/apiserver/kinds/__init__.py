"""One module per served kind (or family of kinds): its strategy and its resource type.

Each built-in kind's module declares its ``ServedResource`` and the ``Strategy`` subclass
or instance (``apiserver.strategy``) that holds its behaviour; ``apiserver.builtins``
lists them, one registration line each. ``custom`` is the strategy of custom resources
and the resource type an Established CRD declares; ``schemas`` the building blocks of
the built-in kinds' hand-written schemas.
"""
