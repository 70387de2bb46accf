"""The per-turn memo block: the text injected as a system message (reference §6.3).

Private chat: the speaker's memo. Group chat: the group's memo, plus — when
``memo_inject_personal_in_group`` is on (fixes reference W3) — the speaker's personal
memo in a second, clearly labelled block, so the model never mistakes one person's
notes for the whole group's. Empty memos inject nothing.
"""

from __future__ import annotations

MEMO_HEADER = "以下是关于当前对话主体的备忘信息，位于<MEMO>块"
MEMO_HINT = "仅必要时可通过 update_memo 工具维护。"


def render_memo_block(
    session_memo: str, personal_memo: str | None = None, speaker: str = ""
) -> str:
    """The system-message text, or "" when there is nothing to inject."""
    parts: list[str] = []
    if session_memo:
        parts.append("\n".join((MEMO_HEADER, MEMO_HINT, "<MEMO>", session_memo, "</MEMO>")))
    if personal_memo:
        who = f"（{speaker}）" if speaker else ""
        parts.append(
            "\n".join(
                (
                    f"以下是当前发言人{who}的个人备忘信息，位于<PERSONAL_MEMO>块，"
                    "只属于这位发言人，不代表群内其他人",
                    "群聊中的备忘录工具只维护群备忘录；个人备忘录只能在与该用户的私聊中维护。",
                    "<PERSONAL_MEMO>",
                    personal_memo,
                    "</PERSONAL_MEMO>",
                )
            )
        )
    return "\n\n".join(parts)
