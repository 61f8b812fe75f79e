"""Replacing a file in one step: readers see the old file or the whole new one.

:func:`replace_file` is the one way kubewerk writes a file that someone may be reading
(kubeconfigs, keys and certificates, reports and generated manifests): the data goes to a
new temporary file beside the target, created with ``O_EXCL`` and mode 0600 (so it is
never readable by others, whatever the umask), is given its final mode, and is renamed
over the target. A failure at any step (a full disk, Ctrl-C) leaves the target as it
was and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def replace_file(target: Path, data: bytes, mode: int) -> None:
    """Make ``target`` hold ``data`` with permission bits ``mode``, in one rename (see
    the module doc). ``target`` itself is replaced: a symbolic link there is replaced by
    the file, so callers that mean to follow one resolve it first. Raises ``OSError``
    (a missing or unwritable directory, a full disk) with ``target`` untouched."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            os.fchmod(stream.fileno(), mode)
            stream.write(data)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
