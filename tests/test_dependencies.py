"""Dependencies declared as used (issue 44): every third-party module imported at the top of a
module in vision/ or scoring/ is a declared dependency of the package, and every one imported
anywhere in vision/, scoring/ or scripts/ is declared in it or one of its extras."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = {"vision", "scoring"}


def _names(spec_list) -> set[str]:
    return {re.split(r"[<>=~!\[; ]", s.strip(), maxsplit=1)[0].lower().replace("_", "-")
            for s in spec_list}


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(modules imported at module level, modules imported anywhere) of one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top, every = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods = {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods = {node.module.split(".")[0]}
        else:
            continue
        every |= mods
    for node in tree.body:  # module level (also inside top-level try/if blocks)
        for sub in ast.walk(node) if isinstance(node, (ast.Try, ast.If)) else [node]:
            if isinstance(sub, ast.Import):
                top |= {a.name.split(".")[0] for a in sub.names}
            elif isinstance(sub, ast.ImportFrom) and sub.level == 0 and sub.module:
                top.add(sub.module.split(".")[0])
    return top, every


_DISTS = packages_distributions()


def _third_party(mods: set[str]) -> dict[str, set[str]]:
    dists = _DISTS
    out = {}
    local = {p.stem for p in (ROOT / "scripts").glob("*.py")}  # scripts import each other
    for m in mods - OURS - local - set(sys.stdlib_module_names) - {"__future__"}:
        out[m] = {d.lower().replace("_", "-") for d in dists.get(m, [m])}
    return out


def test_every_import_is_declared():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = _names(meta["dependencies"])
    extras = set().union(*(_names(v) for v in meta["optional-dependencies"].values()))
    # installed by scripts/setup.sh beside the extras (their pins would move OpenCV/Pillow):
    # see there; torch and torchvision are pinned there exactly
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    special = {n.lower() for n in re.findall(r"--no-deps ([A-Za-z0-9_.\-=\s]+)", setup)
               for n in re.findall(r"([A-Za-z0-9_\-.]+)==", n)} | {"torch", "torchvision"}
    missing_core, missing = [], []
    for folder in ("vision", "scoring", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            top, every = _imports(path)
            rel = path.relative_to(ROOT)
            if folder != "scripts":
                for mod, dists in _third_party(top).items():
                    if not dists & core:
                        missing_core.append(f"{rel}: {mod} ({', '.join(sorted(dists))})")
            for mod, dists in _third_party(every).items():
                if not dists & (core | extras | special):
                    missing.append(f"{rel}: {mod} ({', '.join(sorted(dists))})")
    assert not missing_core, "imported at module level but not a dependency:\n" + \
        "\n".join(missing_core)
    assert not missing, "imported but declared nowhere:\n" + "\n".join(missing)


def test_no_declared_test_tool_goes_unused():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "pytest-benchmark" not in _names(meta["optional-dependencies"]["test"])
