"""Settings: defaults from ARCHITECTURE.md § Settings, and one clear line naming a bad variable."""

import pytest

from lumina_app.settings import SettingsError, load_settings

pytestmark = pytest.mark.unit


def test_defaults_match_the_design(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DATABASE_URL", "REDIS_URL", "CONTEXT_WINDOW", "LLM_PROVIDER", "API_KEYS"):
        monkeypatch.delenv(f"LUMINA_{name}", raising=False)
    settings = load_settings()
    assert settings.database_url == "sqlite:///data/lumina.db"
    assert settings.redis_url is None
    assert settings.context_window == 20
    assert settings.llm_provider == "demo"
    assert settings.api_key_map == {}


def test_environment_is_read_with_the_lumina_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LUMINA_CONTEXT_WINDOW", "7")
    monkeypatch.setenv("LUMINA_REDIS_URL", "redis://127.0.0.1:6379/3")
    monkeypatch.setenv("LUMINA_API_KEYS", "alice:k1, bob:k2")
    settings = load_settings()
    assert settings.context_window == 7
    assert settings.redis_url == "redis://127.0.0.1:6379/3"
    assert settings.api_key_map == {"k1": "alice", "k2": "bob"}


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("LUMINA_DATABASE_URL", "not a url"),
        ("LUMINA_DATABASE_URL", "oracle://scott@db/x"),
        ("LUMINA_CONTEXT_WINDOW", "0"),
        ("LUMINA_CONTEXT_WINDOW", "many"),
        ("LUMINA_REDIS_URL", "127.0.0.1:6379"),
        ("LUMINA_LLM_PROVIDER", "skynet"),
        ("LUMINA_API_KEYS", "no-colon-here"),
    ],
)
def test_bad_value_stops_with_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as info:
        load_settings()
    message = str(info.value)
    assert message.startswith(variable + ":")
    assert "\n" not in message


@pytest.mark.parametrize(
    ("sync_url", "async_prefix"),
    [
        ("sqlite:///data/x.db", "sqlite+aiosqlite:///data/x.db"),
        (
            "mysql+pymysql://root@127.0.0.1:3306/test",
            "mysql+aiomysql://root@127.0.0.1:3306/test?charset=utf8mb4",
        ),
        ("postgresql+psycopg://u:p@h/db", "postgresql+psycopg://u:p@h/db"),
    ],
)
def test_async_driver_is_derived_from_the_configured_url(sync_url: str, async_prefix: str) -> None:
    assert load_settings(database_url=sync_url).async_database_url == async_prefix
