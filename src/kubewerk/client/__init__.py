"""kubewerk's async Kubernetes API client (its own HTTP/1.1 pool on asyncio + httptools, orjson).

    from kubewerk.client import Client, SECRET
    async with Client.from_kubeconfig() as client:
        secret = await client.get(SECRET, "db-password", "default")      # dict
        db = await client.get(Database, "main", "default")               # typed model

See :mod:`kubewerk.client.client` for the retry and error guarantees,
:mod:`kubewerk.client.config` for kubeconfig/in-cluster loading and
:mod:`kubewerk.client.watch` for list-then-watch with resume and relist.
"""

from kubewerk.client.client import Client, ObjectList, PatchType, RetryPolicy, WatchEvent
from kubewerk.client.config import (
    ClientConfig,
    load_config,
    load_incluster,
    load_kubeconfig,
)
from kubewerk.client.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    ConfigError,
    Conflict,
    Expired,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServerTimeout,
    ServerUnreachable,
    ServiceUnavailable,
    Timeout,
    TooManyRequests,
    Unauthorized,
    error_from_status,
)
from kubewerk.client.resources import (
    CONFIGMAP,
    CRD,
    DEPLOYMENT,
    EVENT,
    LEASE,
    NAMESPACE,
    POD,
    SECRET,
    SERVICE,
    SERVICEACCOUNT,
    ResourceModel,
    ResourceType,
    resource_type_of,
    to_dict,
)
from kubewerk.client.watch import Listed, list_watch

__all__ = [
    "CONFIGMAP",
    "CRD",
    "DEPLOYMENT",
    "EVENT",
    "LEASE",
    "NAMESPACE",
    "POD",
    "SECRET",
    "SERVICE",
    "SERVICEACCOUNT",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Client",
    "ClientConfig",
    "ConfigError",
    "Conflict",
    "Expired",
    "Forbidden",
    "Gone",
    "InternalError",
    "Invalid",
    "Listed",
    "MethodNotAllowed",
    "NotFound",
    "ObjectList",
    "PatchType",
    "ResourceModel",
    "ResourceType",
    "RetryPolicy",
    "ServerTimeout",
    "ServerUnreachable",
    "ServiceUnavailable",
    "Timeout",
    "TooManyRequests",
    "Unauthorized",
    "WatchEvent",
    "error_from_status",
    "list_watch",
    "load_config",
    "load_incluster",
    "load_kubeconfig",
    "resource_type_of",
    "to_dict",
]
