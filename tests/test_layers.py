"""The layers, read from the source: accounts <- jobs <- catalog <- review.
An app imports only apps below it, and no package's modules import each
other in a circle. Every import counts, also one inside a function."""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = ["accounts", "jobs", "catalog", "review"]  # each may import only those before it


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module a file imports, absolute, at any depth of the file."""
    found = set()
    package = _module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else _module_name(path)
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            # `from jobs import registry` imports the module jobs.registry.
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _sources(app: str) -> list[Path]:
    return sorted(p for p in (ROOT / app).rglob("*.py") if "migrations" not in p.parts)


def _top(module: str) -> str:
    return module.split(".", 1)[0]


@pytest.mark.parametrize("app", APPS)
def test_an_app_imports_no_app_above_it(app):
    above = set(APPS[APPS.index(app) + 1 :])
    offending = sorted(
        f"{path.relative_to(ROOT)} imports {module}"
        for path in _sources(app)
        for module in _imports(path)
        if _top(module) in above
    )
    assert offending == []


def test_the_import_check_sees_imports_inside_functions(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    source = tmp_path / "jobs" / "example.py"
    source.parent.mkdir()
    source.write_text("def f():\n    from catalog.models import PriceSheet\n    import review.views\n")
    assert {"catalog.models", "catalog.models.PriceSheet", "review.views"} <= _imports(source)


def test_the_layers_are_the_installed_apps_in_order(settings):
    installed = [app for app in settings.INSTALLED_APPS if app in APPS]
    assert installed == APPS


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in the graph, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _module_graph(app: str) -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in _sources(app)}
    return {name: {m for m in _imports(path) if m in modules and m != name} for name, path in modules.items()}


@pytest.mark.parametrize("app", APPS)
def test_no_import_cycle_within_an_app(app):
    assert _cycle(_module_graph(app)) is None


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
