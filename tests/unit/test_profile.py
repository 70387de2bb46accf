"""The pure profile model: one parser, one numbering for read and update (§11, B2 fixed)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amrita_memory_pg.domain.errors import ProfileRefused
from amrita_memory_pg.domain.keys import is_personal_key
from amrita_memory_pg.domain.profile import (
    Profile,
    ProfileLimits,
    apply_edit,
    check_edit,
    check_profile,
    describe,
    make_edit,
    parse_profile_file,
    read_window,
    render_numbered,
    render_profile_file,
    split_lines,
)
from amrita_memory_pg.settings.sections import ProfileSettings

LIMITS: ProfileLimits = ProfileSettings(summary_max_chars=100, line_max_chars=20, max_lines=5)


def update(
    profile: Profile, summary: str, new_lines: str, start: int | None = None, end: int | None = None
) -> Profile:
    return apply_edit(profile, make_edit(summary, new_lines, start, end))


def test_the_b2_sequence_of_the_reference_gives_the_intended_result() -> None:
    """§11.3: append L1 L2, append L3, replace read-line 0 with X. The reference ended with
    a phantom blank line and five lines; the intent was X L2 L3."""
    p = update(Profile(), "S", "L1\nL2")
    assert p.lines == ("L1", "L2")
    p = update(p, "S", "L3")
    assert p.lines == ("L1", "L2", "L3")  # no leading blank line
    assert read_window(p).content == "L1\nL2\nL3"
    p = update(p, "S", "X", 0, 1)
    window = read_window(p)
    assert (window.summary, window.content, window.total_lines) == ("S", "X\nL2\nL3", 3)
    assert read_window(p, 0, 1).content == "X"  # read-line 0 is the line the update hit


def test_insert_delete_and_replace() -> None:
    p = Profile("S", ("a", "b", "c"))
    assert update(p, "S", "x", 1, 1).lines == ("a", "x", "b", "c")  # insert before line 1
    assert update(p, "S", "", 0, 2).lines == ("c",)  # a real delete
    assert update(p, "S", "x\ny", 1, 2).lines == ("a", "x", "y", "c")
    assert update(p, "S", "z", 3, 3).lines == ("a", "b", "c", "z")  # insert at the end
    assert update(p, "T", "").lines == p.lines  # summary only
    assert update(p, "T", "").summary == "T"


@pytest.mark.parametrize(
    ("start", "end", "fragment"),
    [
        (0, None, "要么都提供"),
        (None, 2, "要么都提供"),
        (-1, 1, "不能为负数"),
        (2, 1, "不能小于"),
    ],
)
def test_impossible_ranges_are_refused_before_reading(
    start: int | None, end: int | None, fragment: str
) -> None:
    with pytest.raises(ProfileRefused, match=fragment):
        make_edit("S", "x", start, end)


def test_a_range_past_the_end_is_refused_with_the_line_count() -> None:
    p = Profile("S", ("a", "b"))
    with pytest.raises(ProfileRefused, match="当前共 2 行"):
        update(p, "S", "x", 1, 3)
    with pytest.raises(ProfileRefused, match="当前共 2 行"):
        update(p, "S", "x", 3, 3)


def test_an_empty_summary_is_refused() -> None:
    with pytest.raises(ProfileRefused, match="summary 不能为空"):
        make_edit("  ", "x", None, None)


def test_the_parser_drops_phantom_blank_lines_and_keeps_inner_ones() -> None:
    assert split_lines("") == ()
    assert split_lines("\n\n") == ()
    assert split_lines("\na  \r\n\r\nb\n") == ("a", "", "b")
    assert split_lines("x\ry") == ("x", "y")
    assert split_lines("  indented") == ("  indented",)


def test_read_window_clamps_and_never_inverts() -> None:
    p = Profile("S", ("a", "b", "c"))
    w = read_window(p, 5)
    assert (w.range_start, w.range_end, w.content) == (3, 3, "")  # the reference gave 5, 3
    w = read_window(p, -2, 2)
    assert (w.range_start, w.range_end, w.content) == (0, 2, "a\nb")
    w = read_window(p, 2, 1)
    assert (w.range_start, w.range_end) == (2, 2)
    assert read_window(Profile()).reply() == {
        "status": "success",
        "summary": "",
        "content": "",
        "total_lines": 0,
        "range_start": 0,
        "range_end": 0,
    }


def test_limits_and_unstorable_text() -> None:
    with pytest.raises(ProfileRefused, match="summary 过长"):
        check_edit(make_edit("s" * 101, "", None, None), LIMITS)
    with pytest.raises(ProfileRefused, match="第 1 行过长"):
        check_edit(make_edit("S", "ok\n" + "x" * 21, None, None), LIMITS)
    with pytest.raises(ProfileRefused, match="NUL"):
        check_edit(make_edit("S", "a\x00b", None, None), LIMITS)
    with pytest.raises(ProfileRefused, match="NUL"):
        check_edit(make_edit("S\x00", "", None, None), LIMITS)
    with pytest.raises(ProfileRefused, match="行数过多"):
        check_profile(Profile("S", tuple("abcdef")), LIMITS)
    check_profile(Profile("S", tuple("abcde")), LIMITS)


def test_describe_names_the_operation() -> None:
    p = Profile("S", ("a", "b", "c"))
    assert describe(make_edit("S", "x\ny", None, None), p) == "append 2 lines at 3"
    assert describe(make_edit("S", "x\ny", 0, 1), p) == "replace [0:1] -> [0:2]"
    assert describe(make_edit("S", "x", 1, 1), p) == "insert 1 lines at 1"
    assert describe(make_edit("S", "", 0, 2), p) == "delete [0:2]"
    assert describe(make_edit("S", "", None, None), p) == "summary only"


def test_numbered_rendering_and_personal_keys() -> None:
    assert render_numbered(("a", "b"), 9) == " 9: a\n10: b"
    assert is_personal_key("QQPlatform_Private_10001")
    assert is_personal_key("user_10001")
    assert is_personal_key("DiscordPlatform_Private_ab-c")
    assert not is_personal_key("QQPlatform_Group_555")
    assert not is_personal_key("group_555")
    assert not is_personal_key("global")


LINE = st.text(st.characters(blacklist_characters="\r\n", codec="utf-8"), max_size=8).map(
    str.rstrip
)
PROFILES = st.builds(lambda lines: Profile("S", tuple(lines)), st.lists(LINE, max_size=12))


@st.composite
def profile_and_range(draw: st.DrawFn) -> tuple[Profile, int, int]:
    profile = draw(PROFILES)
    start = draw(st.integers(0, profile.total_lines))
    end = draw(st.integers(start, profile.total_lines))
    return profile, start, end


@given(profile_and_range(), st.lists(LINE.filter(bool), max_size=5))
def test_read_numbering_is_update_numbering(case: tuple[Profile, int, int], new: list[str]) -> None:
    """What read shows as lines [s, e) is exactly what an update of [s, e) replaces, and
    afterwards read shows the new lines at [s, s + len(new)), the rest unmoved."""
    before, s, e = case
    removed = read_window(before, s, e).content
    assert removed == "\n".join(before.lines[s:e])
    after = update(before, "S", "\n".join(new), s, e)
    assert read_window(after, s, s + len(new)).content == "\n".join(new)
    assert read_window(after, 0, s).content == read_window(before, 0, s).content
    assert read_window(after, s + len(new)).content == read_window(before, e).content
    assert after.total_lines == before.total_lines - (e - s) + len(new)


@given(PROFILES, st.lists(LINE.filter(bool), max_size=5))
def test_append_lands_after_the_last_read_line(before: Profile, new: list[str]) -> None:
    after = update(before, "S", "\n".join(new))
    assert read_window(after, before.total_lines).content == "\n".join(new)
    assert after.lines[: before.total_lines] == before.lines


@given(st.text(max_size=40))
def test_the_parser_never_yields_a_leading_or_trailing_blank_line(text: str) -> None:
    lines = split_lines(text)
    assert not lines or (lines[0] != "" and lines[-1] != "")
    assert all("\n" not in line and "\r" not in line for line in lines)


def test_the_reference_file_parses_with_one_numbering() -> None:
    """The file the reference's B2 sequence left behind (a phantom blank line after the
    separator, a ``---`` inside the summary text) imports as the intended profile."""
    text = "喜欢猫---也喜欢狗\n---\n\nL1\nL2\nL3\n"
    profile = parse_profile_file(text)
    assert (profile.summary, profile.lines) == ("喜欢猫---也喜欢狗", ("L1", "L2", "L3"))
    assert parse_profile_file("只有摘要").lines == ()
    assert parse_profile_file("S\r\n---\r\na\r\n\r\nb").lines == ("a", "", "b")


SUMMARIES = (
    st.text(st.characters(blacklist_characters="\r", codec="utf-8"), max_size=12)
    .map(str.strip)
    .filter(lambda s: all(line.strip() != "---" for line in s.split("\n")))
)


@given(SUMMARIES, st.lists(LINE, max_size=8))
def test_render_then_parse_is_the_identity(summary: str, lines: list[str]) -> None:
    profile = Profile(summary, split_lines("\n".join(lines)))
    assert parse_profile_file(render_profile_file(profile)) == profile
