"""Knowledge base ⇄ Markdown files in the reference's layout (§10.2).

Export writes ``KNOWLEDGE_{kid}.md`` per entry (``# title``, summary, ``---``, body)
plus ``knowledge_index.json`` (the reference's index: kid, title, file_name, summary,
total_lines, char_count, created_at, updated_at), each file atomically (temporary file,
fsync, rename). Import reads the ``KNOWLEDGE_*.md`` files of a directory — ours, or the
reference plugin's ``knowledge/`` directory — checks every one first, then creates or
overwrites each entry under its own kid (the summary re-embedded with the configured
model), so an export imported back is the same knowledge base.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from amrita_memory_pg.domain.errors import KnowledgeError
from amrita_memory_pg.domain.knowledge import (
    KnowledgeEntry,
    body_lines,
    file_name,
    from_markdown,
    kid_of_file,
    to_markdown,
)
from amrita_memory_pg.domain.validation import (
    InvalidInput,
    check_knowledge_body,
    check_knowledge_summary,
    check_knowledge_title,
)
from amrita_memory_pg.services.knowledge import KnowledgeService
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage.knowledge import KnowledgeRepository

INDEX_FILE = "knowledge_index.json"


def knowledge_service(store: Store, *, reads: bool = False) -> KnowledgeService:
    """The knowledge service on an opened store (what the CLI and maintenance use);
    ``reads``: for a command that only reads (``knowledge list/show/search/export``), on
    the replica when ``[database] read_url`` is set."""
    settings = store.settings
    return KnowledgeService(
        KnowledgeRepository(
            store.read_pool if reads else store.pool,
            max_chars=settings.subconscious.knowledge_max_chars,
            acquire_timeout=settings.database.connect_timeout,
        ),
        store.embedder,
        settings,
    )


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


async def export_markdown(knowledge: KnowledgeService, directory: Path) -> list[Path]:
    """Write every entry and the index into ``directory`` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    index: list[dict[str, object]] = []
    for info in await knowledge.entries():
        entry = await knowledge.get(info.kid)
        path = directory / file_name(entry.kid)
        _write_atomic(path, to_markdown(entry))
        written.append(path)
        index.append(
            {
                "kid": entry.kid,
                "title": entry.title,
                "file_name": path.name,
                "summary": entry.summary,
                "total_lines": len(body_lines(entry.body)),
                "char_count": len(entry.body),
                "created_at": info.created_at.isoformat(),
                "updated_at": info.updated_at.isoformat(),
            }
        )
    _write_atomic(directory / INDEX_FILE, json.dumps(index, ensure_ascii=False, indent=2) + "\n")
    return written


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def read_markdown_dir(directory: Path, max_chars: int) -> list[KnowledgeEntry]:
    """Every ``KNOWLEDGE_{kid}.md`` of ``directory``, parsed and checked; raises
    :class:`KnowledgeError` naming the first bad file (nothing is imported then)."""
    if not directory.is_dir():
        raise KnowledgeError(f"not a directory: {directory}")
    entries: list[KnowledgeEntry] = []
    for path in sorted(directory.glob("KNOWLEDGE_*.md")):
        kid = kid_of_file(path.name)
        if kid is None:
            raise KnowledgeError(f"{path.name}: the name must be KNOWLEDGE_<8 hex>.md")
        try:
            entry = from_markdown(kid, path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise KnowledgeError(f"{path.name}: not UTF-8 text") from exc
        name = "title"
        try:
            check_knowledge_title(entry.title)
            name = "summary"
            check_knowledge_summary(entry.summary)
            name = "body"
            check_knowledge_body(entry.body, max_chars)
        except InvalidInput as exc:
            raise KnowledgeError(f"{path.name}: {name} {exc.reason}") from exc
        entries.append(entry)
    return entries


async def import_markdown(knowledge: KnowledgeService, directory: Path) -> ImportReport:
    """Create or overwrite every entry found in ``directory`` (all files checked first)."""
    entries = read_markdown_dir(directory, knowledge.max_chars)
    report = ImportReport()
    for entry in entries:
        outcome = await knowledge.put(entry)
        getattr(report, outcome).append(entry.kid)
    return report
