"""Reading CustomResourceDefinitions from a cluster for ``lint``, ``compat`` and ``validate``.

An input argument ``cluster:NAME`` names the CRD ``NAME`` (its ``metadata.name``, e.g.
``widgets.example.com``) in the kubeconfig's current context (or ``--context``);
``cluster:CONTEXT/NAME`` names it in another context of the same kubeconfig, so two
clusters can be compared. ``kubewerk lint --cluster`` reads every installed CRD.

Each CRD read becomes one :class:`~kubewerk.govern.loader.Document` in a source of its
own, named ``cluster:CONTEXT/NAME`` (itself a valid argument), whose SARIF URI is the
object's API URL. Such documents carry no text, so findings about them have no line
number. Anything that stops a read (an unusable kubeconfig, an unreachable server, a CRD
that does not exist, a refused request) raises :class:`~kubewerk.cli.UsageError` with a
one-line message, which the command turns into exit code 2.

This module is the only place where the governance commands touch the API client:
``kubewerk.govern`` itself never imports it.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kubewerk.cli import UsageError
from kubewerk.govern.loader import Document, Source

if TYPE_CHECKING:
    from kubewerk.client import ClientConfig

CLUSTER_PREFIX = "cluster:"
IN_CLUSTER_CONTEXT = "in-cluster"
"""The context name shown for CRDs read with a pod's service account (no kubeconfig)."""

# metadata.name of a CRD: a DNS-1123 subdomain (PLURAL.GROUP)
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_PAGE_SIZE = 100  # CRDs are large (often 100s of KB); keep each list page modest


@dataclass(frozen=True, slots=True)
class ClusterRef:
    """One ``cluster:[CONTEXT/]NAME`` argument: ``context`` None means the default one."""

    arg: str
    context: str | None
    name: str


def is_cluster_arg(arg: str) -> bool:
    """Whether an input argument names a CRD in a cluster.

    An existing file or directory whose name starts with ``cluster:`` stays a file, as
    an existing path starting with ``git:`` does.
    """
    return arg.startswith(CLUSTER_PREFIX) and not os.path.exists(arg)


def parse_ref(arg: str) -> ClusterRef:
    """Parse ``cluster:NAME`` or ``cluster:CONTEXT/NAME``.

    CRD names never contain ``/`` while context names may (EKS contexts are ARNs such as
    ``arn:aws:eks:eu-west-1:123456789012:cluster/prod``), so the last ``/`` splits them.
    Raises :class:`UsageError` for an empty or malformed name.
    """
    rest = arg[len(CLUSTER_PREFIX) :]
    context, sep, name = rest.rpartition("/")
    if sep and not context:
        raise UsageError(
            f"{arg}: empty context name (expected cluster:NAME or cluster:CONTEXT/NAME)"
        )
    if not name:
        raise UsageError(
            f"{arg}: no CRD name (expected cluster:NAME or cluster:CONTEXT/NAME, "
            "e.g. cluster:widgets.example.com)"
        )
    if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
        raise UsageError(
            f"{arg}: {name!r} is not a CRD name (expected PLURAL.GROUP in lower case, "
            "e.g. widgets.example.com)"
        )
    return ClusterRef(arg, context or None, name)


def _one_line(text: str) -> str:
    return " ".join(text.split())


class ClusterReader:
    """Reads CRDs through ``kubewerk.client``: one client per context, one event loop.

    ``kubeconfig`` and ``context`` are the ``--kubeconfig``/``--context`` options (None:
    ``$KUBECONFIG`` or ``~/.kube/config`` and its current context; in a pod without a
    kubeconfig, the service account).
    """

    def __init__(self, kubeconfig: str | None = None, context: str | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.context = context

    def read(
        self,
        refs: Sequence[ClusterRef],
        *,
        read_all: bool = False,
        selector: str | None = None,
    ) -> tuple[dict[str, Document], list[Document]]:
        """Fetch the named CRDs and, with ``read_all``, every CRD of the default context.

        Returns (document per ``ref.arg``, every CRD sorted by name). ``selector`` is a
        label selector applied to the ``read_all`` listing.
        """
        return asyncio.run(self._read(refs, read_all, selector))

    async def _read(
        self, refs: Sequence[ClusterRef], read_all: bool, selector: str | None
    ) -> tuple[dict[str, Document], list[Document]]:
        from kubewerk.client import Client

        groups: dict[str | None, list[ClusterRef]] = {}
        if read_all:
            groups[self.context] = []
        for ref in refs:
            groups.setdefault(ref.context or self.context, []).append(ref)
        named: dict[str, Document] = {}
        everything: list[Document] = []
        for context, group in groups.items():
            config = self._config(context)
            shown = config.context or IN_CLUSTER_CONTEXT
            async with Client(config) as client:
                for ref in group:
                    if ref.arg not in named:
                        where = f"{CLUSTER_PREFIX}{shown}/{ref.name}"
                        crd = await self._call(client.get(_crd_type(), ref.name), where)
                        named[ref.arg] = _document(crd, shown, config.server)
                if read_all and context == self.context:
                    where = f"{CLUSTER_PREFIX}{shown}"
                    listed = await self._call(
                        client.list_all(_crd_type(), label_selector=selector, page_size=_PAGE_SIZE),
                        where,
                    )
                    items = sorted(listed.items, key=_crd_name)
                    everything = [_document(item, shown, config.server) for item in items]
        return named, everything

    def _config(self, context: str | None) -> ClientConfig:
        from kubewerk.client import ConfigError, load_config

        try:
            return load_config(self.kubeconfig, context)
        except ConfigError as exc:
            raise UsageError(_one_line(str(exc))) from None

    @staticmethod
    async def _call(awaitable: Any, where: str) -> Any:
        """Await one client call, turning every failure into a one-line UsageError."""
        from kubewerk.client import ApiError, ConfigError, ServerUnreachable

        try:
            return await awaitable
        except ConfigError as exc:  # raised lazily: TLS material, exec plugins, token files
            raise UsageError(f"{where}: {_one_line(str(exc))}") from None
        except ServerUnreachable as exc:
            raise UsageError(f"{where}: {_one_line(str(exc))}") from None
        except ApiError as exc:
            text = exc.message or f"the API server answered {exc.code} {exc.reason}"
            raise UsageError(f"{where}: {_one_line(text)}") from None


def _crd_type() -> Any:
    from kubewerk.client import CRD

    return CRD


def _crd_name(item: Any) -> str:
    meta = item.get("metadata") if isinstance(item, dict) else None
    return str(meta.get("name", "")) if isinstance(meta, dict) else ""


def _document(crd: dict[str, Any], context: str, server: str) -> Document:
    """One CRD from the API as a document in a source of its own (no text, no lines)."""
    crd.setdefault("apiVersion", "apiextensions.k8s.io/v1")
    crd.setdefault("kind", "CustomResourceDefinition")
    name = _crd_name(crd)
    uri = f"{server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{quote(name)}"
    source = Source(f"{CLUSTER_PREFIX}{context}/{name}", uri, "", is_json=True)
    return Document(source, 0, crd)


__all__ = [
    "CLUSTER_PREFIX",
    "IN_CLUSTER_CONTEXT",
    "ClusterReader",
    "ClusterRef",
    "is_cluster_arg",
    "parse_ref",
]
