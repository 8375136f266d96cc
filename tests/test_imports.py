"""The package's import graph has no cycles, and importing it changes nothing in the environment."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

PACKAGES = ("flows", "tasks")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))}


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports anywhere in its file (functions and TYPE_CHECKING
    blocks included): ``from a.b import c`` counts as ``a.b.c`` when that is a module, else ``a.b``."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            # `import a.b.c` also runs a and a.b; the package itself is not a dependency that closes a cycle
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and target not in PACKAGES:
                found.add(target)
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that starts and ends at the same module, else None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_cycle_and_passes_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_walk_sees_imports_inside_functions():
    modules = package_modules()
    # flows.sweep_run imports these only inside its report tasks
    assert {"tasks.report.html", "tasks.analysis.stats"} <= imported("flows.sweep_run", modules["flows.sweep_run"],
                                                                      modules)


def test_no_import_cycles():
    modules = package_modules()
    graph = {name: imported(name, path, modules) for name, path in modules.items()}
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def top_level_nodes(tree: ast.Module):
    """The nodes of ``tree`` that run when the module is imported: all but function bodies."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node
            stack.extend(ast.iter_child_nodes(node))


def third_party(modules: dict[str, Path], *, top_level: bool = False) -> list[str]:
    """The modules outside the packages that their modules import (with ``top_level``, only
    those imported when a module is: not inside its functions)."""
    names = set()
    for path in modules.values():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in (top_level_nodes(tree) if top_level else ast.walk(tree)):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module)
    return sorted(n for n in names if n.split(".")[0] not in (*PACKAGES, "__future__"))


@pytest.mark.slow  # every module imported in a process of its own
def test_importing_the_packages_changes_no_environment_variable():
    modules = package_modules()
    # Libraries may set variables of their own when loaded (polars sets jemalloc's); those the
    # modules import when imported load first, so that only what the packages' own modules change
    # is compared (those imported inside functions do not load here: 13.6 -> 8.5 CPU s).
    code = ("import importlib, json, os\n"
            f"for name in {third_party(modules, top_level=True)!r}:\n"
            "    try:\n        importlib.import_module(name)\n    except ImportError:\n        pass\n"
            "before = dict(os.environ)\n"
            f"for name in {sorted(modules)!r}:\n    importlib.import_module(name)\n"
            "after = dict(os.environ)\n"
            "print(json.dumps(sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))))")
    # Without the defaults set, so that a module setting one would show; PYTHONPATH finds the packages.
    from tasks.environment import DEFAULTS

    env = {k: v for k, v in os.environ.items() if k not in DEFAULTS}
    env["PYTHONPATH"] = str(REPO)
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    changed = json.loads(result.stdout.strip().splitlines()[-1])
    assert changed == [], changed


def test_apply_defaults_sets_only_what_is_unset(monkeypatch):
    from tasks.environment import DEFAULTS, apply_defaults

    for key in DEFAULTS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DO_NOT_TRACK", "0")
    apply_defaults()
    assert os.environ["DO_NOT_TRACK"] == "0"
    assert {k: os.environ[k] for k in DEFAULTS if k != "DO_NOT_TRACK"} == {
        k: v for k, v in DEFAULTS.items() if k != "DO_NOT_TRACK"}


PROBE = """import gc, json, os, sys
print(json.dumps({"threshold": gc.get_threshold(), "argv": sys.argv[1:], "offline": os.environ.get("DO_NOT_TRACK"),
                  "main": __name__}))
sys.exit(3)
"""


def test_a_module_run_under_the_environment_gets_its_arguments_defaults_and_paced_collector(tmp_path):
    """``python -m tasks.environment -m MODULE ARG...`` (how the sweep's temporary Prefect server is
    run): the module runs as ``__main__`` with its own arguments, the offline defaults and the
    collector's thresholds set, and its exit code is the process's (uvicorn's 3 for a taken port)."""
    from tasks.environment import COLLECTOR_THRESHOLDS, DEFAULTS

    (tmp_path / "probe.py").write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in DEFAULTS}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(tmp_path)])
    result = subprocess.run([sys.executable, "-m", "tasks.environment", "-m", "probe", "--port", "a b"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 3, result.stderr
    seen = json.loads(result.stdout)
    assert seen == {"threshold": list(COLLECTOR_THRESHOLDS), "argv": ["--port", "a b"], "offline": "1",
                    "main": "__main__"}
    assert tuple(COLLECTOR_THRESHOLDS) != (700, 10, 10)  # Python's own: the setting must change something
    usage = subprocess.run([sys.executable, "-m", "tasks.environment", "-m"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=60)
    assert usage.returncode == 1 and "usage" in usage.stderr


def test_the_command_paces_the_collector_before_its_imports():
    """``invarbench`` sets the collector's thresholds before a command imports Prefect, litellm
    or Great Expectations (a third of their imports' CPU otherwise)."""
    from tasks.environment import COLLECTOR_THRESHOLDS

    code = ("import gc, sys\nsys.argv = ['invarbench', '--help']\nfrom flows.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\nprint(list(gc.get_threshold()))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == list(COLLECTOR_THRESHOLDS)


def test_only_the_command_freezes_what_its_start_up_made():
    """A sweep run by ``invarbench`` freezes its start-up's objects; one called in a process that
    did not ask for it (the test suite's, or one that paced nothing) leaves them to the collector."""
    code = ("import gc\nfrom tasks.environment import pace_collector, settle_collector\n"
            "settle_collector()\npace_collector(freeze_at_run=False)\nsettle_collector()\n"
            "before = gc.get_freeze_count()\npace_collector()\nsettle_collector()\n"
            "print(before, gc.get_freeze_count() > 0)")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0", "True"]


@pytest.mark.slow  # a command in a process of its own
def test_the_sql_command_binds_no_query_parameter_so_never_loads_pandas(tmp_path):
    # DuckDB's Python client imports pandas (0.35 s of CPU) to bind the first query parameter of a
    # process: the checks every opening of the lake makes (its tables, the materialised tables'
    # currency) take literals, so `invarbench sql` over a current lake does without it.
    from conftest import write_config
    from lake_fixtures import LakeBuilder
    from tasks.lake.refresh import refresh

    lake = LakeBuilder(tmp_path)
    lake.trial(lake.item("f"), "m1", "correct", "5")
    refresh(lake.flush().lake)
    config = write_config(tmp_path / "invarbench.toml", {"warehouse": {"path": str(tmp_path)}})
    code = ("import sys\nsys.argv = ['invarbench', 'sql', 'SELECT * FROM invariance', '--config', sys.argv[1]]\n"
            "from flows.cli import main\ntry:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
            "print('pandas loaded:', 'pandas' in sys.modules, file=sys.stderr)")
    for _ in range(2):  # the first builds the catalog, the second only checks it
        result = subprocess.run([sys.executable, "-c", code, str(config)], cwd=REPO, capture_output=True, text=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        assert result.returncode == 0, result.stderr
        assert result.stderr.strip().splitlines()[-1] == "pandas loaded: False", result.stderr
