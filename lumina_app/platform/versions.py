"""The version guard of the platform patches: an untested release series fails start-up."""

from __future__ import annotations

import importlib.metadata
import re


class UntestedPlatform(RuntimeError):
    """An installed framework is of a release series a patch was not tested on."""


def series(version: str) -> tuple[int, ...]:
    """A version's release series: its major, or for a 0.x version its 0.y (where a 0.x
    package puts its breaking changes). ``2.8.9`` → (2,); ``0.10.1`` → (0, 10)."""
    numbers = [int(m.group()) for m in (re.match(r"\d+", p) for p in version.split(".")) if m]
    if not numbers:
        raise ValueError(f"not a version: {version!r}")
    return tuple(numbers[:2]) if numbers[0] == 0 and len(numbers) > 1 else (numbers[0],)


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
