"""The error text the LLM gets when a tool call fails for a reason outside its arguments.

During a database stall every failed write used to read «写入记忆失败: »
(the ``str()`` of a bare ``TimeoutError``) while some of them committed later, so an LLM
that retried made duplicates. Now every such reply is non-empty and says three things:
what happened, whether anything changed, and what to do next —

* nothing changed (:class:`DatabaseRefused`: the server aborted the statement, or it
  never left this process; an embedding failure, which happens before any write): the
  reason and «请稍后重试»;
* unknown (:class:`OutcomeUnknown`: the connection broke or the client stopped waiting
  after the statement was sent): «…结果未知» (not «失败») and how to check before
  retrying, per tool.

Driver exceptions that reach the registry's edge unclassified (a read path) are
classified here by exception class and SQLSTATE, never by message text.
"""

from __future__ import annotations

from amrita_memory_pg.domain.errors import (
    AmritaMemoryError,
    BackendError,
    DatabaseError,
    DatabaseRefused,
    EmbeddingError,
    OutcomeUnknown,
    ToolError,
)
from amrita_memory_pg.storage.pg.outcome import classify

#: Tools that change something, and how the LLM checks whether a call of unknown outcome
#: took effect. Every other tool only reads: a failed read changed nothing.
CHECK_HINTS: dict[str, str] = {
    "write_memory": (
        "请先用 read_memory 或 list_memory 确认这条记忆是否已写入，再决定是否重试"
        "（短时间内重复提交完全相同的内容会返回已有的那条记忆，不会重复写入）"
    ),
    "update_memory": (
        "请先用 list_memory 或 read_memory 查看这条记忆的当前内容，确认修改是否已生效，再决定是否重试"
    ),
    "delete_memory": (
        "请先用 list_memory 确认这条记忆是否还在；重试时若提示「未找到指定ID的记忆」，说明删除已经生效"
    ),
    "append_memo": "请先用 read_memo 确认内容是否已追加，再决定是否重试，以免重复追加",
    "update_memo": "请先用 read_memo 确认备忘录是否已更新；update_memo 是整篇替换，重试不会产生重复",
    "subconscious_write_memory": (
        "请先用 subconscious_list_memory 或 subconscious_read_memory 确认这条记忆是否已写入，再决定是否重试"
    ),
    "subconscious_update_memory": (
        "请先用 subconscious_list_memory 或 subconscious_read_memory 查看这条记忆的当前内容，再决定是否重试"
    ),
    "subconscious_delete_memory": (
        "请先用 subconscious_list_memory 确认这条记忆是否还在；重试时若提示「未找到ID为 … 的记忆」，说明删除已经生效"
    ),
    "subconscious_rewrite_memo": (
        "请先用 subconscious_read_memo 确认备忘录是否已更新；改写是整篇替换，重试不会产生重复"
    ),
    "subconscious_batch_edit": (
        "整批要么全部生效，要么全部没有：请先用 subconscious_read_memory 查看其中一条记忆的当前内容，"
        "确认整批是否已生效，再决定是否重新提交"
    ),
    "subconscious_update_profile": (
        "请先用 subconscious_get_profile 确认画像是否已更新，再决定是否重试，以免重复追加"
    ),
}

_REFUSED: dict[str, str] = {
    "timeout": "数据库处理超时，操作已被数据库中止并回滚",
    "lock": "数据库繁忙（等待锁超时），操作已被数据库中止并回滚",
    "unavailable": "暂时无法连接数据库，操作没有执行",
    "conflict": "与同时进行的另一个操作冲突，已回滚",
    "resources": "数据库资源不足（连接、内存或磁盘），操作没有执行",
    "read_only": "数据库当前是只读的，操作没有执行",
}
_RETRY: dict[str, str] = {
    "conflict": "请直接重试",
    "resources": "请稍后重试；若持续出现请告知管理员",
    "read_only": "请告知管理员（数据库处于只读状态）",
}


def refused_text(exc: DatabaseRefused) -> str:
    """What happened, that nothing changed, and what to do (no prefix)."""
    what = _REFUSED.get(exc.reason)
    if what is None:
        code = f"（SQLSTATE {exc.sqlstate}）" if exc.sqlstate else ""
        what = f"数据库拒绝了这次操作{code}"
        todo = "请检查参数后重试；若持续出现请告知管理员"
    else:
        todo = _RETRY.get(exc.reason, "请稍后重试")
    return f"{what}，没有做任何修改。{todo}"


def unknown_text(tool: str) -> str:
    """What happened and how to check, for a write whose outcome cannot be known (no prefix)."""
    hint = CHECK_HINTS.get(tool)
    if hint is None:  # a read: nothing to check, just try again
        return "与数据库的连接中断或等待超时，查询没有完成。请稍后重试"
    return (
        "请求已发出，但与数据库的连接随后中断或等待超时，这次操作可能已经生效，也可能没有。" + hint
    )


def unknown_prefix(prefix: str) -> str:
    """«写入记忆失败» → «写入记忆结果未知»: the reply must not claim a failure it cannot know."""
    if prefix.endswith("失败"):
        return prefix.removesuffix("失败") + "结果未知"
    return f"{prefix}（结果未知）"


def embedding_failure(prefix: str, exc: EmbeddingError) -> ToolError:
    """An embedding call failed before anything was written: say so, and to retry later."""
    detail = str(exc).strip() or type(exc).__name__
    return ToolError(f"{prefix}: {detail}。向量服务暂时不可用，没有写入或修改任何内容，请稍后重试")


def failure_cause(exc: BaseException) -> str:
    """One log line's worth of why: the classified error, else the exception's type and text."""
    mapped = exc if isinstance(exc, DatabaseError) else classify(exc, sent=True)
    text = str(mapped if mapped is not None else exc).strip()
    return text or type(exc).__name__


def failure_message(tool: str, prefix: str, exc: BaseException) -> str:
    """The message of an error reply for an exception that is not a :class:`ToolError`.

    Never empty; says whether anything changed and what to do next.
    """
    mapped: BaseException = exc
    if not isinstance(exc, DatabaseError):
        # Unclassified driver failure (a read path): assume it was sent — for a write
        # tool that makes the honest answer «unknown», never a wrong «nothing happened».
        mapped = classify(exc, sent=True) or exc
    if isinstance(mapped, OutcomeUnknown):
        if tool in CHECK_HINTS:
            return f"{unknown_prefix(prefix)}：{unknown_text(tool)}"
        return f"{prefix}：{unknown_text(tool)}"
    if isinstance(mapped, DatabaseRefused):
        return f"{prefix}：{refused_text(mapped)}"
    if isinstance(mapped, DatabaseError):
        detail = str(mapped).strip() or type(mapped).__name__
        return f"{prefix}：数据库不可用（{detail}），没有做任何修改。请稍后重试"
    if isinstance(mapped, EmbeddingError):
        return embedding_failure(prefix, mapped).message
    if isinstance(mapped, BackendError):
        # The vector index refused inside the write's transaction, which rolled back.
        detail = str(mapped).strip() or type(mapped).__name__
        return f"{prefix}: {detail}。没有做任何修改，请稍后重试"
    if isinstance(mapped, AmritaMemoryError) and str(mapped).strip():
        return f"{prefix}: {str(mapped).strip()}"  # our own errors name the fix
    kind = type(exc).__name__
    if tool in CHECK_HINTS:
        return (
            f"{unknown_prefix(prefix)}：出现意外错误（{kind}），无法确认操作是否已生效。"
            + CHECK_HINTS[tool]
        )
    return f"{prefix}：出现意外错误（{kind}）。请稍后重试；若持续出现请告知管理员"
