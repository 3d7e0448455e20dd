"""Account rules that need no server: usernames, the password policy, key shapes, the
login body, the small caches the auth service keeps."""

from __future__ import annotations

import time

import pytest
from pydantic import TypeAdapter, ValidationError

from lumina_app.api.schemas_accounts import Login
from lumina_app.domain import InvalidInput
from lumina_app.domain.accounts import is_username, normalize_username
from lumina_app.services.api_keys import key_digest, new_api_key
from lumina_app.services.passwords import Passwords
from lumina_app.services.short_cache import ShortCache, Throttle

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", ["alice", "a", "bob.smith", "x_y-z@corp", "0day", "a" * 64])
def test_good_usernames(name: str) -> None:
    assert is_username(name)


@pytest.mark.parametrize(
    "name", ["", "Alice", "al ice", ".alice", "-a", "a" * 65, "alice\n", "ålice", "a/b", "a:b"]
)
def test_bad_usernames(name: str) -> None:
    assert not is_username(name)


def test_usernames_are_compared_lower_case_and_trimmed() -> None:
    assert normalize_username("  Alice ") == "alice"


@pytest.mark.parametrize(
    ("password", "said"),
    [
        ("short", "at least 12"),
        ("x" * 1025, "at most 1024"),
        ("twelve chars\x00", "NUL"),
        ("Administrator", "username"),
    ],
)
def test_the_password_policy(password: str, said: str) -> None:
    with pytest.raises(InvalidInput, match=said):
        Passwords(min_length=12).check_new(password, username="administrator")


def test_temporary_passwords_meet_the_policy() -> None:
    passwords = Passwords(min_length=20)
    made = {passwords.temporary() for _ in range(20)}
    assert len(made) == 20
    for password in made:
        passwords.check_new(password, username="someone")


def test_api_keys_are_random_and_only_their_hash_and_prefix_are_kept() -> None:
    first, second = new_api_key(), new_api_key()
    assert first.key != second.key and first.key.startswith("lum_") and len(first.key) == 47
    assert first.prefix == first.key[:12]
    assert first.digest == key_digest(first.key) and len(first.digest) == 64
    assert first.key not in first.digest


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"username": "alice"},
        {"password": "x"},
        {"username": "alice", "password": ""},
        {"username": "alice", "password": "x", "apiKey": "k"},
        {"apiKey": ""},
        {"username": "a\x00", "password": "x"},
        {"username": "alice", "password": "x", "remember": True},
    ],
)
def test_a_login_is_a_password_or_a_key(body: dict) -> None:
    """Either shape, never both or a mix (the schema says so too: ``anyOf``)."""
    with pytest.raises(ValidationError):
        TypeAdapter(Login).validate_python(body)


def test_short_cache_and_throttle() -> None:
    cache: ShortCache[int] = ShortCache(0.05, max_items=3)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.drop_if(lambda value: value == 2)
    assert cache.get("b") is None
    time.sleep(0.06)  # the point: past the cache's 0.05 s
    assert cache.get("a") is None
    throttle = Throttle(60)
    assert throttle.due("k") and not throttle.due("k") and throttle.due("other")
