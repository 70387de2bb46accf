"""The old plugin's custom L3 prompt templates: what ``import-legacy`` says about each.

amrita_plugin_memory kept its templates in ``config/amrita_plugin_memory/prompt/``
(next to the old data directory's ``../../config``) and wrote the defaults there on first
use, so every old install has them, edited or not. None is copied: a file cannot be told
apart from the old default, and each old default would replace a template written for
this loop. Instead the import names every file found and says why it is not carried and
what to do with an edit in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROMPT_SUBDIR = Path("config") / "amrita_plugin_memory" / "prompt"

#: why each known template is not carried, and where an edit in it goes
REASONS = {
    "subconscious_main.md.jinja2": (
        "主模板不导入：旧模板要求模型先调用 subconscious_get_context、逐条读写，"
        "而本插件的运行器已替模型调用它并提供 subconscious_merge_memories，旧指令会误导模型；"
        "写在旧模板里的人设请放进 [subconscious] character_prompt / character_prompt_file"
    ),
    "subconscious_send.md.jinja2": (
        "主动消息模板不导入：无法区分改过的文件与旧默认文件；变量相同（intent、memory_context、"
        "current_time、character_prompt），改过的话请手动复制到 [subconscious] prompt_dir 下的 "
        "prompt/subconscious_send.md.jinja2"
    ),
    "knowledge_guide.md.jinja2": (
        "知识库指南不导入：旧默认指南比本插件的长一倍多（每次调用都要付这些 token）；"
        "改过的话请手动复制到 prompt_dir 下的 prompt/knowledge_guide.md.jinja2"
    ),
    "profile_guide.md.jinja2": (
        "画像指南不导入：同上；改过的话请手动复制到 prompt_dir 下的 prompt/profile_guide.md.jinja2"
    ),
}
UNKNOWN = "旧插件不读取这个文件，不导入"


@dataclass(frozen=True, slots=True)
class LegacyPrompt:
    path: Path
    reason: str


def legacy_prompts(old_data_dir: Path) -> list[LegacyPrompt]:
    """The old templates next to ``old_data_dir`` (``data/amrita_plugin_memory``), each
    with why it is not carried; [] when there is no prompt directory. README.md (the old
    plugin's generated help) is not listed."""
    directory = old_data_dir.expanduser().resolve().parent.parent / PROMPT_SUBDIR
    if not directory.is_dir():
        return []
    return [
        LegacyPrompt(path, REASONS.get(path.name, UNKNOWN))
        for path in sorted(directory.iterdir())
        if path.is_file() and path.name != "README.md"
    ]
