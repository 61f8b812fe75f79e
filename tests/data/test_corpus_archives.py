"""The in-repository corpus copy: complete, traceable to its sources, licensed, reproducible."""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import pytest

from .corpus_archives import (
    ARCHIVE_DIR,
    PARTS,
    SUFFIX,
    CorpusArchiveError,
    archive_bytes,
    differences,
    projects,
    unpack,
)

SOURCE_LINE = re.compile(
    r"# SOURCE: github\.com/(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+) \S+ @ [0-9a-f]{12}\n"
)
LICENSES = ARCHIVE_DIR / "LICENSES.md"


def corpus_files(root: Path) -> list[str]:
    """Paths (relative, POSIX) of every file under ``root``'s crds/ and crd-history/."""
    return sorted(
        p.relative_to(root).as_posix()
        for part in PARTS
        for p in (root / part).rglob("*")
        if p.is_file()
    )


def test_whole_corpus_is_in_the_repository(corpus_dir: Path) -> None:
    """Every project, CRD and history version the suite's pinned counts were taken on."""
    files = corpus_files(corpus_dir)
    assert len(projects()) == 16
    assert sum(f.startswith("crds/") for f in files) == 258
    assert sum(f.startswith("crd-history/") for f in files) == 839


def test_check_reports_every_difference_from_a_corpus(corpus_dir: Path, tmp_path: Path) -> None:
    """``--check`` (``differences``) is how the copy is compared with the shared corpus it was
    packed from; the suite itself reads nothing outside the repository."""
    archives = tmp_path / "archives"
    archives.mkdir()
    project = min(projects(), key=lambda p: (ARCHIVE_DIR / f"{p}{SUFFIX}").stat().st_size)
    (archives / f"{project}{SUFFIX}").write_bytes((ARCHIVE_DIR / f"{project}{SUFFIX}").read_bytes())
    corpus = tmp_path / "corpus"
    for part in PARTS:
        source = corpus_dir / part / project
        if source.is_dir():
            for f in source.rglob("*"):
                if f.is_file():
                    target = corpus / f.relative_to(corpus_dir)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(f.read_bytes())
    assert differences(corpus, archives) == []
    first = sorted((corpus / "crds" / project).glob("*.yaml"))[0]
    first.write_bytes(first.read_bytes() + b"# changed\n")
    extra = corpus / "crds" / project / "zz-new.yaml"
    extra.write_text("# new\n")
    rel = first.relative_to(corpus).as_posix()
    assert differences(corpus, archives) == [
        f"only in {corpus}: crds/{project}/zz-new.yaml",
        f"differs: {rel}",
    ]


def test_every_file_names_its_source_and_every_project_its_licence(corpus_dir: Path) -> None:
    licences = LICENSES.read_text(encoding="utf-8")
    for rel in corpus_files(corpus_dir):
        with open(corpus_dir / rel, encoding="utf-8") as fh:
            first = fh.readline()
        m = SOURCE_LINE.fullmatch(first)
        assert m, (rel, first)
        assert f"{m['owner']}+{m['repo']}" == rel.split("/")[1], (rel, first)
    for project in projects():
        owner, repo = project.split("+")
        assert f"https://github.com/{owner}/{repo}" in licences, project
    assert (
        (ARCHIVE_DIR / "LICENSE-Apache-2.0.txt")
        .read_text(encoding="utf-8")
        .lstrip()
        .startswith("Apache License\n")
    )


def test_packing_reproduces_the_committed_archive(corpus_dir: Path) -> None:
    """Packing the unpacked files gives the committed bytes (checked on the smallest archive)."""
    smallest = min(projects(), key=lambda p: (ARCHIVE_DIR / f"{p}{SUFFIX}").stat().st_size)
    assert archive_bytes(corpus_dir, smallest) == (ARCHIVE_DIR / f"{smallest}{SUFFIX}").read_bytes()


def _archive(tmp_path: Path, project: str, members: dict[str, bytes]) -> Path:
    folder = tmp_path / "archives"
    folder.mkdir()
    with tarfile.open(folder / f"{project}{SUFFIX}", "w:xz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return folder


@pytest.mark.parametrize(
    "name",
    [
        "crds/other+project/x.yaml",  # another project's file
        "crds/a+b/../../../escape.yaml",  # climbs out of the destination
        "/crds/a+b/x.yaml",  # absolute
        "README.md",  # not under crds/ or crd-history/
        "crds/a+b",  # no file name below the project
    ],
)
def test_unpack_refuses_a_member_outside_its_project(tmp_path: Path, name: str) -> None:
    folder = _archive(tmp_path, "a+b", {"crds/a+b/ok.yaml": b"ok\n", name: b"bad\n"})
    dest = tmp_path / "out"
    with pytest.raises(CorpusArchiveError, match=re.escape(name)):
        unpack(folder, dest)
    assert not dest.exists()  # nothing of that archive was written


def test_unpack_lays_out_a_corpus(tmp_path: Path) -> None:
    folder = _archive(
        tmp_path,
        "a+b",
        {"crds/a+b/x.yaml": b"x\n", "crd-history/a+b/g_p/2024-01-01_0.yaml": b"h\n"},
    )
    root = unpack(folder, tmp_path / "out")
    assert corpus_files(root) == ["crd-history/a+b/g_p/2024-01-01_0.yaml", "crds/a+b/x.yaml"]
    assert (root / "crds/a+b/x.yaml").read_bytes() == b"x\n"


def test_unpack_without_archives_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path))):
        unpack(tmp_path, tmp_path / "out")
