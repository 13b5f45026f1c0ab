"""Summarise a mutmut 3 run over the verdict logic (docs/mutation.md says how the run is made).

mutmut 3 needs the package importable under its own name from the folder it mutates, so the run
happens in a scratch copy laid out under the import names (``layoutverify/`` = ``verifier/``,
``layoutverify/adapters``, ``layoutverify/corpora``, ``tests/``; see :func:`make_scratch`). This
script reads the run's results (``mutmut results --all true``) and diffs (``mutmut show``) there
and writes a JSON summary: counts per module and status, and every surviving mutant with its
function and diff.

Usage::

    python tools/mutation_report.py make-scratch /tmp/lv-mut       # then: cd /tmp/lv-mut && mutmut run
    python tools/mutation_report.py summary /tmp/lv-mut -o benchmarks/results/issue24/mutation.json
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = ["compare", "normalform", "radix", "table", "smt"]
TESTS = ["tests/test_verdict_kernel.py", "tests/test_radix_forms.py", "tests/test_compare.py", "tests/test_normalform.py",
         "tests/test_radix.py", "tests/test_batch.py", "tests/test_smt2_replay.py"]


def make_scratch(dest: Path) -> None:
    """A copy of the package under its import names, with the tests and a ``setup.cfg`` for mutmut."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "verifier", dest / "layoutverify", ignore=ignore)
    shutil.copytree(ROOT / "adapters", dest / "layoutverify" / "adapters", ignore=ignore)
    shutil.copytree(ROOT / "corpora", dest / "layoutverify" / "corpora", ignore=ignore)
    shutil.copytree(ROOT / "corpora", dest / "corpora", ignore=ignore)
    shutil.copytree(ROOT / "tests", dest / "tests", ignore=ignore)
    only = "\n".join(f"    layoutverify/core/{m}.py" for m in MODULES)
    tests = "\n".join(f"    {t}" for t in TESTS)
    (dest / "setup.cfg").write_text(f"[mutmut]\nsource_paths = layoutverify\nonly_mutate =\n{only}\n"
                                    f"pytest_add_cli_args_test_selection =\n{tests}\n"
                                    "pytest_add_cli_args = -p no:cacheprovider -q\nuse_git_change_detection = False\n"
                                    "also_copy =\n    corpora\n"
                                    # the SMT-LIB2 export and replay are not verdict logic (their test is
                                    # tests/test_smt2_replay.py, a whole file written and replayed)
                                    "do_not_mutate_patterns =\n    ^def (replay|z3_binary|expected_answers)\\(\n"
                                    "    ^    def (render|write)\\(self\n")


def _mutmut(scratch: Path, *args) -> str:
    exe = Path(sys.executable).with_name("mutmut")
    return subprocess.run([str(exe), *args], cwd=scratch, capture_output=True, text=True).stdout


def summary(scratch: Path, diffs: bool = True) -> dict:
    rows = []
    for line in _mutmut(scratch, "results", "--all", "true").splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name.startswith("layoutverify."):
            rows.append((name, status))
    counts: dict = defaultdict(Counter)
    survivors = []
    for name, status in rows:
        module = name.split(".")[2]
        counts[module][status] += 1
        if status == "survived":
            func = name.split(".", 3)[3].rsplit("__mutmut_", 1)[0].lstrip("x").replace("ǁ", ".").strip("_.")
            diff = _mutmut(scratch, "show", name) if diffs else ""
            survivors.append({"mutant": name, "module": module, "function": func,
                              "diff": [l for l in diff.splitlines() if l.startswith(("-", "+")) and
                                       not l.startswith(("---", "+++"))]})
    return {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "modules": MODULES, "tests": TESTS,
            "counts": {m: dict(c) for m, c in counts.items()},
            "total": dict(sum(counts.values(), Counter())), "survivors": survivors}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["make-scratch", "summary"])
    ap.add_argument("scratch")
    ap.add_argument("-o", "--out")
    ap.add_argument("--no-diffs", action="store_true", help="counts and names only (no mutmut show per survivor)")
    args = ap.parse_args(argv)
    scratch = Path(args.scratch).resolve()
    if args.what == "make-scratch":
        make_scratch(scratch)
        print(f"scratch copy in {scratch}: cd there and run mutmut run", file=sys.stderr)
        return 0
    doc = summary(scratch, diffs=not args.no_diffs)
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    if args.out:
        Path(args.out).write_text(text)
    print(json.dumps({"counts": doc["counts"], "total": doc["total"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
