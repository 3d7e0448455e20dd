"""Plain dicts the account pages render (sessions, keys, accounts)."""

from __future__ import annotations

import re
from typing import TypedDict

from lumina_app.domain import ApiKeyInfo, User
from lumina_app.domain.views import iso_ms
from lumina_app.services.accounts import SessionView


class SessionRow(TypedDict):
    id: int
    browser: str
    agent: str
    address: str
    created: str
    seen: str
    current: bool


class KeyRow(TypedDict):
    id: int
    name: str
    prefix: str
    created: str
    used: str  # "" never


class UserRow(TypedDict):
    username: str
    role: str
    created: str
    disabled: bool
    must_change: bool


_BROWSERS = [("Edg/", "Edge"), ("OPR/", "Opera"), ("Firefox/", "Firefox"), ("Chrome/", "Chrome")]
_SYSTEMS = [
    ("Android", "Android"),
    ("iPhone", "iOS"),
    ("iPad", "iPadOS"),
    ("Windows", "Windows"),
    ("Mac OS X", "macOS"),
    ("CrOS", "ChromeOS"),
    ("Linux", "Linux"),
]


def describe_agent(user_agent: str) -> str:
    """``Chrome on Linux``: enough to tell one's browsers apart (the full string is a tip)."""
    browser = next((name for mark, name in _BROWSERS if mark in user_agent), "")
    if not browser and "Safari/" in user_agent:
        browser = "Safari"
    if not browser:
        tool = re.match(r"[A-Za-z][\w.-]*", user_agent)
        return tool.group(0) if tool else "Unknown browser"
    system = next((name for mark, name in _SYSTEMS if mark in user_agent), "")
    return f"{browser} on {system}" if system else browser


def session_row(view: SessionView) -> SessionRow:
    s = view.session
    return SessionRow(
        id=s.id,
        browser=describe_agent(s.user_agent),
        agent=s.user_agent,
        address=s.client_ip,
        created=iso_ms(s.created_at),
        seen=iso_ms(s.last_seen_at),
        current=view.current,
    )


def key_row(key: ApiKeyInfo) -> KeyRow:
    return KeyRow(
        id=key.id,
        name=key.name,
        prefix=key.prefix,
        created=iso_ms(key.created_at),
        used=iso_ms(key.last_used_at) if key.last_used_at else "",
    )


def user_row(user: User) -> UserRow:
    return UserRow(
        username=user.username,
        role=user.role.value,
        created=iso_ms(user.created_at),
        disabled=user.disabled,
        must_change=user.must_change_password,
    )
