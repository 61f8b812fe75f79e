"""The in-repository copy of the real-world CRD corpus: one ``<owner+repo>.tar.xz`` per project.

Each archive in ``tests/data/corpus`` holds that project's ``crds/<owner+repo>/*.yaml`` and, when
it has one, its ``crd-history/<owner+repo>/<group>_<plural>/*.yaml``, byte for byte as in the
corpus they were packed from (every file starts with its ``# SOURCE:`` line). ``unpack`` lays them
out again as a corpus directory (``crds/``, ``crd-history/``), which is what the ``corpus_dir``
fixture hands to the tests. ``pack`` writes the archives reproducibly (sorted members, no
timestamps or owners), so packing the same files twice gives the same bytes and a refresh shows
up in git only for the projects whose files changed.

The suite reads only the archives. Repacking them from a corpus checkout, or checking that
they still hold exactly that corpus, is ``scripts/refresh_corpus.py``.
"""

from __future__ import annotations

import io
import lzma
import os
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

ARCHIVE_DIR = Path(__file__).resolve().parent / "corpus"
PARTS = ("crds", "crd-history")
SUFFIX = ".tar.xz"
_PRESET = 9 | lzma.PRESET_EXTREME


class CorpusArchiveError(ValueError):
    """An archive holds something other than its own project's corpus files."""


def projects(archive_dir: Path = ARCHIVE_DIR) -> list[str]:
    """The ``owner+repo`` names of the archives in ``archive_dir``, sorted."""
    return sorted(p.name.removesuffix(SUFFIX) for p in archive_dir.glob(f"*{SUFFIX}"))


def _check_member(project: str, member: tarfile.TarInfo) -> None:
    """Accept only regular files at ``crds/<project>/...`` or ``crd-history/<project>/...``."""
    parts = PurePosixPath(member.name).parts
    if not member.isfile():
        raise CorpusArchiveError(f"{project}{SUFFIX}: {member.name}: not a regular file")
    if len(parts) < 3 or parts[0] not in PARTS or parts[1] != project or ".." in parts:
        raise CorpusArchiveError(
            f"{project}{SUFFIX}: {member.name}: outside crds/{project}/ and crd-history/{project}/"
        )


def unpack(archive_dir: Path, dest: Path) -> Path:
    """Extract every archive of ``archive_dir`` into ``dest`` and return ``dest``.

    ``dest`` then holds ``crds/<owner+repo>/*.yaml`` and ``crd-history/<owner+repo>/...``.
    Raises CorpusArchiveError, before writing anything of that archive, if an archive holds a
    member that is not a regular file of its own project, and FileNotFoundError if there is no
    archive at all.
    """
    names = projects(archive_dir)
    if not names:
        raise FileNotFoundError(f"no corpus archives (*{SUFFIX}) in {archive_dir}")
    for project in names:
        with tarfile.open(archive_dir / f"{project}{SUFFIX}", "r:xz") as tar:
            members = tar.getmembers()
            for member in members:
                _check_member(project, member)
            for member in members:
                source = tar.extractfile(member)
                assert source is not None  # a regular file, checked above
                target = dest.joinpath(*PurePosixPath(member.name).parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read())
    return dest


def _project_files(corpus: Path, project: str) -> list[Path]:
    """The project's corpus files, sorted by their path inside the corpus."""
    files = [p for part in PARTS for p in (corpus / part / project).rglob("*") if p.is_file()]
    return sorted(files, key=lambda p: p.relative_to(corpus).as_posix())


def archive_bytes(corpus: Path, project: str) -> bytes:
    """The archive of one project's files in ``corpus``, the same bytes for the same files."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in _project_files(corpus, project):
            data = path.read_bytes()
            info = tarfile.TarInfo(path.relative_to(corpus).as_posix())
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return lzma.compress(buf.getvalue(), format=lzma.FORMAT_XZ, preset=_PRESET)


def pack(corpus: Path, archive_dir: Path = ARCHIVE_DIR) -> dict[str, int]:
    """Rewrite ``archive_dir`` from ``corpus``: one archive per project of ``corpus/crds``.

    Archives whose bytes would not change are left untouched, and archives of projects no
    longer in ``corpus`` are removed. Returns each project's archive size in bytes.
    """
    wanted = sorted(p.name for p in (corpus / "crds").iterdir() if p.is_dir())
    if not wanted:
        raise FileNotFoundError(f"no project folders in {corpus / 'crds'}")
    strays = sorted(p.name for p in (corpus / "crd-history").iterdir() if p.name not in wanted)
    if strays:
        raise CorpusArchiveError(f"crd-history folders without crds: {', '.join(strays)}")
    archive_dir.mkdir(parents=True, exist_ok=True)
    sizes: dict[str, int] = {}
    for project in wanted:
        data = archive_bytes(corpus, project)
        target = archive_dir / f"{project}{SUFFIX}"
        if not target.is_file() or target.read_bytes() != data:
            with tempfile.NamedTemporaryFile(dir=archive_dir, delete=False) as tmp:
                tmp.write(data)
            os.chmod(tmp.name, 0o644)
            os.replace(tmp.name, target)
        sizes[project] = len(data)
    for project in projects(archive_dir):
        if project not in wanted:
            (archive_dir / f"{project}{SUFFIX}").unlink()
    return sizes


def differences(corpus: Path, archive_dir: Path = ARCHIVE_DIR) -> list[str]:
    """Where the archives of ``archive_dir`` differ from ``corpus``: files only in one of
    them, and files whose bytes differ (relative POSIX paths, sorted; empty when equal)."""

    def files(root: Path) -> dict[str, Path]:
        return {
            p.relative_to(root).as_posix(): p
            for part in PARTS
            for p in (root / part).rglob("*")
            if p.is_file()
        }

    with tempfile.TemporaryDirectory() as tmp:
        ours = files(unpack(archive_dir, Path(tmp)))
        theirs = files(corpus)
        out = [f"only in the archives: {f}" for f in sorted(ours.keys() - theirs.keys())]
        out += [f"only in {corpus}: {f}" for f in sorted(theirs.keys() - ours.keys())]
        out += [
            f"differs: {f}"
            for f in sorted(ours.keys() & theirs.keys())
            if ours[f].read_bytes() != theirs[f].read_bytes()
        ]
    return out
