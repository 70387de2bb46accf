"""The per-turn memory block and the scopes a chat loads.

:meth:`BotMemories.block` builds what one turn injects — the L1 memos (as before) and,
when ``[injection] enabled`` or the chat loaded another scope, the "## Bot Memories"
block: global + current-scope memories, importance then recency, trimmed to
``inject_token_budget`` cl100k tokens (``llm.tokens``), evicting by recency-decay score
(``domain.injection``); optionally the top-k memories nearest to the current message.
Always ONE SQL query per turn (plus one query embedding when ``relevant_top_k`` > 0).
"""

from __future__ import annotations

import dataclasses
import functools
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from amrita_memory_pg.domain.injection import (
    Candidate,
    Selection,
    TokenCounter,
    render_bot_memories,
    scope_labels_for,
    select,
)
from amrita_memory_pg.domain.keys import GLOBAL_KEY, group_key
from amrita_memory_pg.domain.memo import render_memo_block
from amrita_memory_pg.domain.ports import Embedder, MembershipCheck
from amrita_memory_pg.domain.profile import render_profile_block
from amrita_memory_pg.domain.records import CATEGORY_NAMES
from amrita_memory_pg.domain.trail import Recall
from amrita_memory_pg.llm.tokens import token_counter
from amrita_memory_pg.settings import Settings
from amrita_memory_pg.storage.bot_memories import BlockRows, BotMemoryRepository

if TYPE_CHECKING:
    from amrita_memory_pg.services.trail import TrailService

#: lines whose token count is remembered (a few hundred memories per active chat)
COUNT_CACHE_LINES = 8192
#: a chat, the partitions it reads, the candidate limit
HeldKey = tuple[str, tuple[str, ...], int]
#: chats whose candidates are held between turns (a few hundred small tuples each)
CANDIDATE_CACHE_CHATS = 1024


