"""Checking the files a server command is given (certificates, keys, token and policy
files) before the server reads them.

A server reads such files with readers of its own (``ssl``'s ``load_cert_chain``, which
reads PEM from a path until it finds a certificate, and would read ``/dev/zero`` for
ever; whole-file reads that would fill memory; a FIFO it opens waits for a writer).
:func:`check_input_file` therefore accepts a regular file of at most the input limit
(:mod:`kubewerk.core.inputs`, ``--max-input-bytes``) and refuses, with a one-line
:class:`~kubewerk.cli.UsageError` naming the option, a device, a FIFO, a directory or a
larger file. A path that does not exist or cannot be read is left to the reader, whose
message already names it.
"""

from __future__ import annotations

import os
import stat

from kubewerk.cli import UsageError
from kubewerk.core.inputs import InputTooLarge, max_input_bytes


def check_input_file(flag: str, path: str | os.PathLike[str] | None) -> None:
    """Refuse ``path``, given as ``flag``, when it is not a regular file of at most the
    input limit (see the module doc); None (the option not given) passes."""
    if path is None:
        return
    try:
        st = os.stat(os.path.expanduser(path))
    except OSError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{flag} {os.fspath(path)}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(
            f"{flag} {os.fspath(path)}: not a regular file (a device, a pipe or a socket)"
        )
    limit = max_input_bytes()
    if st.st_size > limit:
        raise UsageError(f"{flag} {os.fspath(path)}: {InputTooLarge(limit).size_text}")
