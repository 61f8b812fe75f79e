"""Governance benchmark: ``kubewerk lint`` over the whole corpus and ``kubewerk compat``
over every consecutive pair of the CRD history, as ratios to only parsing the same YAML
(``yaml.load_all`` with ``yaml.CSafeLoader``, reading the same files) in the same run.

Lint is timed the way the CLI runs it (streaming the files, the garbage collector paused
while parsing and linting), with every rule and with every rule but ``structural-schema``
(whose cost is the schema engine's ``validate_crd``). The baseline runs with the garbage
collector in its default state, as a plain parse would; a second baseline with it paused
is printed for comparison. Best of ``--repeat`` runs.

    .venv/bin/python benchmarks/govern.py [--repeat 3] [--corpus ../shared/corpus]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from kubewerk.govern.compat import compare_documents
from kubewerk.govern.lint import lint_documents
from kubewerk.govern.loader import gc_paused, iter_sources, parse, read_file
from kubewerk.govern.rules import RULES

DEFAULT_CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def parse_only(files: list[Path]) -> None:
    for f in files:
        for _ in yaml.load_all(f.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader):
            pass


def parse_only_gc_paused(files: list[Path]) -> None:
    with gc_paused():
        parse_only(files)


def lint(crds_dir: Path, rules: frozenset[str]) -> int:
    with gc_paused():
        docs = (d for batch in iter_sources([str(crds_dir)]) for d in batch)
        return len(lint_documents(docs, rules).findings)


def history_pairs(history: Path) -> list[tuple[Path, Path]]:
    pairs: list[tuple[Path, Path]] = []
    for d in sorted(history.glob("*/*")):
        pairs.extend(itertools.pairwise(sorted(d.glob("*.yaml"))))
    return pairs


def compat_all(pairs: list[tuple[Path, Path]]) -> int:
    """Each file parsed once (a file is the NEW of one pair and the OLD of the next)."""
    count = 0
    parsed: dict[Path, list[object]] = {}
    with gc_paused():
        for old, new in pairs:
            for p in (old, new):
                if p not in parsed:
                    parsed[p] = parse(read_file(p))  # type: ignore[assignment]
            count += len(compare_documents(parsed.pop(old), parsed[new]).findings)  # type: ignore[arg-type]
    return count


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = ap.parse_args()
    crds_dir = args.corpus / "crds"
    crd_files = sorted(crds_dir.rglob("*.yaml"))
    pairs = history_pairs(args.corpus / "crd-history")
    hist_files = sorted({p for pair in pairs for p in pair})
    mb = sum(f.stat().st_size for f in crd_files) / 1e6
    hmb = sum(f.stat().st_size for f in hist_files) / 1e6

    all_rules = frozenset(RULES)
    own_rules = all_rules - {"structural-schema"}
    t_parse = best(lambda: parse_only(crd_files), args.repeat)
    t_parse_nogc = best(lambda: parse_only_gc_paused(crd_files), args.repeat)
    t_lint = best(lambda: lint(crds_dir, all_rules), args.repeat)
    t_lint_own = best(lambda: lint(crds_dir, own_rules), args.repeat)
    t_hparse = best(lambda: parse_only(hist_files), args.repeat)
    t_compat = best(lambda: compat_all(pairs), args.repeat)

    print(
        f"corpus: {len(crd_files)} CRD files ({mb:.1f} MB); history: {len(pairs)} pairs over "
        f"{len(hist_files)} files ({hmb:.1f} MB); best of {args.repeat}"
    )
    print(f"{'operation':44} {'time':>9} {'ratio':>7}")
    print(f"{'parse corpus (CSafeLoader, baseline)':44} {t_parse:8.2f}s {1:6.2f}x")
    print(f"{'parse corpus, gc paused':44} {t_parse_nogc:8.2f}s {t_parse_nogc / t_parse:6.2f}x")
    print(f"{'lint corpus, all rules':44} {t_lint:8.2f}s {t_lint / t_parse:6.2f}x")
    print(
        f"{'lint corpus, all but structural-schema':44} "
        f"{t_lint_own:8.2f}s {t_lint_own / t_parse:6.2f}x"
    )
    print(f"{'parse history (CSafeLoader, baseline)':44} {t_hparse:8.2f}s {1:6.2f}x")
    print(f"{'compat all history pairs':44} {t_compat:8.2f}s {t_compat / t_hparse:6.2f}x")
    ratio = t_lint / t_parse
    print(f"target lint <= 3x parse: {'met' if ratio <= 3 else 'NOT met'} ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
