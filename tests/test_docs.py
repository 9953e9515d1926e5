"""The documentation: the site builds with no broken link, anchor or API reference;
the command reference is the CLI's own parser; every path the prose names exists;
the README stays a short front page that starts with the two commands."""

import ast
import importlib.util
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

DOCS = ROOT / "docs"
README = ROOT / "README.md"
PACKAGE = ROOT / "bestemshe_dist"
FRONT_PAGES = [README, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"]
FIRST_COMMANDS = [
    "python3 -m venv .venv && .venv/bin/pip install -e . && "
    ".venv/bin/bestemshe-dist solve --stones 50 --min-captured 36 --out tablebase",
    "bash scripts/test.sh",
]
# Folders a walk for file names skips: environments, caches, build output.
SKIPPED = {
    ".git",
    ".venv",
    "site",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".ruff_cache",
    ".mypy_cache",
}
FILE_NAME = re.compile(r"^[\w.-]+\.(py|sh|ipynb|sbatch|toml)$")
PATH = re.compile(r"^[\w.-]+(/[\w.-]+)*/?$")
MODULE = re.compile(r"^bestemshe_dist(\.\w+)+$")


def _cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pages() -> list:
    return sorted(DOCS.rglob("*.md")) + [p for p in FRONT_PAGES if p.exists()]


def _spans(text: str) -> list:
    """Everything the text puts in backticks (inline code)."""
    return re.findall(r"`([^`\n]+)`", text)


def _file_names() -> set:
    names = set()
    for _folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED and not d.endswith(".egg-info")]
        names.update(files)
    return names


def _defined(tree, name: str):
    """The node that defines `name` at the top of `tree` (a module or class body)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return node
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return node
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return node
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            return node
    return None


def module_problem(dotted: str) -> str | None:
    """Why `bestemshe_dist.x.y[.name[.attr]]` names nothing in the tree (None if it does)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:cut])
        source = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if source.exists():
            break
    else:
        return "no such module"
    node = ast.parse(source.read_text())
    for name in parts[cut:]:
        node = _defined(node, name) if hasattr(node, "body") else None
        if node is None:
            return f"{'.'.join(parts[:cut])} defines no {'.'.join(parts[cut:])}"
    return None


def path_problem(span: str, top: set, folders: set, names: set) -> str | None:
    """Why a path or file name in backticks is not in the tree (None if it is, or if
    the span is no repository path: a URL, a layer file, `.bestemshe/...`)."""
    if FILE_NAME.match(span) and "/" not in span:
        return None if span in names else "no file of that name in the repository"
    if "/" not in span or not PATH.match(span):
        return None
    first = span.split("/")[0]
    if first in top:
        return None if (ROOT / span).exists() else "no such path"
    if first in folders or first == "dist":  # a package folder, relative to bestemshe_dist/
        return None if (PACKAGE / span).exists() else "no such path in bestemshe_dist/"
    return None


def test_the_command_reference_is_the_parsers():
    committed = (DOCS / "reference" / "cli.md").read_text()
    assert _cli_reference().render() == committed, (
        "docs/reference/cli.md differs from the CLI's parser: run `python scripts/cli_reference.py`"
    )


def test_the_command_reference_ignores_the_terminal_width(monkeypatch):
    reference = _cli_reference()
    monkeypatch.setenv("COLUMNS", "40")
    narrow = reference.render()
    monkeypatch.setenv("COLUMNS", "300")
    assert reference.render() == narrow


def test_every_command_has_a_section():
    from bestemshe_dist.cli import build_parser

    committed = (DOCS / "reference" / "cli.md").read_text()
    for name in build_parser().commands:
        assert f"\n## {name}\n" in committed and f"usage: bestemshe-dist {name} " in committed


def test_the_site_builds_strictly(tmp_path):
    """mkdocs --strict with mkdocs.yml's validation: a broken link, a missing anchor,
    a page left out of the nav or an API reference that resolves to nothing fails."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about MkDocs 2.0
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert warnings == []
    api = (tmp_path / "site" / "reference" / "api.html").read_text()
    for name in ("Tablebase.probe_many", "Tablebase.mainline", "match.greedy_policy"):
        assert f'id="bestemshe_dist.{"oracle.tablebase" if "Tablebase" in name else "learn"}.{name}"' in api


def test_every_path_the_docs_name_exists():
    top = {p.name for p in ROOT.iterdir() if p.name not in SKIPPED}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    names = _file_names()
    problems = []
    for page in _pages():
        for span in _spans(page.read_text()):
            span = span.strip()
            why = module_problem(span) if MODULE.match(span) else path_problem(span, top, folders, names)
            if why:
                problems.append(f"{page.relative_to(ROOT)}: `{span}`: {why}")
    assert problems == []


@pytest.mark.parametrize(
    "span, bad",
    [
        ("bestemshe_dist/dist/driver.py", True),
        ("dist/plan.py", True),
        ("bestemshe_dist/dashboard.py", True),
        ("bestemshe_dist/watch/dashboard.py", False),
        ("run/hostpair.py", False),
        ("hostmem.py", False),
        ("plan.py", True),
        ("s3://bucket/prefix", False),
        (".bestemshe/lease.json", False),
        ("benchmarks/solve_bench.py", False),
        ("benchmarks/nope_bench.py", True),
    ],
)
def test_the_path_check_catches_drift(span, bad):
    top = {p.name for p in ROOT.iterdir() if p.name not in SKIPPED}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert (path_problem(span, top, folders, _file_names()) is not None) == bad


@pytest.mark.parametrize(
    "dotted, bad",
    [
        ("bestemshe_dist.watch.dashboard", False),
        ("bestemshe_dist.oracle.tablebase.Tablebase.probe_many", False),
        ("bestemshe_dist.oracle.tablebase.Tablebase.no_such_method", True),
        ("bestemshe_dist.dist.plan", True),
        ("bestemshe_dist.cluster.connect", False),
    ],
)
def test_the_module_check_catches_drift(dotted, bad):
    assert (module_problem(dotted) is not None) == bad


def test_the_front_pages_link_to_files_that_exist():
    problems = []
    for page in FRONT_PAGES:
        if not page.exists():
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            target = target.split("#")[0]
            if target and not re.match(r"^[a-z]+:", target) and not (page.parent / target).exists():
                problems.append(f"{page.name}: {target}")
    assert problems == []


def test_the_readme_is_short_and_starts_with_the_two_commands():
    text = README.read_text()
    lines = text.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail into docs/"
    code = [line[4:] for line in lines[: lines.index("## What it is")] if line.startswith("    ")]
    assert code == FIRST_COMMANDS
    first_code = next(i for i, line in enumerate(lines) if line.startswith("    "))
    assert all(
        not line.strip() or line.startswith(("#", "On a fresh machine")) for line in lines[:first_code]
    )
    assert "pip install -e '.[notebooks]'" in text and "jupyter lab notebooks/" in text


def test_the_docs_stand_alone():
    """A clone has no shared notes beside it: the rules, rank and format are in docs/."""
    for page in _pages():
        text = page.read_text()
        for word in ("SPEC.md", "DESIGN.md", "../shared", "shared notes"):
            assert word not in text, f"{page.relative_to(ROOT)} cites {word}"
