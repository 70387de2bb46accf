"""User profiles: read windows, edits with history, revert (reference §11, B2 fixed).

One profile per personal partition. Every write is an edit computed by the pure
:func:`~amrita_memory_pg.domain.profile.apply_edit` from the stored content and saved
under a per-profile lock, by a compare-and-set on the version (a writer that bypassed
the lock makes the edit apply again to the new content), so concurrent edits never lose
lines. Whatever the edit, the
caps of ``[profile]`` are checked before anything is written, and every change leaves
a history row (who, what, old and new content) so a bad rewrite can be reverted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from amrita_memory_pg.domain.errors import DatabaseRefused, ProfileRefused
from amrita_memory_pg.domain.keys import is_personal_key
from amrita_memory_pg.domain.profile import (
    Profile,
    ProfileActor,
    ProfileChange,
    ProfileEdit,
    ProfileInfo,
    ProfileLimits,
    ProfileWindow,
    apply_edit,
    check_edit,
    check_profile,
    describe,
    make_edit,
    read_window,
)
from amrita_memory_pg.settings import ProfileSettings
from amrita_memory_pg.storage.profiles import ProfileRepository

#: compare-and-set attempts before a save gives up (each lost one means another writer
#: committed in between; eight in a row means a storm, not bad luck)
MAX_ATTEMPTS = 8


@dataclass(frozen=True, slots=True)
class ProfileUpdate:
    """The result of a write: the profile now and whether anything changed."""

    profile: Profile
    changed: bool
    operation: str


def require_personal(partition_key: str) -> None:
    """Profiles belong to users: a group (or ``global``) partition has none."""
    if not is_personal_key(partition_key):
        raise ProfileRefused(
            f"{partition_key} 不是个人分区：只有用户（私聊分区）有画像，群没有画像"
        )


class ProfileService:
    """Profiles over a :class:`ProfileRepository`, with the ``[profile]`` settings."""

    def __init__(self, repo: ProfileRepository, settings: ProfileSettings) -> None:
        self.repo = repo
        self.settings = settings
        self.limits: ProfileLimits = settings  # the section is the caps

    async def get(self, partition_key: str) -> Profile:
        require_personal(partition_key)
        return await self.repo.get(partition_key)

    async def read(
        self, partition_key: str, start: int | None = None, end: int | None = None
    ) -> ProfileWindow:
        """A read window of the profile (§11.2; empty when there is none)."""
        return read_window(await self.get(partition_key), start, end)

    async def edit(
        self,
        partition_key: str,
        edit: ProfileEdit,
        actor: ProfileActor,
        *,
        dry_run: bool = False,
        now: datetime | None = None,
    ) -> ProfileUpdate:
        """Apply ``edit`` and save it; :class:`ProfileRefused` (nothing written) for a range
        outside the profile or a result over a cap. ``dry_run`` checks without saving."""
        require_personal(partition_key)
        check_edit(edit, self.limits)
        if dry_run:
            before = await self.repo.get(partition_key)
            self._apply(before, edit)
            return ProfileUpdate(before, False, describe(edit, before))

        def compute(before: Profile) -> tuple[Profile, str]:
            return self._apply(before, edit), describe(edit, before)

        return await self._write(partition_key, compute, actor, now)

    async def rewrite(
        self,
        partition_key: str,
        summary: str,
        lines: tuple[str, ...],
        actor: ProfileActor,
        *,
        version: int,
        now: datetime | None = None,
    ) -> ProfileUpdate:
        """Replace the summary and every line, as edited by a person from ``version`` (the
        admin page's in-place edit): one replace of the whole body, so the history row
        says what changed like any edit's. Refused, nothing written, when the profile is
        no longer at ``version`` (another writer came first: the person edited a text
        that is gone), or for a result over a cap."""
        require_personal(partition_key)
        text = make_edit(summary, "", None, None).summary  # the one summary rule
        check_edit(ProfileEdit(text, lines), self.limits)

        def compute(before: Profile) -> tuple[Profile, str]:
            if before.version != version:
                raise ProfileRefused(
                    f"{partition_key} 的画像已被修改（现在是 v{before.version}，编辑的是 "
                    f"v{version}）：请重新读取后再编辑"
                )
            edit = ProfileEdit(text, lines, 0, before.total_lines)
            return self._apply(before, edit), describe(edit, before)

        return await self._write(partition_key, compute, actor, now)

    def _apply(self, before: Profile, edit: ProfileEdit) -> Profile:
        """``edit`` applied to ``before`` and checked against the caps (raises, writes nothing)."""
        after = apply_edit(before, edit)
        if after.total_lines > self.limits.max_lines:
            raise ProfileRefused(
                f"画像将有 {after.total_lines} 行，超过上限 {self.limits.max_lines} 行"
                f"（当前 {before.total_lines} 行）：请先合并或删除旧行（new_lines 为空的范围替换即删除）"
            )
        check_profile(after, self.limits)
        return after

    async def revert(
        self,
        partition_key: str,
        version: int,
        actor: ProfileActor,
        *,
        now: datetime | None = None,
    ) -> ProfileUpdate:
        """Restore the content the profile had at ``version`` (0 = before its first change),
        as a new change; the history must still hold that version or the one after it."""
        require_personal(partition_key)
        if version < 0:
            raise ProfileRefused(f"版本号不能为负数，收到 {version}")
        target = await self._content_at(partition_key, version)
        operation = f"revert to v{version}"

        def compute(before: Profile) -> tuple[Profile, str]:
            if version > before.version:
                raise ProfileRefused(
                    f"{partition_key} 的画像当前是 v{before.version}，没有 v{version}"
                )
            return target, operation

        return await self._write(partition_key, compute, actor, now)

    async def replace(
        self,
        partition_key: str,
        content: Profile,
        actor: ProfileActor,
        *,
        operation: str,
        now: datetime | None = None,
    ) -> ProfileUpdate:
        """Replace the whole profile (an import), checked against the caps first."""
        require_personal(partition_key)
        check_profile(content, self.limits)
        return await self._write(partition_key, lambda _before: (content, operation), actor, now)

    async def _write(
        self,
        partition_key: str,
        compute: Callable[[Profile], tuple[Profile, str]],
        actor: ProfileActor,
        now: datetime | None,
    ) -> ProfileUpdate:
        """Under the profile's lock: read, ``compute`` the new content (it may refuse, and
        then nothing is written), save it with a history row unless nothing changed."""
        for _ in range(MAX_ATTEMPTS):
            async with self.repo.locked(partition_key) as locked:
                before = locked.profile
                after, operation = compute(before)
                if (after.summary, after.lines) == (before.summary, before.lines):
                    return ProfileUpdate(before, False, operation)
                version = await locked.save(
                    after,
                    operation=operation,
                    actor=actor,
                    keep=self.settings.history_keep,
                    now=now or datetime.now(UTC),
                )
            if version is not None:
                return ProfileUpdate(Profile(after.summary, after.lines, version), True, operation)
        raise _busy()

    async def listing(self, limit: int, offset: int = 0) -> tuple[int, list[ProfileInfo]]:
        """(total, a page of profiles), the most recently changed first."""
        return await self.repo.listing(max(1, limit), max(0, offset))

    async def history(self, partition_key: str, limit: int | None = None) -> list[ProfileChange]:
        """The kept changes, newest first."""
        require_personal(partition_key)
        return await self.repo.history(partition_key, limit or self.settings.history_keep)

    async def change(self, partition_key: str, version: int) -> ProfileChange | None:
        require_personal(partition_key)
        return await self.repo.change(partition_key, version)

    async def _content_at(self, partition_key: str, version: int) -> Profile:
        """The content after ``version``: its own history row, else the old content of the
        next one (how version 0, the empty profile, is found)."""
        entry = await self.repo.change(partition_key, version) if version > 0 else None
        if entry is not None and entry.new_lines is not None:
            return Profile(entry.new_summary, entry.new_lines, version)
        following = await self.repo.change(partition_key, version + 1)
        if following is not None and following.old_lines is not None:
            return Profile(following.old_summary, following.old_lines, version)
        current = await self.repo.get(partition_key)
        if version == current.version:
            return current
        raise ProfileRefused(
            f"{partition_key} 的画像历史里已没有 v{version}（只保留最近 "
            f"{self.settings.history_keep} 次修改）；用 history 查看可恢复的版本"
        )


def _busy() -> DatabaseRefused:
    return DatabaseRefused(
        f"the profile changed under {MAX_ATTEMPTS} attempts in a row; nothing was changed",
        reason="conflict",
    )
