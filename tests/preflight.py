"""Before a run that needs them: are Redis, MariaDB and PostgreSQL answering? If not, one
line naming what is missing and how to start it, instead of a traceback per test."""

from __future__ import annotations

import redis
import sqlalchemy as sa

# What to type when a service is down (the commands .ci/run uses on this machine's kind).
HOW_TO_START = {
    "Redis": "redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save ''",
    "MariaDB": "start-stop-daemon --start --background --exec /usr/sbin/mariadbd",
    "PostgreSQL": "pg_ctlcluster $(ls /etc/postgresql) main start",
}


def _redis_answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping())
    except redis.RedisError:
        return False


def _sql_answers(url: str) -> bool:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool, connect_args={"connect_timeout": 2})
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        return True
    except sa.exc.DBAPIError:
        return False
    finally:
        engine.dispose()


def missing_services(*, redis_url: str, mariadb_url: str, postgres_url: str) -> str | None:
    """One line naming every service that does not answer, or None when all do."""
    probes = {
        "Redis": (redis_url, _redis_answers),
        "MariaDB": (mariadb_url, _sql_answers),
        "PostgreSQL": (postgres_url, _sql_answers),
    }
    down = [name for name, (url, answers) in probes.items() if not answers(url)]
    if not down:
        return None
    where = ", ".join(f"{name} on {_address(probes[name][0])}" for name in down)
    starts = "; ".join(HOW_TO_START[name] for name in down)
    return (
        f"make test needs real servers, and these do not answer: {where}. "
        f"Start them ({starts}), or run `bash .ci/run`, which starts all three; "
        "`make test-unit` needs none."
    )


def _address(url: str) -> str:
    parsed = sa.engine.make_url(url)
    return f"{parsed.host}:{parsed.port}"
