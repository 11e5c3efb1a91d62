"""The shape of the house (docs/architecture.md): no import cycle anywhere in scoring/ or
vision/ (module-level or inside functions), scoring never imports vision, no module over 800
lines, and every reference to documentation points inside the repository."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("scoring", "vision")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (every import statement, also those inside
    functions: a lazy import is still a dependency)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = name.split(".") if is_pkg else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in mods else mod
                           for a in node.names]
            for t in targets:
                while t and t not in mods:  # a.b.c names an attribute of module a.b
                    t = t.rpartition(".")[0]
                if t and t != name:
                    graph[name].add(t)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (c := visit(n)):
                return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_the_checker_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle():
    graph = import_graph()
    assert "vision.session" in graph and "scoring.strategy" in graph["scoring.cli"]
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))


def test_scoring_never_imports_vision():
    graph = import_graph()
    bad = {m: sorted(t for t in ts if t.startswith("vision"))
           for m, ts in graph.items() if m.startswith("scoring")}
    assert not any(bad.values()), bad


def test_no_module_over_800_lines():
    long = {str(p.relative_to(REPO)): n for p in _modules().values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 800}
    assert not long, long


def test_documentation_references_stay_inside_the_repository():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()
    bad = []
    for f in files:
        if f.startswith(("tests/", "scripts/")) or f == ".gitignore":
            continue
        p = REPO / f
        if not p.is_file() or p.suffix not in (".py", ".md", ".toml", ".yaml", ".yml", ".txt"):
            continue
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if ".agents/" in line or "shared/docs" in line or "shared/seeds" in line:
                bad.append(f"{f}:{i}")
    assert not bad, bad
    assert (REPO / "docs" / "round-event.schema.json").is_file()


def test_no_test_module_imports_another():
    """Shared test code lives in tests/helpers/, tests/fakes.py or tests/conftest.py: a test
    module imported by another runs its module-level code (and fixtures) twice."""
    tests = REPO / "tests"
    names = {p.stem for p in tests.rglob("test_*.py")}
    bad = []
    for p in sorted(tests.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            targets = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            bad += [f"{p.relative_to(REPO)}:{node.lineno} imports {t}" for t in targets
                    if t.split(".")[-1] in names or t.split(".")[0] in names]
    assert not bad, bad


def test_vision_shows_its_rooms():
    """vision/ keeps at most 16 modules at its top; recognition, table, io and synth are
    subpackages of their own (docs/architecture.md)."""
    top = sorted(p.name for p in (REPO / "vision").glob("*.py"))
    assert len(top) <= 16, top
    for pkg in ("recognition", "table", "io", "synth", "audit", "exports", "web", "pit"):
        assert (REPO / "vision" / pkg / "__init__.py").is_file(), pkg


def test_convex_polygons_are_intersected_in_one_module():
    calls = sorted(str(p.relative_to(REPO)) for d in ("vision", "scripts", "scoring")
                   for p in (REPO / d).rglob("*.py")
                   if "intersectConvexConvex(" in p.read_text(encoding="utf-8"))
    assert calls == ["vision/geometry.py"], calls


def test_no_namespace_is_built_outside_the_command_line():
    """A run's configuration is built from vision.config.SessionOptions; argparse Namespaces
    belong to vision/cli.py and vision/commands/ only."""
    bad = []
    for p in (REPO / "vision").rglob("*.py"):
        rel = p.relative_to(REPO).as_posix()
        if rel == "vision/cli.py" or rel.startswith("vision/commands/"):
            continue
        if "Namespace(" in p.read_text(encoding="utf-8"):
            bad.append(rel)
    assert not bad, bad


def long_functions(paths, limit: int = 80) -> list[str]:
    """``"path:line name (n lines)"`` for every function (nested ones and methods too) in the
    Python files ``paths`` longer than ``limit`` lines, counted from ``def`` to its last line,
    docstring included (``end_lineno - lineno + 1``)."""
    out = []
    for p in sorted(paths):
        for node in ast.walk(ast.parse(Path(p).read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    rel = Path(p).relative_to(REPO) if Path(p).is_relative_to(REPO) else p
                    out.append(f"{rel}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_the_length_checker_counts_from_def_to_the_last_line(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(78))
    ok = tmp_path / "ok.py"  # def + docstring + 78 lines = 80: allowed
    ok.write_text(f'def f():\n    """Doc."""\n{body}')
    long = tmp_path / "long.py"  # one more line, inside a method: 81
    long.write_text(f'class C:\n    def g(self):\n        """Doc."""\n'
                    + "".join("    " + line + "\n" for line in body.splitlines())
                    + "        return 0\n")
    assert long_functions([ok]) == []
    assert long_functions([ok, long]) == [f"{long}:2 g (81 lines)"]


def test_no_function_over_80_lines_in_recognition():
    """Issue 44: the recognition room reads in functions of at most 80 lines."""
    long = long_functions((REPO / "vision" / "recognition").rglob("*.py"))
    assert not long, long
