"""The package's folders are its layers, and inner layers never import outer ones.

    base (errors, naming) < game < solve < data < watch < run < cli
                                              data < {cluster, oracle, verify} < cli
                                                     oracle < {serve, learn} < cli

game/ and solve/ import nothing from data/ or run/; run/, cluster/, oracle/ and
verify/ do not import each other, and watch/ never imports run/. The check reads every module's imports (at the top
and inside functions) with ast, and is itself tested on sources broken on purpose.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "bestemshe_dist"
ROOT_MODULES = {"__init__", "__main__", "errors", "naming"}
BASE = {"errors", "naming"}
FOLDERS = (
    "game",
    "solve",
    "data",
    "watch",
    "run",
    "cluster",
    "oracle",
    "verify",
    "serve",
    "learn",
    "results",
    "cli",
)
ALLOWED = {
    "base": set(),
    "game": {"base"},
    "solve": {"base", "game"},
    "data": {"base", "game", "solve"},
    "watch": {"base", "game", "solve", "data"},
    "run": {"base", "game", "solve", "data", "watch"},
    "cluster": {"base"},
    "oracle": {"base", "game", "solve", "data"},
    "verify": {"base", "game", "solve", "data"},
    "serve": {"base", "game", "solve", "data", "oracle"},
    "learn": {"base", "game", "solve", "data", "oracle"},
    "results": {"base", "game", "solve", "data", "watch", "oracle"},
    "top": {"base", "top", *FOLDERS},
}


def package_sources() -> dict:
    """module name -> source text, for every module of the package."""
    sources = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        sources[name] = path.read_text()
    return sources


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ("cli", "__main__"):
        return "top"
    if parts[1] in BASE:
        return "base"
    return parts[1]


def imported_modules(module: str, source: str, is_package: bool, known: set) -> list:
    """(line, module) for every import of the package's own modules in `source`."""
    package = module if is_package else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "bestemshe_dist"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "bestemshe_dist":
                continue
            for alias in node.names:  # `from pkg import module` imports that module
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if sub in known else target))
    return found


def violations(sources: dict) -> list:
    known = set(sources)
    packages = {m for m in sources if (PACKAGE.parent / m.replace(".", "/") / "__init__.py").exists()}
    out = []
    for module, source in sources.items():
        mine = layer_of(module)
        for line, target in imported_modules(module, source, module in packages, known):
            theirs = layer_of(target)
            if theirs != mine and theirs not in ALLOWED[mine]:
                out.append(f"{module}:{line} ({mine}) imports {target} ({theirs})")
    return out


def test_inner_layers_never_import_outer_ones():
    assert violations(package_sources()) == []


@pytest.mark.parametrize(
    "module, line",
    [
        ("bestemshe_dist.game.rules", "from ..data.store import Store"),
        ("bestemshe_dist.solve.kernels", "from ..run import tasks"),
        ("bestemshe_dist.data.store", "import bestemshe_dist.watch.status"),
        ("bestemshe_dist.watch.status", "from ..run.driver import solve"),
        ("bestemshe_dist.run.driver", "from ..cluster import connect"),
        ("bestemshe_dist.cluster.local", "from ..data.store import Store"),
        ("bestemshe_dist.oracle.tablebase", "from bestemshe_dist.verify.driver import verify"),
        ("bestemshe_dist.run.driver", "from ..oracle import Tablebase"),
        ("bestemshe_dist.naming", "from .game import variant"),
        ("bestemshe_dist.oracle.play", "from ..serve import app"),
        ("bestemshe_dist.serve.app", "from ..run.driver import solve"),
        ("bestemshe_dist.learn.sample", "from ..cli.args import dask_client"),
    ],
)
def test_the_layer_check_fails_when_a_module_reaches_outward(module, line):
    sources = package_sources()
    clean = violations(sources)
    # at the top of the module, and inside a function (lazy imports count too)
    for broken in (line + "\n" + sources[module], sources[module] + f"\n\ndef _late():\n    {line}\n"):
        new = [v for v in violations({**sources, module: broken}) if v not in clean]
        assert len(new) == 1 and new[0].startswith(module + ":"), new


def test_every_module_sits_in_a_layer_folder_that_says_what_it_owns():
    flat = {p.stem for p in PACKAGE.glob("*.py")}
    assert flat == ROOT_MODULES, f"modules outside the layer folders: {sorted(flat - ROOT_MODULES)}"
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(FOLDERS)
    for folder in FOLDERS:
        doc = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text()))
        assert doc and "May import" in doc, f"{folder}/__init__.py must say what it owns and may import"
        for module in (PACKAGE / folder).glob("*.py"):  # each module it holds is listed there
            if module.stem != "__init__":
                assert f"{module.stem}.py" in doc, f"{folder}/__init__.py does not list {module.name}"


def _loaded(code: str) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code + "\nimport json, sys\n"
            "print(json.dumps({m: m in sys.modules for m in ('numba', 'zstandard')}))",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_plan_and_status_load_neither_numba_nor_zstandard(tmp_path):
    none = {"numba": False, "zstandard": False}
    assert _loaded("import bestemshe_dist.game.dag") == none
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {"format": "bestemshe-tablebase", "version": 1, "variant": {"stones": 8, "pits": 2}, "layers": {}}
        )
    )
    status = _loaded(
        "import sys\nfrom bestemshe_dist.cli import main\n"
        f"sys.argv = ['bestemshe-dist', 'status', {str(tmp_path)!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code"
    )
    assert status == none
    # and the solver's own imports do load them (the check above can fail)
    assert _loaded("import bestemshe_dist.solve.pair; import bestemshe_dist.data.format") == {
        "numba": True,
        "zstandard": True,
    }


def test_no_folder_is_named_as_build_output():
    """dist/, build/ and the like are what packaging tools write, and what tools skip."""
    output_names = {"dist", "build", "out", "target", "lib", "var"}
    folders = {p.name for p in PACKAGE.rglob("*") if p.is_dir()}
    assert not folders & output_names


def _ignored_by(gitignore: Path, tmp_path: Path) -> list:
    """the tracked files of the project that `gitignore` would ignore."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_bytes(gitignore.read_bytes())
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=tmp_path,
        input=tracked,
        capture_output=True,
        text=True,
    )
    assert done.returncode in (0, 1), done.stderr  # 1: nothing ignored
    return done.stdout.split()


def test_githubs_python_gitignore_ignores_no_tracked_file(tmp_path):
    standard = ROOT / "tests" / "fixtures" / "gitignore" / "Python.gitignore"
    assert _ignored_by(standard, tmp_path / "standard") == []
    # and the check can fail: a pattern that matches a tracked file is reported
    broken = tmp_path / "broken.gitignore"
    broken.write_text(standard.read_text() + "\nnaming.py\n")
    assert _ignored_by(broken, tmp_path / "broken") == ["bestemshe_dist/naming.py"]
