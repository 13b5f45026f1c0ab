"""The documentation site: it builds with warnings as errors, its generated pages are current, and
the deployment files it shows start the service as the command line accepts.

(Every command and snippet of the pages runs in ``tests/test_readme.py``.)

* ``mkdocs build --strict`` (``mkdocs.yml``: a missing page, a page left out of the nav, a broken
  link or anchor, an API entry mkdocstrings cannot find are all errors);
* ``docs/cli.md`` is what ``tools/cli_reference.py`` writes from the argument parser now, and it
  documents every subcommand and every option;
* the README stays an overview (at most 250 lines) and points at every guide;
* ``examples/service/``: the systemd unit's ``ExecStart`` and the container's command are
  ``layoutverify serve`` command lines the parser accepts, and the proxy forwards to the port the
  unit listens on; the GitHub workflow's ``layoutverify`` steps parse too.
"""
from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                        "-d", str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    site = tmp_path / "site"
    for page in ("index.html", "getting-started/index.html", "cli/index.html", "api/index.html",
                 "frameworks/triton/index.html", "guides/service/index.html", "benchmarks/index.html",
                 "changelog/index.html"):
        assert (site / page).is_file(), page
    api = (site / "api" / "index.html").read_text()
    for name in ("parse_spec", "compare", "prove_many", "assert_layouts_equal"):
        assert name in api, name
    # the included pages are there in full, not as the include line
    assert "Conversions on NVIDIA H100" in (site / "benchmarks" / "index.html").read_text()
    assert "--8&lt;--" not in (site / "guides" / "service" / "index.html").read_text()


def test_cli_reference_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "cli_reference.py"), "--check"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_cli_reference_covers_every_option():
    from layoutverify.apps.cli import build_parser
    page = (ROOT / "docs" / "cli.md").read_text()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        assert f"\n## {name}\n" in page, name
        section = page.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help") and action.help != argparse.SUPPRESS:
                    assert f"`{flag}`" in section, f"{name} {flag}"


def test_readme_is_an_overview():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    for page in ("docs/getting-started.md", "docs/verdicts.md", "docs/frameworks/index.md", "docs/guides/ci-gating.md",
                 "docs/guides/scanning.md", "docs/guides/sweeps.md", "docs/guides/service.md",
                 "docs/guides/gpu-measurement.md", "docs/guides/findings.md", "docs/cli.md", "docs/api.md",
                 "benchmarks/README.md", "CHANGELOG.md"):
        assert f"]({page}" in text, page
        assert (ROOT / page).is_file(), page


def test_every_guide_is_in_the_nav():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in sorted((ROOT / "docs").rglob("*.md")):
        rel = page.relative_to(ROOT / "docs").as_posix()
        assert rel in nav, f"{rel} is not in mkdocs.yml's nav"


def _serve_args(argv: list[str]):
    from layoutverify.apps.cli import build_parser
    assert argv[0].endswith("layoutverify") and argv[1] == "serve", argv
    return build_parser().parse_args(argv[1:])


def test_systemd_unit_and_container_start_the_service_as_the_cli_accepts():
    unit = (ROOT / "examples" / "service" / "layoutverify.service").read_text()
    exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
    args = _serve_args(shlex.split(exec_start))
    assert args.host == "127.0.0.1" and args.db.startswith("postgresql://") and args.token_file
    nginx = (ROOT / "examples" / "service" / "nginx.conf").read_text()
    ports = set(re.findall(r"proxy_pass http://127\.0\.0\.1:(\d+);", nginx))
    assert ports == {str(args.port)}, ports
    # the MCP location hands the loopback service a loopback Host (the SDK's DNS-rebinding check)
    mcp = nginx.split("location /mcp", 1)[1]
    assert re.search(r"proxy_set_header Host (localhost|127\.0\.0\.1):\d+;", mcp)
    assert "proxy_buffering off;" in mcp

    containerfile = (ROOT / "examples" / "service" / "Containerfile").read_text()
    cmd = re.search(r"^CMD \[(.*)\]$", containerfile, re.M).group(1)
    shell = [part.strip().strip('"').replace('\\"', '"') for part in re.findall(r'"((?:[^"\\]|\\.)*)"', cmd)]
    assert shell[:2] == ["sh", "-c"]
    line = shell[2].removeprefix("exec ")
    # the optional parts expand to nothing (no LV_DB, no LV_TOKEN_FILE) or to one option each
    bare = re.sub(r"\$\{\w+:\+[^}]*\}", "", line)
    args = _serve_args(shlex.split(bare))
    assert args.host == "0.0.0.0" and args.port == 8000
    full = re.sub(r"\$\{LV_DB:\+([^}]*)\}", r"\1", line).replace('"$LV_DB"', "postgresql://lv@db/layoutverify")
    full = re.sub(r"\$\{LV_TOKEN_FILE:\+([^}]*)\}", r"\1", full).replace('"$LV_TOKEN_FILE"', "/run/secrets/token")
    args = _serve_args(shlex.split(full))
    assert args.db == "postgresql://lv@db/layoutverify" and args.token_file == "/run/secrets/token"
    for copied in re.findall(r"^COPY (\S+)", containerfile, re.M):
        assert (ROOT / copied).exists(), copied


def test_github_workflow_steps_parse():
    yaml = pytest.importorskip("yaml")
    from layoutverify.apps.cli import build_parser
    flow = yaml.safe_load((ROOT / "docs" / "github-actions-layoutverify.yml").read_text())
    lines = []
    for job in flow["jobs"].values():
        for step in job["steps"]:
            for ln in str(step.get("run", "")).replace("\n", " ").split("||")[0].split("&&"):
                ln = ln.strip()
                if ln.startswith("layoutverify "):
                    lines.append(ln)
    assert len(lines) >= 4
    for ln in lines:
        argv = shlex.split(ln.replace('"$GITHUB_STEP_SUMMARY"', "summary.md"))
        build_parser().parse_args(argv[1:])
