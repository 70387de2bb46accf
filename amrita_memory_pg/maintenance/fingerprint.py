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
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from amrita_memory_pg.domain.errors import FingerprintRefused
from amrita_memory_pg.maintenance.reembed import change_model, write_fingerprint
from amrita_memory_pg.services.store import Store
from amrita_memory_pg.storage import store_meta

log = logging.getLogger(__name__)

REASON_UNRECORDED = "库中未记录嵌入模型信息，无法确认现有向量与当前配置是否一致。"
REASON_CHANGED = "嵌入模型已变更，现有向量与当前模型不兼容。"
FIX_COMMAND = "amrita-memory reindex --yes"


def fix_command() -> str:
    """The command that fixes a mismatch, run where the bot runs: there the CLI reads the
    bot's ``.env`` and so re-embeds with the bot's model."""
    return f"cd {shlex.quote(str(Path.cwd()))} && {FIX_COMMAND}"


@dataclass(frozen=True, slots=True)
class FingerprintStatus:
    stored: str | None
    stored_describe: str
    current: str
    current_describe: str
    rows: int
    #: None when consistent (or the store is empty)
    reason: str | None


async def inspect_fingerprint(store: Store) -> FingerprintStatus:
    """Compare the stored fingerprint with the configured embedder's (no writes)."""
    await store.embedder.prepare()  # a local model's fingerprint names the model it could load
    meta = await store_meta.read(store.pool)
    rows = await store_meta.vector_rows(store.pool)
    stored = meta.fingerprint
    current = store.embedder.fingerprint
    if rows == 0 or stored == current:
        reason = None
    elif stored is None:
        reason = REASON_UNRECORDED
    else:
        reason = REASON_CHANGED
    return FingerprintStatus(
        stored=stored,
        stored_describe=meta.describe() if stored else "（无记录）",
        current=current,
        current_describe=store.embedder.describe(),
        rows=rows,
        reason=reason,
    )


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


async def check_fingerprint(
    store: Store,
    *,
    is_tty: Callable[[], bool] = _stdin_is_tty,
    confirm: Callable[[str], bool] | None = None,
) -> FingerprintStatus:
    """Apply the mismatch policy; raises :class:`FingerprintRefused` for ``ask`` without a TTY."""
    status = await inspect_fingerprint(store)
    if status.reason is None:
        if status.stored is None:
            # Empty store: record the configured model now ("zero friction").
            await write_fingerprint(store.pool, store.embedder)
        return status
    policy = store.settings.embedding.mismatch_policy
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
                f"memory plugin does not start. Fix: run `{fix_command()}` (re-embeds {status.rows} "
                f"rows with this bot's model, {status.current_describe}, read from the same .env), or set EMBED_MISMATCH_POLICY=auto (re-embed at "
                "start-up) or never (keep serving), or EMBED_CHECK_ON_STARTUP=false."
            )
        ask = confirm or _confirm
        if not ask(f"{summary}\n是否立即用当前模型重新嵌入 {status.rows} 条记录？"):
            log.warning("未执行重映射，保持现有数据不变。")
            return status
    log.warning("%s 开始全量重映射……", summary)
    report = await change_model(
        store, on_backup=lambda backup: log.warning("已备份到 %s", backup.jsonl_path)
    )
    log.warning("重映射完成：%d 条", report.embedded)
    return await inspect_fingerprint(store)


def _confirm(question: str) -> bool:
    answer = input(f"{question} [Y/n] ").strip().lower()
    return answer in ("", "y", "yes", "是")
