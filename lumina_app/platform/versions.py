"""The version guards: an untested release series fails start-up (the platform patches), or
sends a fast lane down its plain path (the private names the write path and the embedder
reach: ``sqlalchemy_private``, ``aiosqlite_private``, ``tokenizers_private``)."""

from __future__ import annotations

import importlib.metadata
import logging
import re

logger = logging.getLogger(__name__)


class UntestedPlatform(RuntimeError):
    """An installed framework is of a release series a patch was not tested on."""


def series(version: str) -> tuple[int, ...]:
    """A version's release series: its major, or for a 0.x version its 0.y (where a 0.x
    package puts its breaking changes). ``2.8.9`` → (2,); ``0.10.1`` → (0, 10)."""
    numbers = release(version, 2)
    if not numbers:
        raise ValueError(f"not a version: {version!r}")
    return numbers if numbers[0] == 0 and len(numbers) > 1 else numbers[:1]


def require(distribution: str, tested: str, patch: str) -> str:
    """The installed version of ``distribution``, which must be of the series ``tested``
    (``"2"``, ``"0.10"``); otherwise UntestedPlatform, naming the patch to re-check."""
    installed = importlib.metadata.version(distribution)
    if series(installed) != series(tested):
        raise UntestedPlatform(
            f"{patch} was tested on {distribution} {tested}.x, but {installed} is installed: "
            f"run tests/unit/test_platform_canaries.py, check {patch} still holds, then "
            "update its TESTED"
        )
    return installed


def release(version: str, depth: int) -> tuple[int, ...]:
    """A version's first ``depth`` numbers: ``release("2.1.9", 2)`` → (2, 1)."""
    numbers = [int(m.group()) for m in (re.match(r"\d+", p) for p in version.split(".")) if m]
    return tuple(numbers[:depth])


_told: set[str] = set()


def tested(distribution: str, release_tested: str, lane: str) -> bool:
    """Whether the installed ``distribution`` is the release a fast lane was tested on
    (``"2.1"``: 2.1.x; private names change in minor releases). If not, the lane falls
    back to its plain path: logged once, never an error (unlike :func:`require`)."""
    installed = importlib.metadata.version(distribution)
    wanted = release(release_tested, release_tested.count(".") + 1)
    if release(installed, len(wanted)) == wanted:
        return True
    if lane not in _told:
        _told.add(lane)
        logger.warning(
            "%s was tested on %s %s.x, but %s is installed: it takes its plain path. Run "
            "tests/unit/test_fast_lane_canaries.py, then update its TESTED",
            lane,
            distribution,
            release_tested,
            installed,
        )
    return False
