"""The package's shape: imports run one way (no module imports, directly or through
others, one that imports it back, including imports inside functions) and every module
stays under 700 lines (issue 31, items 7 and 8); the top level holds the core and
the packages of each role, and every module that moved from it still imports under its
old name (issue 52)."""
import ast
import importlib
import pickle
import subprocess
import sys

from conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "leap"
MAX_LINES = 700


def _modules():
    """{dotted name: path} of every module in leap/."""
    mods = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _imports(name, path, mods):
    """The leap modules that module ``name`` imports anywhere in its text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in mods else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in mods and m != name}


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    mods = _modules()
    graph = {name: _imports(name, path, mods) for name, path in mods.items()}
    assert "leap.geometry.cone" in graph["leap.geometry.conventions"]    # the scan works
    assert _cycles(graph) == []


def test_modules_under_700_lines():
    long = {name: n for name, path in _modules().items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_top_level_is_core_and_packages():
    # New modules go into the package of their role (README, "Layout").
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == {"__init__", "_moved", "_validate", "_version", "operators", "system"}
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert packages == {"algorithms", "compat", "devices", "distributed", "geometry",
                        "interop", "io", "kernels", "phantoms", "physics", "preprocessing",
                        "reconstruction", "torch"}


def test_moved_modules_keep_their_old_names():
    import leap
    from leap._moved import MOVED
    mods = _modules()
    for old, new in MOVED.items():
        assert new in mods and old not in mods, (old, new)
        assert importlib.import_module(old) is importlib.import_module(new), old
        assert getattr(leap, old.rpartition(".")[2]) is sys.modules[new], old
        assert sys.modules[new].__spec__.name == new, old       # its own spec kept
    from leap.fbp import FilterStage, fbp                       # a user's import
    from leap.reconstruction.fbp import fbp as new_fbp
    assert fbp is new_fbp and FilterStage.__module__ == "leap.reconstruction.fbp"
    with __import__("pytest").raises(AttributeError, match="no attribute 'nothing'"):
        leap.nothing


def test_pickles_naming_an_old_path_load():
    import leap.reconstruction.fbp as fbp_module
    data = pickle.dumps(fbp_module.fbp, protocol=0)        # text: names editable
    old = data.replace(b"leap.reconstruction.fbp", b"leap.fbp")
    assert old != data and pickle.loads(old) is fbp_module.fbp


def test_old_command_line_runs():
    out = subprocess.run([sys.executable, "-m", "leap.precompile", "--help"],
                         capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Compile leap's CPU kernels" in out.stdout
