""" "What the bot sees": for one chat, the exact memory block of its
next turn and the memories in it with their token counts.

It calls the injection's own :meth:`BotMemories.compose` — the code the per-turn hook
runs — without logging a recall, so what it shows is what the plugin would inject, not
a re-implementation that could drift. Token counts are the block's own counter (cl100k,
``llm.tokens``, cached per line).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from amrita_memory_pg.i18n import Catalog, Translator
from amrita_memory_pg.services.bot_memories import BotMemories, Speaker


def speaker_for_chat(chat_key: str, user_id: str | None = None) -> Speaker:
    """The speaker of a chat as the NoneBot plugin builds it (``ToolContext``): a group
    chat ``{P}_Group_{gid}`` with an optional member ``user_id`` (their personal memo and
    profile, when injected, need one), or a private chat ``{P}_Private_{uid}``. Pure."""
    prefix, kind, ident = [*chat_key.split("_", 2), "", ""][:3]
    if kind == "Group" and ident:
        personal = f"{prefix}_Private_{user_id}" if user_id else ""
        return Speaker(
            session_key=chat_key, personal_key=personal, group_key=chat_key, user_id=user_id or ""
        )
    if kind == "Private" and ident:
        return Speaker(
            session_key=chat_key, personal_key=chat_key, group_key=None, user_id=user_id or ident
        )
    # a legacy or unknown key: a private chat of that partition
    return Speaker(
        session_key=chat_key, personal_key=chat_key, group_key=None, user_id=user_id or ""
    )


#: the report's default language (the CLI passes its own)
ENGLISH: Translator = Catalog("amrita_memory_pg").translator("en")


@dataclass(frozen=True, slots=True)
class InjectedMemory:
    partition_key: str
    id: str
    importance: int
    category: str | None
    line: str
    tokens: int
    relevant: bool


@dataclass(frozen=True, slots=True)
class Inspection:
    """One chat's next-turn block, part by part, with token counts."""

    chat_key: str
    speaker: Speaker
    text: str
    tokens: int
    memo_tokens: int
    profile_tokens: int
    memories_tokens: int
    #: tokens of the memory lines alone (what ``inject_token_budget`` limits)
    lines_tokens: int
    budget: int
    injected: list[InjectedMemory]
    evicted: int
    candidates: int
    loaded: list[str]
    paused: list[str]
    injection_enabled: bool

    def render(self, t: Translator | None = None) -> str:
        """The CLI's report in ``t``'s language (English by default): the numbers, the
        memories, then the exact text."""
        t = t or ENGLISH
        speaker = t("inspect.speaker", user=self.speaker.user_id) if self.speaker.user_id else ""
        out = [
            t("inspect.chat", chat=self.chat_key, speaker=speaker),
            t(
                "inspect.block",
                tokens=self.tokens,
                memo=self.memo_tokens,
                profile=self.profile_tokens,
                memories=self.memories_tokens,
                lines=self.lines_tokens,
                budget=self.budget,
                injected=len(self.injected),
                evicted=self.evicted,
                candidates=self.candidates,
            ),
        ]
        if not self.injection_enabled:
            out.append(t("inspect.injection_off"))
        if self.loaded:
            out.append(t("inspect.loaded", scopes=", ".join(self.loaded)))
        if self.paused:
            out.append(t("inspect.paused", scopes=", ".join(self.paused)))
        for m in self.injected:
            relevant = t("inspect.relevant") if m.relevant else ""
            out.append(
                t("inspect.row", tokens=m.tokens, key=m.partition_key, id=m.id, relevant=relevant)
            )
        out.append(t("inspect.exact"))
        out.append(self.text or t("inspect.nothing"))
        return "\n".join(out)


async def inspect_chat(
    bot: BotMemories,
    chat_key: str,
    *,
    user_id: str | None = None,
    message: str | None = None,
    now: datetime | None = None,
) -> Inspection:
    """What the next turn of ``chat_key`` injects (``message``: the current message, for
    ``relevant_top_k``). Nothing is logged."""
    speaker = speaker_for_chat(chat_key, user_id)
    comp = await bot.compose(speaker, message=message, now=now, log=False)
    count = bot.count
    return Inspection(
        chat_key=chat_key,
        speaker=speaker,
        text=comp.text,
        tokens=count(comp.text) if comp.text else 0,
        memo_tokens=count(comp.memo) if comp.memo else 0,
        profile_tokens=count(comp.profile) if comp.profile else 0,
        memories_tokens=count(comp.memories) if comp.memories else 0,
        lines_tokens=comp.selection.tokens,
        budget=bot.settings.injection.inject_token_budget,
        injected=[
            InjectedMemory(
                partition_key=k.candidate.partition_key,
                id=k.candidate.id,
                importance=k.candidate.importance,
                category=k.candidate.category,
                line=k.line,
                tokens=k.tokens,
                relevant=k.relevant,
            )
            for k in comp.selection.kept
        ],
        evicted=comp.selection.evicted,
        candidates=comp.candidates,
        loaded=comp.loaded,
        paused=sorted(comp.paused),
        injection_enabled=bot.settings.injection.enabled,
    )
