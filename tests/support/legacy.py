"""Build an amrita_plugin_memory 0.8.1 installation on disk, as the old plugin left it.

A real chromadb PersistentClient collection ``amrita_user_memory`` with the reference's
metadata (§3.1, §7.2, §2.5), the nonebot-plugin-orm SQLite file with the memo and state
tables (§6.1, §8.10), knowledge files + index (§10.2), ``user_profile.md`` (§11.1) and
``config/amrita_plugin_memory/config.toml`` (§13.1).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

#: (old key, scope, count): current, legacy and bare-digit keys, one group over its cap
PARTITIONS: list[tuple[str, str, int]] = [
    ("QQPlatform_Private_10001", "user", 80),
    ("user_10002", "user", 60),
    ("10003", "user", 40),
    ("group_20001", "group", 70),
    ("QQPlatform_Group_20002", "group", 50),
]
#: what each old key becomes
MIGRATED = {
    "QQPlatform_Private_10001": "QQPlatform_Private_10001",
    "user_10002": "QQPlatform_Private_10002",
    "10003": "QQPlatform_Private_10003",
    "group_20001": "QQPlatform_Group_20001",
    "QQPlatform_Group_20002": "QQPlatform_Group_20002",
}
IMPORTANCE = ["low", "medium", "high"]
BASE_TIME = datetime(2026, 1, 1, 8, 0, 0, 123456, tzinfo=UTC)


@dataclass
class OldInstall:
    root: Path
    data_dir: Path
    db_path: Path
    #: id → (old key, scope, document, metadata)
    memories: dict[str, tuple[str, str, str, dict[str, Any]]] = field(default_factory=dict)
    vectors: dict[str, list[float]] = field(default_factory=dict)
    memos: dict[str, str] = field(default_factory=dict)
    #: ids deliberately unimportable
    broken_ids: list[str] = field(default_factory=list)


def memory_id(key: str, i: int) -> str:
    return hashlib.md5(f"old|{key}|{i}".encode()).hexdigest()


def build_old_install(
    root: Path,
    *,
    fingerprint: str | None,
    vector_of: Callable[[str], list[float]],
    embed_meta: dict[str, str] | None = None,
    partitions: list[tuple[str, str, int]] | None = None,
) -> OldInstall:
    """The whole old installation under ``root`` (the bot directory)."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    data_dir = root / "data" / "amrita_plugin_memory"
    data_dir.mkdir(parents=True)
    db_path = root / "data" / "nonebot_plugin_orm" / "db.sqlite3"
    db_path.parent.mkdir(parents=True)
    old = OldInstall(root=root, data_dir=data_dir, db_path=db_path)

    # --- L2: Chroma collection in the reference's shape
    ids: list[str] = []
    docs: list[str] = []
    metas: list[dict[str, Any]] = []
    vectors: list[list[float]] = []
    for key, scope, count in partitions or PARTITIONS:
        for i in range(count):
            mid = memory_id(key, i)
            doc = f"{key} 的第 {i} 条记忆：喜欢{'猫' if i % 2 else '狗'}，编号 {i}"
            meta: dict[str, Any] = {
                "scope": scope,
                "user_id": key,
                "tags": "preference,pet" if i % 3 == 0 else "",
                "importance": IMPORTANCE[i % 3],
                "created_at": (BASE_TIME + timedelta(hours=i)).isoformat(),
            }
            ids.append(mid)
            docs.append(doc)
            metas.append(meta)
            vectors.append(vector_of(doc))
            old.memories[mid] = (key, scope, doc, meta)
            old.vectors[mid] = vectors[-1]
    # unimportable: a Channel key, a bare key without scope, an empty text
    for bad_id, doc, meta in (
        ("c" * 32, "频道里的记忆", {"scope": "group", "user_id": "QQPlatform_Channel_9"}),
        ("d" * 32, "无作用域的数字键", {"user_id": "424242"}),
        ("e" * 32, "", {"scope": "user", "user_id": "user_1"}),
    ):
        ids.append(bad_id)
        docs.append(doc)
        metas.append(meta)
        vectors.append(vector_of(doc or "x"))
        old.broken_ids.append(bad_id)
    collection_meta: dict[str, Any] = {"key_schema_version": 1}
    if fingerprint is not None:
        collection_meta["embed_fingerprint"] = fingerprint
        collection_meta.update(
            embed_meta or {"embed_protocol": "?", "embed_model": "?", "embed_base_url": "?"}
        )
    client = chromadb.PersistentClient(
        path=str(data_dir / "vector_db.chroma"),
        settings=ChromaSettings(anonymized_telemetry=False),
    )
    collection = client.create_collection(
        "amrita_user_memory", metadata=collection_meta, embedding_function=None
    )
    for start in range(0, len(ids), 200):
        collection.add(
            ids=ids[start : start + 200],
            documents=docs[start : start + 200],
            metadatas=metas[start : start + 200],  # type: ignore[arg-type]
            embeddings=vectors[start : start + 200],  # type: ignore[arg-type]
        )
    client.clear_system_cache()

    # --- L1 memos + L3 state in nonebot-plugin-orm's SQLite file
    conn = sqlite3.connect(db_path)
    conn.executescript(
        """
        CREATE TABLE amrita_user_metadata (user_id VARCHAR(64) PRIMARY KEY);
        CREATE TABLE amrita_plugin_memory_user_memo (
            user_id VARCHAR(64) PRIMARY KEY REFERENCES amrita_user_metadata(user_id) ON DELETE CASCADE,
            content TEXT NOT NULL DEFAULT '',
            version INTEGER NOT NULL DEFAULT 1,
            updated_at DATETIME
        );
        CREATE TABLE amrita_plugin_memory_subconscious_state (
            uid VARCHAR(64) PRIMARY KEY,
            payload TEXT NOT NULL DEFAULT '{}',
            updated_at DATETIME
        );
        """
    )
    old.memos = {
        "QQPlatform_Private_10001": "用户叫小明，喜欢猫。",
        "user_10002": "称呼：阿强",
        "QQPlatform_Group_20002": "这是一个读书群。",
        "QQPlatform_Private_10004": "",
    }
    for key, content in old.memos.items():
        conn.execute("INSERT INTO amrita_user_metadata VALUES (?)", (key,))
        conn.execute(
            "INSERT INTO amrita_plugin_memory_user_memo VALUES (?, ?, ?, ?)",
            (key, content, 3, "2026-01-02 10:00:00.000000"),
        )
    payload = {
        "total_runs": 12,
        "last_run_time": "2026-01-03T00:00:00+00:00",
        "last_run_ts": 1767398400.0,
        "last_iter_summary": "整理了记忆",
        "penalty": 2,
        "last_abstracts": ["第一次", "第二次"],
        # the reference's shapes (§4.10, §8.10): times are ISO strings in UTC
        "pending_messages": [{"content": "早上好", "timestamp": "2026-01-02T21:30:00+00:00"}],
        "knowledge_suggestions": [
            {
                "action": "create",
                "title": "猫的品种",
                "summary": "用户家里的猫",
                "body": "一只橘猫，叫大黄",
                "reason": "聊天里提到了两次",
                "kid": "",
                "timestamp": "2026-01-02T20:00:00+00:00",
            },
            {
                "action": "update",
                "title": "条目 a1b2c3d4",
                "summary": "摘要 a1b2c3d4",
                "body": "第 0 行\n第 1 行（补充）",
                "reason": "",
                "kid": "a1b2c3d4",
                "timestamp": "2026-01-02T20:05:00+00:00",
            },
        ],
    }
    conn.execute(
        "INSERT INTO amrita_plugin_memory_subconscious_state VALUES (?, ?, ?)",
        ("amrita_memory", json.dumps(payload, ensure_ascii=False), "2026-01-03 08:00:00"),
    )
    conn.commit()
    conn.close()

    # --- knowledge base, profile, config
    knowledge = data_dir / "knowledge"
    knowledge.mkdir()
    index = []
    for n, kid in enumerate(("a1b2c3d4", "0badf00d", "feedbeef")):
        body = "\n".join(f"第 {j} 行" for j in range(n + 2))
        (knowledge / f"KNOWLEDGE_{kid}.md").write_text(
            f"# 条目 {kid}\n摘要 {kid}\n---\n{body}", encoding="utf-8"
        )
        index.append(
            {
                "kid": kid,
                "title": f"条目 {kid}",
                "file_name": f"KNOWLEDGE_{kid}.md",
                "summary": f"摘要 {kid}",
                "total_lines": body.count("\n") + 1,
                "char_count": len(body),
                "created_at": "2026-01-01T00:00:00+00:00",
                "updated_at": "2026-01-02T00:00:00+00:00",
            }
        )
    (data_dir / "knowledge_index.json").write_text(
        json.dumps(index, ensure_ascii=False, indent=2), encoding="utf-8"
    )
    (data_dir / "user_profile.md").write_text(
        "小明，程序员\n---\n\n\n喜欢猫\n住在上海\n", encoding="utf-8"
    )
    config = root / "config" / "amrita_plugin_memory" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        "per_session_memory_limit = 100\nmemo_max_chars = 1000\n\n[decay]\nhalf_life_days = 45.0\n\n"
        '[subconscious]\nenabled = true\ntarget_user_id = "10001"\nmax_iterations = 12\n'
        'knowledge_collection_name = "amrita_global_knowledge"\n',
        encoding="utf-8",
    )
    return old


def tree_checksum(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (relative path → digest), plus the listing."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }
