"""Input checks shared by every surface: the chat tools, ``/memory``, the CLI, the web page.

Text that PostgreSQL cannot store (a NUL character) or that is not Unicode text at all
(a lone UTF-16 surrogate, which JSON can spell as ``"\\ud800"``) and integers outside
the 64-bit range used to reach asyncpg, whose errors (``invalid byte sequence for
encoding "UTF8": 0x00``, ``value out of int64 range``) went to the LLM with a traceback
in the log. These functions refuse such input first, with a fragment of one plain
sentence — what is wrong and what is allowed — that each surface puts after the name
of the argument (``write_memory 的参数 content`` + reason). Pure: no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

#: The caps of the tool surface (the reference's ``write_memory`` content cap is 4000);
#: ``/memory … add`` and any later surface apply the same ones.
MAX_CONTENT_CHARS = 4000
MAX_TAGS_CHARS = 200
MAX_QUERY_CHARS = 1000
#: a short note a person adds: why a partition is paused
MAX_NOTE_CHARS = 500
#: ids are 32 hex characters; imported ones may be longer, never past this
MAX_ID_CHARS = 64

#: PostgreSQL ``bigint``, the widest integer a runtime statement takes.
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

#: How much of a refused value an error message echoes back.
ECHO_CHARS = 40

_SURROGATE = re.compile("[\ud800-\udfff]")
#: A signed decimal integer in ASCII digits only: ``str.isdigit`` and ``int`` also take
#: ``²``, ``①`` or ``٣``, which is how ``/memory user list ²`` crashed.
_ASCII_INT = re.compile(r"[+-]?[0-9]+")
#: More significant digits than int64 can have (19). Checked before ``int()``, which
#: refuses strings over 4300 digits with a ValueError of its own.
_INT64_DIGITS = 19


class InvalidInput(ValueError):
    """Refused input. ``reason`` reads after the argument's name: «过长（…），请精简后重试»;
    ``en`` the same in English, for a person who reads the CLI or the page in English (the
    chat surfaces answer in Chinese, as the reference did). A refusal raised without one
    reads in Chinese everywhere."""

    def __init__(self, reason: str, *, en: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.en = en

    def said(self, lang: str) -> str:
        """The reason in ``lang`` (``zh`` or ``en``)."""
        return self.en if lang == "en" and self.en is not None else self.reason


def echo(value: object, limit: int = ECHO_CHARS) -> str:
    """``repr`` of a refused value, safe to put in a reply: short and valid UTF-8.

    ``repr`` escapes NUL, lone surrogates and other unprintable characters (Chinese text
    stays readable), so an error message never carries what it refuses; long values
    are cut with ``…``. Some values have no ``repr`` (an int of over 4300 digits, a
    list nested thousands deep): they are described instead.
    """
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        if isinstance(value, int):
            return f"<{value.bit_length()} 位二进制的整数>"
        return f"<无法显示的 {type(value).__name__}>"
    return text[:limit] + ("…" if len(text) > limit else "")


def plain(text: str, limit: int = ECHO_CHARS) -> str:
    """A name to show as is when it is clean and short (``mood``), else its escaped ``echo``."""
    if len(text) <= limit and text.isprintable():
        return text
    return echo(text, limit)


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored as PostgreSQL text, or None when it can."""
    refused = text_refusal(text)
    return None if refused is None else refused.reason


def text_refusal(text: str) -> InvalidInput | None:
    """:func:`text_problem` in both languages."""
    if "\x00" in text:
        return InvalidInput(
            "含有 NUL 字符（\\x00），数据库无法保存，请删除该字符后重试",
            en="contains a NUL character (\\x00), which the database cannot store: remove it and try again",
        )
    match = _SURROGATE.search(text)
    if match is not None:
        code = ord(match.group())
        return InvalidInput(
            f"含有孤立的代理字符 U+{code:04X}（不是有效的 Unicode 文本），请删除该字符后重试",
            en=f"contains a lone surrogate U+{code:04X} (not valid Unicode text): remove it and try again",
        )
    return None


def scrub(text: str) -> str:
    """``text`` with NUL and lone surrogates replaced by U+FFFD, for what is recorded
    rather than refused: a chat line is kept (and counted) with a visible mark where
    the unstorable character was, instead of failing the whole write."""
    if "\x00" not in text and _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub("\ufffd", text.replace("\x00", "\ufffd"))


def not_utf8(name: str, exc: UnicodeDecodeError) -> str:
    """Why a file ``name`` could not be read as text, with the fix: a sentence, never the
    decoder's traceback. A UTF-16 file (a byte-order mark, what Windows tools write) is
    named as such."""
    data = bytes(exc.object)
    byte = data[exc.start : exc.start + 1]
    shown = f"0x{byte[0]:02x}" if byte else "an incomplete character"
    utf16 = exc.start == 0 and data[:2] in (b"\xff\xfe", b"\xfe\xff")
    kind = "UTF-16 text" if utf16 else f"not UTF-8 text ({shown} at byte {exc.start})"
    return f"{name} is {kind}: save it as UTF-8 and try again"


def too_long(length: int, max_chars: int) -> str:
    """The length refusal, with both numbers so the caller knows how much to cut."""
    return f"过长（{length} 字符，上限 {max_chars}），请精简后重试"


def too_long_refusal(length: int, max_chars: int) -> InvalidInput:
    """:func:`too_long` in both languages."""
    return InvalidInput(
        too_long(length, max_chars),
        en=f"is too long ({length} characters, at most {max_chars}): shorten it and try again",
    )


def check_text(text: str, *, max_chars: int | None = None) -> str:
    """``text`` unchanged, or :class:`InvalidInput` if too long, with NUL or lone surrogates.

    The length is checked first: it is O(1) and the answer for a huge paste.
    """
    if max_chars is not None and len(text) > max_chars:
        raise too_long_refusal(len(text), max_chars)
    refused = text_refusal(text)
    if refused is not None:
        raise refused
    return text


def check_lines(lines: Sequence[str], *, max_line_chars: int, max_lines: int) -> None:
    """Refuse a list of text lines: too many, one too long, or one the database cannot store.

    The refusal names the first offending line by its 0-based number, the numbering the
    profile tools show, so the caller can find it.
    """
    if len(lines) > max_lines:
        raise InvalidInput(
            f"行数过多（{len(lines)} 行，上限 {max_lines}），请精简后重试",
            en=f"has too many lines ({len(lines)}, at most {max_lines}): shorten it and try again",
        )
    for number, line in enumerate(lines):
        try:
            check_text(line, max_chars=max_line_chars)
        except InvalidInput as exc:
            raise InvalidInput(
                f"第 {number} 行{exc.reason}", en=f"line {number} {exc.en}"
            ) from None


def parse_int(value: object) -> int:
    """An integer argument as an LLM or a JSON client sends it, within int64.

    Accepted: an ``int``; a finite float with no fractional part (``5.0``); a string of
    ASCII digits with an optional sign and surrounding spaces (``" 5"``, ``"-3"``).
    Refused: booleans (``True`` is not a count), other strings, fractions, NaN, inf,
    and anything outside ``INT64_MIN..INT64_MAX`` — before it can reach the driver.
    """
    number: int
    if isinstance(value, bool):
        raise InvalidInput("应为整数，收到布尔值", en="should be an integer, got a boolean")
    if isinstance(value, int):
        number = int(value)  # a plain int, also for int subclasses such as IntEnum
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and _ASCII_INT.fullmatch(value.strip()):
        digits = value.strip().lstrip("+-").lstrip("0")
        if len(digits) > _INT64_DIGITS:
            raise _out_of_range(value)
        number = int(value.strip())
    else:
        raise InvalidInput(
            f"应为整数，收到 {echo(value)}", en=f"should be an integer, got {echo(value)}"
        )
    if not INT64_MIN <= number <= INT64_MAX:
        raise _out_of_range(value)
    return number


def _out_of_range(value: object) -> InvalidInput:
    return InvalidInput(
        f"超出 64 位整数范围（{INT64_MIN} 到 {INT64_MAX}），收到 {echo(value)}",
        en=f"is outside the 64-bit integer range ({INT64_MIN} to {INT64_MAX}), got {echo(value)}",
    )


def clamp(number: int, lo: int | None, hi: int | None) -> int:
    """``number`` moved into ``lo..hi`` (either bound may be open): the reference clamps
    list limits instead of refusing them."""
    if lo is not None:
        number = max(lo, number)
    if hi is not None:
        number = min(hi, number)
    return number


def parse_count(text: str, *, lo: int, hi: int) -> int | None:
    """A page number or count typed by a person, clamped into ``lo..hi``; None if not one.

    Only ASCII digits count (``²``, ``①``, ``٣`` are not numbers here, F9); a number
    too long to matter is ``hi`` without being converted.
    """
    stripped = text.strip()
    if not stripped or not stripped.isascii() or not stripped.isdigit():
        return None
    if len(stripped.lstrip("0")) > _INT64_DIGITS:
        return hi
    return clamp(int(stripped), lo, hi)


# ------------------------------------------------------------------ knowledge base
#: Knowledge fields (reference §10.3 advised "≤200" for the summary; the table's CHECKs
#: hold the same ceilings). The body's cap is the configured ``knowledge_max_chars``.
MAX_KNOWLEDGE_TITLE_CHARS = 200
MAX_KNOWLEDGE_SUMMARY_CHARS = 1000
MAX_SUGGESTION_REASON_CHARS = 1000
_SEPARATOR_LINE = re.compile(r"^---\s*$", re.MULTILINE)
_KID = re.compile(r"^[0-9a-f]{8,32}$")


def check_knowledge_title(title: str) -> str:
    """A title: one line, 1..200 characters (it is the Markdown file's ``# `` line)."""
    title = check_text(title.strip(), max_chars=MAX_KNOWLEDGE_TITLE_CHARS)
    if not title:
        raise InvalidInput("不能为空", en="must not be empty")
    if "\n" in title or "\r" in title:
        raise InvalidInput("只能是一行（不能含换行）", en="must be one line (no line breaks)")
    return title


def check_knowledge_summary(summary: str) -> str:
    """A summary: ≤ 1000 characters, not empty (it is what gets embedded), no ``---``
    line (which would split it from the body in the Markdown file)."""
    summary = check_text(summary.strip(), max_chars=MAX_KNOWLEDGE_SUMMARY_CHARS)
    if not summary:
        raise InvalidInput(
            "不能为空（摘要是检索所用的文本）", en="must not be empty (it is the text searched)"
        )
    if _SEPARATOR_LINE.search(summary):
        raise InvalidInput(
            "不能含单独一行的 ---（它分隔摘要与正文）",
            en="must not contain a line of --- alone (it separates the summary from the body)",
        )
    return summary


def check_knowledge_body(body: str, max_chars: int) -> str:
    """A body within ``knowledge_max_chars`` (the write re-checks it under the row lock)."""
    return check_text(body, max_chars=max_chars)


def check_kid(kid: str) -> str:
    """A knowledge id: 8 (up to 32) lowercase hex characters."""
    kid = kid.strip()
    if not _KID.match(kid):
        raise InvalidInput(
            f"不是知识条目 ID（8 位十六进制，如 0a1b2c3d），收到 {echo(kid)}",
            en=f"is not a knowledge entry id (8 hex characters, e.g. 0a1b2c3d), got {echo(kid)}",
        )
    return kid


#: every name a person or a model may use for a category, → the stored value
CATEGORY_ALIASES: dict[str, str] = {
    "preference": "preference",
    "pref": "preference",
    "偏好": "preference",
    "用户偏好": "preference",
    "rule": "rule",
    "规则": "rule",
    "学到的规则": "rule",
    "event": "event",
    "事件": "event",
    "重要事件": "event",
    "knowledge": "knowledge",
    "知识": "knowledge",
    "知识库": "knowledge",
}
IMPORTANCE_MIN = 1
IMPORTANCE_MAX = 10


def parse_category(text: str) -> str:
    """A category name (English, or the second source's Chinese) → its stored value."""
    key = text.strip().lower()
    if key in CATEGORY_ALIASES:
        return CATEGORY_ALIASES[key]
    raise InvalidInput(
        f"不是已知的类别：{echo(text)}；可用 preference(偏好) / rule(规则) / event(事件) / knowledge(知识)",
        en=f"is not a known category: {echo(text)}; use preference, rule, event or knowledge",
    )


def parse_importance(value: object) -> int:
    """An importance level 1–10 (a number, or its digits typed by a person)."""
    number = parse_int(value)
    if not IMPORTANCE_MIN <= number <= IMPORTANCE_MAX:
        raise InvalidInput(
            f"应在 {IMPORTANCE_MIN}–{IMPORTANCE_MAX} 之间，收到 {echo(value)}",
            en=f"should be between {IMPORTANCE_MIN} and {IMPORTANCE_MAX}, got {echo(value)}",
        )
    return number
