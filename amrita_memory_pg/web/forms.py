"""The admin page's forms as pydantic models: each field's validator is the one
validation (domain/validation.py), and :func:`kit.parse_form` turns a refusal into the
page's line for that field. One place per form instead of a try/except per field."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, field_validator

from amrita_memory_pg.domain.keys import check_partition_key
from amrita_memory_pg.domain.profile import split_lines
from amrita_memory_pg.domain.records import Category, parse_tags
from amrita_memory_pg.domain.validation import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_QUERY_CHARS,
    MAX_TAGS_CHARS,
    InvalidInput,
    check_text,
    parse_category,
    parse_importance,
    parse_int,
)
from amrita_memory_pg.web.kit import FieldError

#: the memory list's age filter: at most this many days
MAX_AGE_DAYS = 36500


@dataclass
class MemoryForm:
    """What was typed in the add/edit form (shown again with the errors)."""

    content: str = ""
    category: str = ""
    importance: str = "5"
    tags: str = ""


class MemoryInput(BaseModel):
    """The add/edit form after the one validation (domain/validation.py)."""

    model_config = ConfigDict(frozen=True)

    content: str
    category: Category | None
    importance: int
    tags: tuple[str, ...]

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: str) -> str:
        content = check_text(value.strip(), max_chars=MAX_CONTENT_CHARS)
        if not content:
            raise FieldError("invalid.content_empty")
        return content

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, value: str) -> str | None:
        return parse_category(value) if value else None

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, value: str) -> int:
        return parse_importance(value)

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: str) -> tuple[str, ...]:
        return parse_tags(check_text(value, max_chars=MAX_TAGS_CHARS))


#: the page line of each field's refusal
MEMORY_MESSAGES = {
    "content": "invalid.content",
    "category": "invalid.category",
    "importance": "invalid.importance",
    "tags": "invalid.tags",
}


class FilterInput(BaseModel):
    """The list's typed filters after the one validation (in the order errors are shown)."""

    q: str
    category: str | None
    imin: int | None
    imax: int | None
    tags: tuple[str, ...]
    age: int | None

    @field_validator("q", mode="before")
    @classmethod
    def _q(cls, value: str) -> str:
        return check_text(value, max_chars=MAX_QUERY_CHARS) if value else value

    @field_validator("category", mode="before")
    @classmethod
    def _category(cls, value: str) -> str | None:
        return parse_category(value) if value else None

    @field_validator("imin", "imax", mode="before")
    @classmethod
    def _importance(cls, value: str) -> int | None:
        return parse_importance(value) if value else None

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: str) -> tuple[str, ...]:
        return parse_tags(check_text(value, max_chars=MAX_TAGS_CHARS)) if value else ()

    @field_validator("age", mode="before")
    @classmethod
    def _age(cls, value: str) -> int | None:
        if not value:
            return None
        try:
            days = parse_int(value)
        except InvalidInput:
            days = 0
        if not 1 <= days <= MAX_AGE_DAYS:
            raise FieldError("invalid.number", refs={"field": "memories.age"}, value=value[:20])
        return days


FILTER_MESSAGES = {
    "q": "invalid.query",
    "category": "invalid.category",
    "imin": "invalid.importance",
    "imax": "invalid.importance",
    "tags": "invalid.tags",
}


#: bulk actions on selected memories (pause: the partitions of the selected rows)
BULK_ACTIONS = ("delete", "tag", "importance", "pause")
#: a memory id as the list shows it
MEMORY_ID = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_ID_CHARS}}}")
#: at most this many rows in one bulk action (one transaction; the page says so)
MAX_BULK_ROWS = 200


class BulkInput(BaseModel):
    """The bulk form of the memory list and the cross-partition search, after the one
    validation: the action, the selected (partition, id) pairs and, for ``tag``, the tags."""

    model_config = ConfigDict(frozen=True)

    action: str
    selected: tuple[tuple[str, str], ...]
    tags: tuple[str, ...]
    #: the importance (1–10) the ``importance`` action sets (None: not given)
    importance: int | None = None

    @field_validator("action", mode="before")
    @classmethod
    def _action(cls, value: str) -> str:
        if value not in BULK_ACTIONS:
            raise FieldError("invalid.bulk_action")
        return value

    @field_validator("selected", mode="before")
    @classmethod
    def _selected(cls, values: list[str]) -> tuple[tuple[str, str], ...]:
        pairs: dict[tuple[str, str], None] = {}
        for value in values:
            key, _, memory_id = value.rpartition("/")
            check_partition_key(key)
            if not MEMORY_ID.fullmatch(memory_id):
                shown = memory_id[:MAX_ID_CHARS]
                raise InvalidInput(f"不是记忆编号：{shown}", en=f"is not a memory id: {shown}")
            pairs[(key, memory_id)] = None
        if not pairs:
            raise FieldError("invalid.bulk_none")
        if len(pairs) > MAX_BULK_ROWS:
            raise FieldError("invalid.bulk_many", n=len(pairs), max=MAX_BULK_ROWS)
        return tuple(pairs)

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: str) -> tuple[str, ...]:
        return parse_tags(check_text(value, max_chars=MAX_TAGS_CHARS)) if value else ()

    @field_validator("importance", mode="before")
    @classmethod
    def _importance(cls, value: str | None) -> int | None:
        return parse_importance(value) if value not in (None, "") else None


BULK_MESSAGES = {
    "selected": "invalid.bulk_selected",
    "tags": "invalid.tags",
    "importance": "invalid.importance",
}


class CrossSearchInput(BaseModel):
    """The cross-partition search's query (same rule as the list's search box)."""

    q: str

    @field_validator("q", mode="before")
    @classmethod
    def _q(cls, value: str) -> str:
        return check_text(value, max_chars=MAX_QUERY_CHARS) if value else value


CROSS_SEARCH_MESSAGES = {"q": "invalid.query"}


class ProfileInput(BaseModel):
    """The profile page's edit form after the one validation (the ``[profile]`` caps are
    the service's: it knows the settings)."""

    model_config = ConfigDict(frozen=True)

    summary: str
    lines: tuple[str, ...]
    version: int

    @field_validator("summary", mode="before")
    @classmethod
    def _summary(cls, value: str) -> str:
        summary = check_text(value.strip(), max_chars=MAX_CONTENT_CHARS)
        if not summary:
            raise FieldError("invalid.profile_summary_empty")
        return summary

    @field_validator("lines", mode="before")
    @classmethod
    def _lines(cls, value: str) -> tuple[str, ...]:
        return split_lines(check_text(value))

    @field_validator("version", mode="before")
    @classmethod
    def _version(cls, value: str) -> int:
        return parse_int(value)


PROFILE_MESSAGES = {
    "summary": "invalid.profile_summary",
    "lines": "invalid.profile_lines",
    "version": "invalid.profile_version",
}
