"""Writing an output file whole or not at all.

A command that writes ``-o FILE`` (or files into ``-o DIR``) writes each one to a
temporary file beside it and renames that over the name: a reader never sees half a
report, and a command that fails (a full disk, Ctrl-C, an error found late) leaves the
previous file as it was, and no temporary file behind. A name that is not a regular file
(``/dev/stdout``, a FIFO a reader waits on) is written in place: renaming over it would
replace the device or pipe instead of writing to it. A symbolic link is followed, so the
file it points to is replaced and the link stays.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kubewerk.core.atomicfile import replace_file


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` as the module doc says. Raises ``OSError`` (a
    missing or unwritable directory, a full disk) with ``path`` untouched; a new file gets
    the mode ``open`` would give it, a replaced one keeps its mode."""
    target = Path(os.path.realpath(path))
    data = text.encode("utf-8")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    else:
        if not stat.S_ISREG(st.st_mode):
            with open(target, "wb") as stream:
                stream.write(data)
            return
        mode = stat.S_IMODE(st.st_mode)
    replace_file(target, data, mode)


def write_if_changed(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` with :func:`write_atomic` unless the file already holds
    exactly it (so a regenerated, unchanged file keeps its modification time); True when it
    was written. The comparison reads at most one byte more than ``text`` takes, so a huge
    or endless file in the way costs nothing; one that cannot be read is replaced."""
    data = text.encode("utf-8")
    try:
        # stat first: opening a FIFO to read it would wait for a writer
        if stat.S_ISREG(os.stat(path).st_mode):
            with open(path, "rb") as stream:
                if stream.read(len(data) + 1) == data:
                    return False
    except OSError:
        pass
    write_atomic(path, text)
    return True
