"""The L3 loop's prompt templates (reference §8.5, §13.3): jinja2 files the user may edit.

Five templates — main, send, knowledge guide, profile guide, batch guide — live under
``[subconscious] prompt_dir`` (``prompt_*_file``; an absolute path is used as is).
Missing files are created from the defaults below on first use, a file still holding
an earlier version's untouched default is replaced by today's, and files are re-read
every cycle, so an edit needs no restart.

The invariance rule: the system prompt gets nothing that changes within a UTC day (the
date, the persona; the target only if a user's template names it), so it is
byte-identical for every call of every cycle on one day and providers' prefix caches
hit. Everything else — the time, the last run,
counts, the idle plan — comes through ``subconscious_get_context``.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import jinja2

from amrita_memory_pg.settings import SubconsciousSettings

log = logging.getLogger(__name__)

MAIN = """你是后台的记忆整理员，维护一个用户或群的长期记忆。今天是 {{ current_date }}（UTC）。
{% if character_prompt %}
机器人的人设（只在写主动消息时参考，整理时保持客观）：
{{ character_prompt }}
{% endif %}
规则：
1. 只输出工具调用，不编造记忆。
2. 对话中已有 subconscious_get_context 的结果。duplicate_candidates 是疑似重复组，每项 id|重要性|内容：真正重复的每组{% if batch %}合并一次（merge）{% else %}调用一次 subconscious_merge_memories{% endif %}，保留最全或最重要的一条，需要时给出合并后的 content。
3. cleanup_candidates 是最旧的低重要性记忆，每项 id|内容|多久前：确已过时或无用的{% if batch %}删除（delete）{% else %}用 subconscious_delete_memory 删除{% endif %}。
4. 矛盾留新的或更具体的，统一标签，校准重要程度；memo_hint 非空时压缩备忘录；按需 subconscious_read_memory。
5. 标 user| 的是用户手动添加的（source=user）：不删、不改内容和重要程度，只能加标签。
6. 最后调用 subconscious_iter_stop（可与修改同一轮），一两句话总结。
"""

SEND = """你是聊天机器人本人，正在私下给用户发一条简短的消息。现在是 {{ current_time }}。
{% if character_prompt %}
你的人设：
{{ character_prompt }}
{% endif %}
要求：一句自然、口语化的话，不超过 60 个字；符合你的人设；不要提到"后台"、"记忆整理"或任何系统过程。
意图：{{ intent }}
{% if memory_context %}相关记忆：{{ memory_context }}{% endif %}
"""

KNOWLEDGE = """## 全局知识库
只写与具体用户无关、可复用的知识，不写个人隐私。写前先 subconscious_knowledge_search / subconscious_knowledge_list，优先更新已有条目，少建零碎条目。长条目按行窗口读（total_lines 超过 100 时分段）；正文有长度上限，超出会被拒绝。
"""

PROFILE = """## 用户画像
profile_hint 非空时更新画像，可先看 subconscious_read_sessions；已有画像先读再增量改{% if batch %}（profile 操作无行号则追加 new_lines，有 start_line/end_line 则替换该区间）{% endif %}。只写稳定特质（性格、偏好、背景、与机器人的关系、重要事件），不写一次性、不确定或敏感的内容；摘要≤200字。
"""

BATCH = """## 批量修改
全部修改用一次 subconscious_batch_edit 提交。整批一个事务：任一项无效则都不执行，按 errors 修正后重交整批。
"""

README = """# L3 prompt templates

Jinja2 files read by the consolidation loop at the start of every cycle (edits need no
restart). Missing files are re-created from the built-in defaults.

| file | variables |
|---|---|
| subconscious_main.md.jinja2 | current_date (UTC YYYY-MM-DD), target_user_id, character_prompt, batch (true when subconscious_batch_edit is offered) |
| subconscious_send.md.jinja2 | intent, memory_context, current_time ("%Y-%m-%d %H:%M:%S UTC"), character_prompt |
| knowledge_guide.md.jinja2 | current_date, target_user_id, batch |
| profile_guide.md.jinja2 | current_date, target_user_id, batch |
| batch_guide.md.jinja2 | current_date, target_user_id, batch |

