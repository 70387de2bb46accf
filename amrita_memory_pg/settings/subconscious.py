"""The ``[subconscious]`` section: the L3 loop, its planner and the knowledge base."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic.config import JsonDict

from amrita_memory_pg.domain.keys import personal_key
from amrita_memory_pg.settings.base import ACCEPTED_ONLY, Section, maybe_json

#: an L3 target: a current-format personal or group partition key (domain.keys)
TARGET_KEY = re.compile(r"^[A-Za-z0-9]+Platform_(?:Private|Group)_\S+$")
#: The reference kept its knowledge base three times (files, an index, a Chroma
#: collection) and §10.5 is about keeping them in step; here it lives in PostgreSQL once,
#: so there is no collection to name.
_NO_KNOWLEDGE_COLLECTION: JsonDict = {
    ACCEPTED_ONLY: "accepted so the reference's config files load; the knowledge base "
    "lives in PostgreSQL, not in a Chroma collection, so nothing reads it"
}


class SubconsciousSettings(Section):
    """The L3 consolidation loop and its idle-window planner (reference §8, §9).

    The scheduler and the runner are built; keys marked below as accepted only are read
    nowhere yet; they load so that the reference's config files keep working.
    """

    enabled: bool = Field(
        False,
        description="Run the background consolidation loop (needs target_user_id or targets).",
    )
    target_user_id: str = Field(
        "",
        description="The default target: a user id (QQ number), i.e. the partition "
        "QQPlatform_Private_{id}. Listed first when targets are given too.",
    )
    targets: list[str] = Field(
        default_factory=list,
        description="More targets, each a partition key: QQPlatform_Private_{user id} (a "
        "user, triggered by their messages in any chat) or QQPlatform_Group_{group id} (a "
        "group, triggered by any member's message in it). Each has its own penalty, "
        "heatmap and schedule. JSON list in the environment.",
    )
    allowed_tools: list[str] = Field(
        default_factory=list,
        description="Tools the loop may call besides its own: this plugin's read-only chat "
        "tools (read_memory, list_memory, read_memo), run as the cycle's target, and under "
        "AmritaBot other plugins' tools in its registry "
        "(you vouch that they only read; custom_run ones need a chat turn and are left "
        "out). A writing tool of this plugin, or a name found nowhere, is warned about once "
        "at start-up and left out. JSON list in the environment.",
    )
    max_iterations: int = Field(
        10,
        ge=1,
        le=50,
        description="Maximum ReAct rounds per run.",
    )
    cycle_token_budget: int = Field(
        100_000,
        ge=0,
        description="Tokens (prompt + completion, as the model reports them) one cycle may "
        "spend; 0 = no limit. Before each model call the cycle estimates that call's prompt "
        "(the previous call's plus what was added since; a call reported without usage "
        "counts as its estimate); when it would pass the budget the "
        "cycle stops there: every edit made so far stays (each tool call is its own "
        "transaction), the tokens spent are in token_usage, and the cycle is closed as "
        "failed with 'token budget: …' and a summary of where it stopped, which the next "
        "cycle of the target reads in subconscious_get_context (last_run_summary).",
    )
    batch_edits: bool = Field(
        True,
        description="Offer the loop subconscious_batch_edit (all of a cycle's merges, "
        "updates, deletions, memo and profile edits in one call and one transaction) and "
        "the batch guide instead of the single edit tools' schemas; the single tools "
        "(merge/update/delete_memory) still run when called by name. false = offer the "
        "single tools (for a model that handles lists of objects badly).",
    )
    loop_detect_threshold: int = Field(
        3,
        ge=2,
        le=10,
        description="This many identical consecutive tool calls end the cycle as failed (a stall).",
    )
    rethink_base_delay_minutes: int = Field(
        30,
        ge=1,
        description="Legacy fixed-delay scheduler: first delay (minutes).",
    )
    rethink_penalty_multiplier: float = Field(
        1.5,
        ge=1,
        le=10,
        description="Legacy scheduler: growth per penalty.",
    )
    rethink_max_delay_minutes: int = Field(
        1440,
        ge=60,
        le=10080,
        description="Legacy scheduler: cap (minutes).",
    )
    use_idle_window_planner: bool = Field(
        True,
        description="Pick the run window from the 7×12 activity heatmap.",
    )
    idle_timezone: str = Field("Asia/Shanghai", description="Time zone of the heatmap and windows.")
    idle_fine_tau_days: float = Field(
        28.0,
        ge=1,
        description="Half-life of the per-weekday layer.",
    )
    idle_coarse_tau_days: float = Field(14.0, ge=1, description="Half-life of the global layer.")
    idle_shrink_k: float = Field(
        4.0,
        ge=0,
        description="Shrinkage strength toward the global layer.",
    )
    idle_min_sample_days_fine: int = Field(
        6,
        ge=1,
        description="Active days of a weekday needed for the fine tier.",
    )
    idle_min_sample_days_mid: int = Field(
        3,
        ge=1,
        description="Active days in the weekday/weekend group needed for the mid tier.",
    )
    idle_cold_pct_max: float = Field(
        0.05,
        ge=0,
        le=1,
        description="A slot is cold when its share is at most this…",
    )
    idle_cold_abs_max: float = Field(1.0, ge=0, description="…and its raw count at most this.")
    idle_target_hour: int = Field(3, ge=0, le=23, description="Preferred local start hour.")
    idle_base_slots: int = Field(
        3,
        ge=1,
        description="Cold 2-hour slots required at penalty 1.",
    )
    idle_max_slots: int = Field(6, ge=1, description="Cap on required slots.")
    idle_penalty_multiplier: float = Field(
        1.5,
        ge=1,
        le=10,
        description="Growth of the required slots per extra penalty.",
    )
    idle_max_relax_steps: int = Field(
        3,
        ge=0,
        le=6,
        description="Halvings allowed when no run fits.",
    )
    idle_buffer_minutes: int = Field(15, ge=0, description="Safety buffer at the window end.")
    idle_run_estimate_minutes: int = Field(10, ge=0, description="Expected run length (minutes).")
    idle_fallback_minutes: int = Field(120, ge=10, description="Length of the fallback window.")
    idle_noise_gap_minutes: int = Field(
        15,
        ge=0,
        description="Messages closer than this count as one burst.",
    )
    prompt_file: str = Field(
        "prompt/subconscious_main.md.jinja2",
        description="Main system prompt template.",
    )
    prompt_send_file: str = Field(
        "prompt/subconscious_send.md.jinja2",
        description="Proactive message template.",
    )
    prompt_knowledge_file: str = Field(
        "prompt/knowledge_guide.md.jinja2",
        description="Knowledge base guide template.",
    )
    prompt_profile_file: str = Field(
        "prompt/profile_guide.md.jinja2",
        description="Profile guide template.",
    )
    prompt_batch_file: str = Field(
        "prompt/batch_guide.md.jinja2",
        description="Batch edit guide template (appended when subconscious_batch_edit is "
        "offered: batch_edits = true).",
    )
    character_prompt: str = Field(
        "",
        description="The bot's persona for the templates' character_prompt (main and send); "
        "empty = character_prompt_file, else the host's (AmritaBot's private persona).",
    )
    character_prompt_file: str = Field(
        "",
        description="A text file holding the persona (read every cycle; relative to "
        "prompt_dir); used when character_prompt is empty.",
    )
    enable_memory_compress: bool = Field(
        True,
        description="Give the loop its L1 memo tools (subconscious_read_memo / "
        "subconscious_rewrite_memo) to compress a memo near its cap.",
    )
    allow_send_to_user: bool = Field(False, description="Let the loop send proactive messages.")
    memory_warn_threshold: int = Field(
        100,
        ge=10,
        description="Memory count that triggers a warning.",
    )
    max_abstracts: int = Field(
        5,
        ge=1,
        le=20,
        description="How many of the last cycles' summaries subconscious_get_context shows "
        "(recent_runs).",
    )
    knowledge_max_chars: int = Field(
        10000,
        ge=100,
        le=100000,
        description="Maximum body length of a knowledge entry (characters), checked by the "
        "write itself on every surface (tools, CLI, import).",
    )
    knowledge_collection_name: str = Field(
        "amrita_global_knowledge",
        description="Chroma collection of the knowledge base.",
        json_schema_extra=_NO_KNOWLEDGE_COLLECTION,
    )
    enable_knowledge: bool = Field(
        True,
        description="The global knowledge base: its chat tools (knowledge_list/read/search/"
        "suggest) and loop tools answer «全局知识库未启用» when false. Works without the L3 "
        "loop (unlike the reference, W21); the CLI manages it either way.",
    )
    knowledge_read_group_admins: bool = Field(
        False,
        description="Also let a group's OneBot owner and admins read the knowledge base from "
        "that group (superusers, lp.admin and users granted memory.knowledge always can).",
    )
    knowledge_suggest_max: int = Field(
        20,
        ge=1,
        le=1000,
        description="Unhandled knowledge suggestions kept at most; when full, a NEW "
        "suggestion is refused with a message (nothing queued is dropped).",
    )
    knowledge_suggest_per_hour: int = Field(
        5,
        ge=0,
        le=1000,
        description="Knowledge suggestions one user may make per hour (counted in the "
        "database, so it survives restarts); 0 = no limit.",
    )

    llm_base_url: str = Field(
        "",
        description="Chat-completions base URL of the loop's model; empty = [llm] base_url "
        "(LLM_BASE_URL).",
    )
    llm_model: str = Field("", description="The loop's model; empty = [llm] model (LLM_MODEL).")
    llm_api_key: SecretStr = Field(
        SecretStr(""), description="The loop's bearer token; empty = [llm] api_key (LLM_API_KEY)."
    )
    prompt_dir: Path = Field(
        Path("config/amrita_memory_pg"),
        description="Where relative prompt_*_file paths live (relative to the working dir); "
        "missing templates are created there from the defaults.",
    )
    duplicate_threshold: float = Field(
        0.85,
        gt=0,
        le=1,
        description="Cosine similarity from which the pre-pass (and "
        "subconscious_duplicate_helper by default) calls two memories near-duplicates.",
    )

    @field_validator("allowed_tools", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        return maybe_json(value, [])

    @field_validator("target_user_id")
    @classmethod
    def _no_spaces(cls, value: str) -> str:
        if any(ch.isspace() for ch in value):
            raise ValueError("must not contain whitespace")
        return value

    @field_validator("targets", mode="before")
    @classmethod
    def _json_targets(cls, value: Any) -> Any:
        return maybe_json(value, [])

    @field_validator("targets")
    @classmethod
    def _partition_keys(cls, value: list[str]) -> list[str]:
        for key in value:
            if not TARGET_KEY.match(key):
                raise ValueError(
                    f"{key!r} is not a partition key: write QQPlatform_Private_<user id> "
                    "or QQPlatform_Group_<group id>"
                )
        return value

    def target_keys(self) -> tuple[str, ...]:
        """Every target partition, ``target_user_id``'s first, each once."""
        keys = [personal_key("qq", self.target_user_id)] if self.target_user_id else []
        keys += self.targets
        return tuple(dict.fromkeys(keys))
