"""The L3 loop's prompt templates (reference §8.5, §13.3): jinja2 files the user may edit.

Five templates — main, send, knowledge guide, profile guide, batch guide — live under
``[subconscious] prompt_dir`` (``prompt_*_file``; an absolute path is used as is).
Missing files are created from the defaults below on first use, and files are re-read
every cycle, so an edit needs no restart.

The invariance rule: the system prompt gets nothing that changes within a UTC day (the
date, the persona; the target only if a user's template names it), so it is
byte-identical for every call of every cycle on one day and providers' prefix caches
hit. Everything else — the time, the last run,
counts, the idle plan — comes through ``subconscious_get_context``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import jinja2

from amrita_memory_pg.settings import SubconsciousSettings

log = logging.getLogger(__name__)

MAIN = """你是「记忆整理员」，在后台维护一个用户或群的长期记忆库（目标见下方消息）。今天是 {{ current_date }}（UTC）。
{% if character_prompt %}
你所服务的机器人的人设（只在生成主动消息时参考，整理时保持客观）：
{{ character_prompt }}
{% endif %}
规则：
1. 只通过工具行事，不编造记忆。
2. subconscious_get_context 已由系统调用，结果在对话中。
3. duplicate_candidates 是预筛选出的疑似重复组：真正重复的每组{% if batch %}合并一次（merge）{% else %}调用一次 subconscious_merge_memories{% endif %}
   （保留信息最全或最重要的一条，必要时给出合并后的 content，保留更丰富的细节）。
4. cleanup_candidates 是最旧的低重要性记忆：确已过时或无用的{% if batch %}删除（delete）{% else %}用 subconscious_delete_memory 删除{% endif %}。
5. 按需再读（subconscious_read_memory、subconscious_duplicate_helper、subconscious_read_sessions），
   不要把整个记忆库读进来。处理矛盾（保留更新或更具体的）、标签不一致、重要程度失衡；
   memo_hint 不为空时压缩备忘录。
6. source=user 的记忆是用户手动添加的：不能改内容、重要程度或删除，只能追加标签。
{% if batch %}7. 本轮的全部修改放进一次 subconscious_batch_edit，同一轮调用 subconscious_iter_stop，一两句话总结。
{% else %}7. 一轮可以调用多个工具：确定的修改放在同一轮，最后一轮同时调用 subconscious_iter_stop，一两句话总结。
{% endif %}8. 只输出工具调用。
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
- 适合写入知识库的是与具体用户无关、可以复用的知识；不要写入任何个人隐私。
- 写之前先 subconscious_knowledge_search / subconscious_knowledge_list，优先更新已有条目，少建零碎的小条目。
- 读取长条目时按行窗口读取（total_lines 超过 100 行时分段）。
- 条目正文有长度上限，超出会被拒绝。
"""

PROFILE = """## 用户画像
profile_hint 不为空时更新画像：已有画像先读（subconscious_get_profile）再增量修改，尚无画像直接写入；只写稳定特质（性格、偏好、背景、与机器人的关系、重要事件），不写一次性、不确定或敏感的内容；摘要不超过 200 字。
"""

BATCH = """## 批量修改
看完预筛选就决定本轮要做的全部修改，用一次 subconscious_batch_edit 提交（ops 按顺序执行），不要一次只改一条。
整批在一个事务中：任何一项无效，整批都不执行，回复的 errors 按序号说明原因；修正后重新提交整批。
"""

README = """# L3 prompt templates

Jinja2 files read by the consolidation loop at the start of every cycle (edits need no
restart). Missing files are re-created from the built-in defaults.

| file | variables |
|---|---|
| subconscious_main.md.jinja2 | current_date (UTC YYYY-MM-DD), target_user_id, character_prompt, batch (true when subconscious_batch_edit is offered) |
| subconscious_send.md.jinja2 | intent, memory_context, current_time ("%Y-%m-%d %H:%M:%S UTC"), character_prompt |
| knowledge_guide.md.jinja2 | current_date, target_user_id |
| profile_guide.md.jinja2 | current_date, target_user_id |
| batch_guide.md.jinja2 | current_date, target_user_id |

Keep anything that changes during a day (times, counts) out of the main and guide
templates: the system prompt must stay byte-identical within a UTC day so that the
provider's prefix cache hits. The default main template does not name the target
either, so cycles of different targets on one day share the prefix. Undefined
variables render as empty strings.
"""


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

    def _read(self, path: Path, default: str) -> str:
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            pass
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(default, encoding="utf-8")
            readme = path.parent / "README.md"
            if not readme.exists():
                readme.write_text(README, encoding="utf-8")
        except OSError as exc:  # a read-only config dir: the default still works
            log.warning("cannot create the prompt template %s: %s", path, exc)
        return default

    def ensure(self) -> None:
        """Create every missing template (and the README) now."""
        self._read(self.files.main, MAIN)
        self._read(self.files.send, SEND)
        self._read(self.files.knowledge, KNOWLEDGE)
        self._read(self.files.profile, PROFILE)
        self._read(self.files.batch, BATCH)

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
        }
        parts = [
            render(
                self._read(self.files.main, MAIN),
                character_prompt=self.character_prompt,
                batch=batch,
                **values,
            )
        ]
        if batch:
            parts.append(render(self._read(self.files.batch, BATCH), **values))
        if knowledge:
            parts.append(render(self._read(self.files.knowledge, KNOWLEDGE), **values))
        if profile:
            parts.append(render(self._read(self.files.profile, PROFILE), **values))
        return "\n\n".join(part.strip() for part in parts)

    def send(self, intent: str, memory_context: str, now: datetime) -> str:
        return render(
            self._read(self.files.send, SEND),
            intent=intent,
            memory_context=memory_context,
            current_time=now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
            character_prompt=self.character_prompt,
        ).strip()