Keep anything that changes during a day (times, counts) out of the main and guide
templates: the system prompt must stay byte-identical within a UTC day so that the
provider's prefix cache hits. The default main template does not name the target
either, so cycles of different targets on one day share the prefix. Undefined
variables render as empty strings. The main template says how the pre-pass lists of
subconscious_get_context read (`id|importance|content`, cleanup items
`id|content|age`, `user|` after the id of a memory a user added): keep that in an
edited one.
"""


#: sha256 of the defaults earlier versions wrote (0.3.0–0.14.1, and the 0.15.0
#: development builds before the shorter prompt): a file still holding one was never
#: edited, so it is replaced by today's default when read — an operator gets the new
#: rules (the batch, the pre-pass formats get_context no longer repeats) and the
#: shorter prompt without deleting anything. Any other text is the operator's and kept.
PREVIOUS_DEFAULTS: dict[str, frozenset[str]] = {
    "main": frozenset(
        {
            "3ea50b99bb5c1f37f21899ec2b1f85f5d9d4690bc2dbc9c3b5a13e50e5c089a3",
            "cae518e980b13db880632a1594a2b223187c23cfc67b7d86d662193396a6622e",
        }
    ),
    "knowledge": frozenset({"c7b5acf728a6434af7512fe64827d98c73604a79e82b12d7a9b35b9c3af20d6c"}),
    "profile": frozenset({"c96bb1c2f45a034395140892e927bc4db8a34bc8dc45532345b248e8ea06f386"}),
    "batch": frozenset({"dfe1099040bfd36c3ef7afceed02eeabce496e7776c51ca41f351cd1bddeb1ec"}),
    "readme": frozenset(
        {
            "1d10fce22384785c199aae47b8e6c985a2be805f5727b72ed3070a4d8c355868",
            "72778ea35b29b6210afbc9ded95bb28cd9ea999e017c0a0bb4d8c68b75d20286",
        }
    ),
}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class PromptFiles:
    main: Path
    send: Path
    knowledge: Path
    profile: Path
    batch: Path


def prompt_files(sub: SubconsciousSettings) -> PromptFiles:
    base = sub.prompt_dir.expanduser()

    def at(name: str) -> Path:
        path = Path(name).expanduser()
        return path if path.is_absolute() else base / path

    return PromptFiles(
        at(sub.prompt_file),
        at(sub.prompt_send_file),
        at(sub.prompt_knowledge_file),
        at(sub.prompt_profile_file),
        at(sub.prompt_batch_file),
    )


_ENV = jinja2.Environment(undefined=jinja2.Undefined, keep_trailing_newline=True, autoescape=False)


def render(template: str, **values: object) -> str:
    """Render template text; an undefined variable is an empty string (jinja's default)."""
    return _ENV.from_string(template).render(**values)


class Prompts:
    """Reads (and creates when missing) the five templates; renders the loop's prompts."""

    def __init__(self, sub: SubconsciousSettings, *, character_prompt: str = "") -> None:
        self.files = prompt_files(sub)
        #: the configured persona text (``[subconscious] character_prompt``)
        self.configured = character_prompt or sub.character_prompt.strip()
        self.persona_file: Path | None = None
        if sub.character_prompt_file.strip():
            path = Path(sub.character_prompt_file.strip()).expanduser()
            self.persona_file = path if path.is_absolute() else sub.prompt_dir.expanduser() / path
        #: the host's persona (the AmritaBot adapter sets it); used when nothing is configured
        self.host_persona: Callable[[], str] | None = None

    @property
    def character_prompt(self) -> str:
        """The persona, re-read on every render (so an edit needs no restart): the
        setting, else the file, else the host's; "" when none (never raises)."""
        if self.configured:
            return self.configured
        if self.persona_file is not None:
            try:
                return self.persona_file.read_text(encoding="utf-8").strip()
            except OSError as exc:
                log.warning("cannot read the persona file %s: %s", self.persona_file, exc)
                return ""
        if self.host_persona is not None:
            try:
                return self.host_persona().strip()
            except Exception:  # a host's look-up: no persona rather than no cycle
                log.warning("reading the host's persona failed", exc_info=True)
        return ""

    def _read(self, path: Path, default: str, kind: str = "") -> str:
        """The template at ``path``; created from ``default`` when missing, and replaced
        by it when it holds an earlier version's untouched default
        (:data:`PREVIOUS_DEFAULTS` of ``kind``)."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = None
        if text is not None and _digest(text) not in PREVIOUS_DEFAULTS.get(kind, ()):
            return text
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(default, encoding="utf-8")
            if text is not None:
                log.info("the untouched default template %s replaced by this version's", path)
            readme = path.parent / "README.md"
            if (
                not readme.exists()
                or _digest(readme.read_text(encoding="utf-8")) in PREVIOUS_DEFAULTS["readme"]
            ):
                readme.write_text(README, encoding="utf-8")
        except OSError as exc:  # a read-only config dir: the default still works
            log.warning("cannot write the prompt template %s: %s", path, exc)
        return default

    def ensure(self) -> None:
        """Create every missing template (and the README) now, and replace untouched
        earlier defaults."""
        self._read(self.files.main, MAIN, "main")
        self._read(self.files.send, SEND)
        self._read(self.files.knowledge, KNOWLEDGE, "knowledge")
        self._read(self.files.profile, PROFILE, "profile")
        self._read(self.files.batch, BATCH, "batch")

    def system(
        self,
        target_user_id: str,
        day: date,
        *,
        knowledge: bool = True,
        profile: bool = True,
        batch: bool = False,
    ) -> str:
        """Main + guides (each only when its tools are offered: reference W13), day
        granularity. ``batch``: subconscious_batch_edit is offered (the main template's
        ``batch`` and the batch guide, which comes first: it is the same for every
        cycle, the knowledge and profile guides come and go)."""
        values = {
            "current_date": day.isoformat(),
            "target_user_id": target_user_id or "(未配置)",
            "batch": batch,
        }
        parts = [
            render(
                self._read(self.files.main, MAIN, "main"),
                character_prompt=self.character_prompt,
                **values,
            )
        ]
        if batch:
            parts.append(render(self._read(self.files.batch, BATCH, "batch"), **values))
        if knowledge:
            parts.append(render(self._read(self.files.knowledge, KNOWLEDGE, "knowledge"), **values))
        if profile:
            parts.append(render(self._read(self.files.profile, PROFILE, "profile"), **values))
        return "\n\n".join(part.strip() for part in parts)

    def send(self, intent: str, memory_context: str, now: datetime) -> str:
        return render(
            self._read(self.files.send, SEND),
            intent=intent,
            memory_context=memory_context,
            current_time=now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
            character_prompt=self.character_prompt,
        ).strip()
