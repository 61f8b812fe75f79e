"""TLS for the webhook server: a serving certificate reloaded from its files, and optional
client-certificate verification.

:class:`ReloadingTLS` owns one ``ssl.SSLContext``. :meth:`ReloadingTLS.reload_if_changed`
compares the files' identity (device, inode, size, modification time) with what was
last loaded and, when any changed, loads the pair again *into the same context*:
OpenSSL gives every new connection the context's current certificate and key, so new
handshakes use the new pair at once, connections already open keep theirs, and nothing
restarts. A pair that does not load (the key written before the certificate, say) is
skipped, the previous pair stays in use, and the next check tries again — the way
controller-runtime's certificate watcher behaves. :meth:`ReloadingTLS.watch` checks
every ``interval`` seconds (1 s by default).

With ``client_ca_file`` the server requires a client certificate signed by that CA
(kube-apiserver presents one when its admission configuration names a client
certificate for the webhook); a connection without one fails its handshake. A changed
CA file is loaded with the pair: its certificates are added to those trusted (OpenSSL
cannot forget a loaded CA; restart the server to stop trusting one). TLS 1.2 is the
minimum, as kube-apiserver's own default.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ReloadingTLS", "TLSFiles"]

log = logging.getLogger("kubewerk.webhook.tls")


@dataclass(frozen=True)
class TLSFiles:
    """Where the serving certificate (PEM, the chain), its key and the optional client CA
    bundle live."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None

    @classmethod
    def of(
        cls,
        cert_file: str | os.PathLike[str],
        key_file: str | os.PathLike[str],
        client_ca_file: str | os.PathLike[str] | None = None,
    ) -> TLSFiles:
        return cls(
            Path(cert_file), Path(key_file), Path(client_ca_file) if client_ca_file else None
        )


def _identity(path: Path | None) -> tuple[int, int, int, int] | None:
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class ReloadingTLS:
    """A server ``SSLContext`` whose certificate follows its files (see the module doc).

    The constructor loads the files and raises ``OSError``/``ssl.SSLError`` with the
    file's name when they cannot be read or do not form a pair: a server never starts
    without a working certificate.
    """

    def __init__(self, files: TLSFiles) -> None:
        self.files = files
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self.reloads = 0
        """How many times a changed pair was loaded after the first."""
        self._seen = self._identities()
        self._load()

    def _identities(self) -> tuple[object, ...]:
        f = self.files
        return (_identity(f.cert_file), _identity(f.key_file), _identity(f.client_ca_file))

    def _load(self) -> None:
        f = self.files
        try:
            self.context.load_cert_chain(f.cert_file, f.key_file)
        except ssl.SSLError as exc:
            raise ssl.SSLError(
                exc.errno,
                f"{f.cert_file} and {f.key_file} are not a usable certificate and key: "
                f"{exc.reason or exc}",
            ) from None
        except OSError as exc:  # unreadable: OpenSSL's error does not name the file
            raise OSError(
                exc.errno,
                f"cannot read the certificate {f.cert_file} and key {f.key_file}: "
                f"{exc.strerror or exc}",
            ) from None
        if f.client_ca_file is not None:
            try:
                self.context.load_verify_locations(cafile=f.client_ca_file)
            except ssl.SSLError as exc:
                raise ssl.SSLError(
                    exc.errno, f"{f.client_ca_file} is not a usable CA bundle: {exc.reason or exc}"
                ) from None
            except OSError as exc:
                raise OSError(
                    exc.errno,
                    f"cannot read the CA bundle {f.client_ca_file}: {exc.strerror or exc}",
                ) from None
            self.context.verify_mode = ssl.CERT_REQUIRED

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed since the last load; True when a new pair
        is now in use. Failures are logged and leave the previous pair in place."""
        seen = self._identities()
        if seen == self._seen:
            return False
        try:
            self._load()
        except (OSError, ssl.SSLError) as exc:
            log.warning(
                "webhook TLS files changed but cannot be loaded yet "
                "(keeping the previous pair): %s",
                exc,
            )
            return False
        self._seen = seen
        self.reloads += 1
        log.info("webhook serving certificate reloaded from %s", self.files.cert_file)
        return True

    async def watch(self, interval: float = 1.0) -> None:
        """Check the files every ``interval`` seconds until cancelled."""
        while True:
            await asyncio.sleep(interval)
            self.reload_if_changed()