def remembered(count: TokenCounter, size: int = COUNT_CACHE_LINES) -> TokenCounter:
    """``count`` with an LRU of the last ``size`` lines (a line is text, so the cache is
    exact: an edited memory is a new line)."""
    return functools.lru_cache(maxsize=size)(count)


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who the block is for: the chat's partitions (tools' ToolContext, without the tools)."""

    session_key: str
    personal_key: str
    group_key: str | None
    user_id: str


class ChatLogMembership:
    """The default membership check: a user who has a line in the group's kept chat log.

    Weaker than asking the platform (someone who never spoke is refused; someone who
    left still passes until their lines roll out of ``chat_log_keep``); adapters that can
    ask the platform replace it (:attr:`Membership.check`).
    """

    def __init__(self, repo: BotMemoryRepository) -> None:
        self.repo = repo

    async def __call__(self, platform: str, user_id: str, group_id: str) -> bool:
        return await self.repo.spoke_in(group_key(platform, group_id), user_id)


@dataclass
class Membership:
    """The membership port, replaceable by an adapter after the memory opened."""

    check: MembershipCheck
    #: where the answer comes from, for messages and logs
    source: str = field(default="chat_log")


@dataclass(frozen=True, slots=True)
class Composition:
    """Everything one turn's block is made of (the inspector shows it; :meth:`BotMemories.block`
    returns its ``text``): the parts, the kept memories with their token counts, and the
    partitions left out because they are paused."""

    text: str
    memo: str
    profile: str
    memories: str
    selection: Selection
    loaded: list[str]
    paused: frozenset[str]
    #: candidates read before the budget (after the pause filter)
    candidates: int


def without_paused(rows: BlockRows, paused: frozenset[str]) -> BlockRows:
    """The block's rows without anything of a paused partition (a pause means not injected):
    its memo, its
    memories, its relevant memories, its profile, and a loaded scope that is paused."""
    if not paused:
        return rows
    return dataclasses.replace(
        rows,
        memos={k: v for k, v in rows.memos.items() if k not in paused},
        loaded=[k for k in rows.loaded if k not in paused],
        memories=[c for c in rows.memories if c.partition_key not in paused],
        relevant=[c for c in rows.relevant if c.partition_key not in paused],
    )


class BotMemories:
    """Builds the block; loads and unloads scopes into a chat."""

    def __init__(
        self,
        repo: BotMemoryRepository,
        embedder: Embedder,
        settings: Settings,
        *,
        counter: TokenCounter | None = None,
        trail: TrailService | None = None,
    ) -> None:
        self.repo = repo
        self.embedder = embedder
        self.settings = settings
        self._counter = counter
        self.membership = Membership(ChatLogMembership(repo))
        #: the trail: paused partitions are left out; injected memories are logged
        self.trail = trail
        #: per chat and scope set: (version, candidates) of the last turn — the block query
        #: does not send candidates again while their version is unchanged
        self._candidates: OrderedDict[HeldKey, tuple[int, list[Candidate]]] = OrderedDict()

    @property
    def count(self) -> TokenCounter:
        """The tokenizer, loaded on first use (cl100k takes ~50 ms to load once), with the
        counts of recent lines remembered: memories rarely change between turns, and
        counting is most of the selection's cost (~10 µs a line)."""
        if self._counter is None:
            self._counter = remembered(token_counter())
        return self._counter

    async def block(
        self,
        speaker: Speaker,
        *,
        message: str | None = None,
        now: datetime | None = None,
    ) -> str:
        """The per-turn system text ("" = inject nothing). One SQL query (paused partitions
        are left out by it); what was injected is logged in the background, one statement
        the turn does not wait for (``[trail] log_injection``)."""
        return (await self.compose(speaker, message=message, now=now)).text

    async def compose(
        self,
        speaker: Speaker,
        *,
        message: str | None = None,
        now: datetime | None = None,
        log: bool = True,
    ) -> Composition:
        """The block and what it is made of — exactly what :meth:`block` injects (the
        inspector calls this with ``log=False``: looking is not a recall)."""
        settings = self.settings
        injection = settings.injection
        personal = bool(speaker.group_key) and settings.memo_inject_personal_in_group
        memo_keys = (
            [speaker.session_key, speaker.personal_key] if personal else [speaker.session_key]
        )
        scope_keys: list[str] = []
        if injection.enabled:
            scope_keys = [GLOBAL_KEY, speaker.session_key]
        vector = None
        if injection.enabled and injection.relevant_top_k > 0 and message and message.strip():
            vector = await self.embedder.embed_query(message)
        cache_key = (speaker.session_key, tuple(scope_keys), injection.max_candidates)
        held = self._candidates.get(cache_key)
        rows = await self.repo.block(
            memo_keys=memo_keys,
            chat_key=speaker.session_key,
            scope_keys=scope_keys,
            limit=injection.max_candidates,
            query_vector=vector,
            top_k=injection.relevant_top_k,
            profile_key=speaker.personal_key if settings.profile.inject_summary else None,
            known_version=held[0] if held is not None else None,
        )
        rows = self._current_candidates(cache_key, held, rows)
        # The block query left paused partitions out and named them (memory_block_v2);
        # the pure filter below only guards that contract.
        paused = rows.paused
        rows = without_paused(rows, paused)
        if speaker.personal_key in paused:
            rows = dataclasses.replace(rows, profile="")
        memo = render_memo_block(
            rows.memos.get(speaker.session_key, ""),
            rows.memos.get(speaker.personal_key) if personal else None,
            speaker=speaker.user_id,
        )
        selection = select(
            rows.memories,
            budget=injection.inject_token_budget,
            count=self.count,
            now=now or datetime.now(UTC),
            half_life_days=injection.recency_half_life_days,
            scope_labels=scope_labels_for(
                group_key=speaker.group_key, personal_key=speaker.personal_key, loaded=rows.loaded
            ),
            category_names=CATEGORY_NAMES,
            relevant=rows.relevant,
        )
        memories = render_bot_memories(selection, rows.loaded)
        profile = render_profile_block(rows.profile, speaker=speaker.user_id)
        text = "\n\n".join(part for part in (memo, profile, memories) if part)
        if log and self.trail is not None and selection.kept:
            self.trail.log_injected_soon(
                [
                    (
                        k.candidate.partition_key,
                        k.candidate.id,
                        "relevant" if k.relevant else "inject",
                    )
                    for k in selection.kept
                ],
                Recall("inject", speaker.session_key, speaker.user_id),
                query=message,
            )
        return Composition(
            text=text,
            memo=memo,
            profile=profile,
            memories=memories,
            selection=selection,
            loaded=list(rows.loaded),
            paused=paused,
            candidates=len(rows.memories),
        )

    def forget_candidates(self) -> None:
        """Drop the held candidates: the next turn of every chat reads them all again
        (the benchmark's changed-every-turn figure; nothing else needs it — a change to
        the data changes the version)."""
        self._candidates.clear()

    def _current_candidates(
        self,
        cache_key: HeldKey,
        held: tuple[int, list[Candidate]] | None,
        rows: BlockRows,
    ) -> BlockRows:
        """The rows with this turn's candidates: the held ones when the query said their
        version is unchanged (it then sent none), else the ones it sent (now held)."""
        if rows.version is None:
            return rows
        if held is not None and held[0] == rows.version and not rows.memories:
            self._candidates.move_to_end(cache_key)
            return dataclasses.replace(rows, memories=held[1])
        self._candidates[cache_key] = (rows.version, rows.memories)
        self._candidates.move_to_end(cache_key)
        while len(self._candidates) > CANDIDATE_CACHE_CHATS:
            self._candidates.popitem(last=False)
        return rows

    async def load(
        self, chat_key: str, scope_key: str, user_id: str, now: datetime | None = None
    ) -> None:
        await self.repo.load(chat_key, scope_key, user_id, now or datetime.now(UTC))

    async def unload(self, chat_key: str, scope_key: str) -> bool:
        return await self.repo.unload(chat_key, scope_key)

    async def loaded(self, chat_key: str) -> Sequence[str]:
        return await self.repo.loaded(chat_key)
