"""Responses API benchmark (#28): one turn through ``POST /v1/responses`` beside the same
turn through ``POST /v1/chat/completions`` and ``POST /api/v1/agents/{id}/execute/sync``,
in one run against one real server.

    python bench/responses.py [--turns N] [--quick]

The real app (``reflex run --env prod --backend-only``) through the tests' AppServer: a
temp SQLite database, the in-process hot window, the demo model with no delay per word
(agent ``assistant``). One httpx client sends ``--turns`` turns per route, the routes
interleaved turn by turn so load drifts hit all three alike. Each turn is the second
message of a new conversation, named the way a client of that route names it:
``conversationId`` (execute/sync), ``X-Lumina-Conversation-Id`` (chat/completions),
``previous_response_id`` (responses). Timed: the request to the full JSON answer.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from _common import fmt_ms, header, note, parse_args, percentile, table
from _servers import app_server

AGENT = "assistant"
Turn = Callable[[httpx.Client, str], float]


def _timed(client: httpx.Client, path: str, **kwargs: object) -> float:
    t0 = time.perf_counter()
    resp = client.post(path, **kwargs)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - t0
    if resp.status_code != 200:
        raise RuntimeError(f"{path}: {resp.status_code} {resp.text[:200]}")
    return elapsed


def _execute(client: httpx.Client, text: str) -> float:
    path = f"/api/v1/agents/{AGENT}/execute/sync"
    first = client.post(path, json={"task": text}).json()
    return _timed(
        client, path, json={"task": text + " again", "conversationId": first["conversationId"]}
    )


def _chat(client: httpx.Client, text: str) -> float:
    name = "X-Lumina-Conversation-Id"
    first = client.post(
        "/v1/chat/completions",
        json={"model": AGENT, "messages": [{"role": "user", "content": text}]},
    )
    again = {"model": AGENT, "messages": [{"role": "user", "content": text + " again"}]}
    return _timed(client, "/v1/chat/completions", json=again, headers={name: first.headers[name]})


def _responses(client: httpx.Client, text: str) -> float:
    first = client.post("/v1/responses", json={"model": AGENT, "input": text}).json()
    again = {"model": AGENT, "input": text + " again", "previous_response_id": first["id"]}
    return _timed(client, "/v1/responses", json=again)


ROUTES: dict[str, Turn] = {
    "POST /api/v1/agents/{id}/execute/sync": _execute,
    "POST /v1/chat/completions": _chat,
    "POST /v1/responses": _responses,
}


def measure(url: str, turns: int) -> dict[str, list[float]]:
    """Per route, the seconds of each timed (second) turn."""
    times: dict[str, list[float]] = {name: [] for name in ROUTES}
    with httpx.Client(base_url=url, timeout=30) as client:
        for turn in ROUTES.values():  # warm-up
            turn(client, "warm up")
        for i in range(turns):
            for name, turn in ROUTES.items():
                times[name].append(turn(client, f"bench turn {i}"))
    return times


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--turns", type=int, default=200, help="timed turns per route")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, options, {"turns": 20}, argv)
    started = time.perf_counter()
    env = {"LUMINA_REDIS_URL": "", "LUMINA_DEMO_DELAY_MS": "0"}
    with (
        tempfile.TemporaryDirectory(prefix="lumina-responses-") as tmp,
        app_server(Path(tmp), env=env) as server,
    ):
        header("responses.py", args, f"httpx {httpx.__version__}")
        note(f"{args.turns} turns per route")
        times = measure(server.url, args.turns)
    rows = []
    base = percentile(times["POST /api/v1/agents/{id}/execute/sync"], 50)
    for name, values in times.items():
        ms = [v * 1000 for v in values]
        p50 = percentile(ms, 50)
        rows.append(
            [name, len(ms), fmt_ms(p50), fmt_ms(percentile(ms, 95)), f"{p50 / (base * 1000):.2f}"]
        )
    print("\nA second turn of a conversation, request to full answer (demo model):\n")
    print(table(["route", "turns", "p50", "p95", "p50 / execute/sync"], rows))
    print(f"\n(total {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
