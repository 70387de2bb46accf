"""The start-up fingerprint check and ``EMBED_MISMATCH_POLICY`` (reference §7.3, §7.4).

Vectors are comparable only under the model that made them; a silently changed model
degrades every search without an error. At start-up the stored fingerprint is compared
with the configured one:

- ``auto``: take a backup, then re-embed (before the plugin serves);
- ``ask``: on a terminal, ask (default yes); **without a TTY, refuse to start** and
  name the command that resolves it — what the reference's README promised (D1);
- ``never``: warn and keep serving.

``EMBED_CHECK_ON_STARTUP=false`` skips the check; the CLI never runs it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from amrita_memory_pg.domain.fingerprint import describe
from amrita_memory_pg.errors import AmritaMemoryError

if TYPE_CHECKING:
    from amrita_memory_pg.service import Memory

log = logging.getLogger(__name__)

REASON_UNRECORDED = "库中未记录嵌入模型信息，无法确认现有向量与当前配置是否一致。"
REASON_CHANGED = "嵌入模型已变更，现有向量与当前模型不兼容。"
FIX_COMMAND = "amrita-memory reindex --yes"


class FingerprintRefused(AmritaMemoryError):
    """``ask`` without a terminal: the plugin does not start on mismatched vectors."""


@dataclass(frozen=True, slots=True)
class FingerprintStatus:
    stored: str | None
    stored_describe: str
    current: str
    current_describe: str
    rows: int
    #: None when consistent (or the store is empty)
    reason: str | None


async def inspect_fingerprint(mem: Memory) -> FingerprintStatus:
    """Compare the stored fingerprint with the configured embedder's (no writes)."""
    await mem.embedder.prepare()  # a local model's fingerprint names the model it could load
    row = await mem.pool.fetchrow(
        """
        SELECT s.embed_fingerprint, s.embed_protocol, s.embed_model, s.embed_base_url,
               (SELECT count(*) FROM amrita_memory.memory)::integer
             + (SELECT count(*) FROM amrita_memory.knowledge)::integer AS rows
          FROM amrita_memory.store_meta s WHERE s.id = 1
        """
    )
    assert row is not None
    stored = row["embed_fingerprint"]
    current = mem.embedder.fingerprint
    if row["rows"] == 0 or stored == current:
        reason = None
    elif stored is None:
        reason = REASON_UNRECORDED
    else:
        reason = REASON_CHANGED
    return FingerprintStatus(
        stored=stored,
        stored_describe=describe(row["embed_protocol"], row["embed_model"], row["embed_base_url"])
        if stored
        else "（无记录）",
        current=current,
        current_describe=mem.embedder.describe(),
        rows=row["rows"],
        reason=reason,
    )


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


async def check_fingerprint(
    mem: Memory,
    *,
    is_tty: Callable[[], bool] = _stdin_is_tty,
    confirm: Callable[[str], bool] | None = None,
) -> FingerprintStatus:
    """Apply the mismatch policy; raises :class:`FingerprintRefused` for ``ask`` without a TTY."""
    from amrita_memory_pg.embedding.backups import create_backup
    from amrita_memory_pg.embedding.reindex import reindex, write_fingerprint

    status = await inspect_fingerprint(mem)
    if status.reason is None:
        if status.stored is None:
            # Empty store: record the configured model now ("zero friction").
            await write_fingerprint(mem.pool, mem.embedder)
        return status
    policy = mem.settings.embedding.mismatch_policy
    summary = (
        f"{status.reason} 库中记录: {status.stored_describe}；当前配置: {status.current_describe}"
    )
    if policy == "never":
        log.warning("%s 策略为 never，保持现有数据不变。", summary)
        return status
    if policy == "ask":
        if not is_tty():
            raise FingerprintRefused(
                f"{summary} EMBED_MISMATCH_POLICY=ask and there is no terminal to ask on, so the "
                f"memory plugin does not start. Fix: run `{FIX_COMMAND}` (re-embeds {status.rows} rows "
                "with the configured model, online), or set EMBED_MISMATCH_POLICY=auto (re-embed at "
                "start-up) or never (keep serving), or EMBED_CHECK_ON_STARTUP=false."
            )
        ask = confirm or _confirm
        if not ask(f"{summary}\n是否立即用当前模型重新嵌入 {status.rows} 条记录？"):
            log.warning("未执行重映射，保持现有数据不变。")
            return status
    log.warning("%s 开始全量重映射……", summary)
    backup = await create_backup(mem, reason="before-reembed")
    log.warning("已备份到 %s", backup.jsonl_path)
    report = await reindex(
        mem.pool, mem.embedder, batch_size=mem.settings.embedding.reembed_batch_size
    )
    await mem.after_reindex()
    log.warning("重映射完成：%d 条", report.embedded)
    return await inspect_fingerprint(mem)


def _confirm(question: str) -> bool:
    answer = input(f"{question} [Y/n] ").strip().lower()
    return answer in ("", "y", "yes", "是")
