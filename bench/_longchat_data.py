"""A development corpus of long technical conversations (#42), generated, deterministic.

Each conversation is a person and an assistant working on one software project over weeks:
the person's messages are questions and requests that state facts about their work in
passing ("our first sprint ends March 29"), later update or contradict some of them ("the
dashboard API now averages 250 ms after the caching change") and, much later, ask about
them in other words ("When does my first sprint end?"). The assistant's answers run
1,000-4,000 characters (explanations, code, lists) and often echo the person's words, as
assistants do, so they compete with the evidence on vocabulary. Questions carry the ids of
the messages that answer them (the person's, one to five, often far apart); a question
about a value that changed names its newest statement as ``updated``.

``conversations(seed, count, turns)`` gives the same text for the same arguments: the
development set is seeds 1-6, the held-out set seeds 101-106 (see bench/recall.py). Nothing
in the app knows this corpus.
"""

# ruff: noqa: E501  (the corpus's sentences and code samples are kept whole, one a line)
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

# -- projects: the vocabulary a conversation is about --------------------------------------

PROJECTS = [
    {
        "name": "a budgeting dashboard for small businesses",
        "framework": "Flask",
        "lang": "Python",
        "tables": ["transactions", "accounts", "budgets", "merchants", "invoices"],
        "services": ["dashboard API", "reports endpoint", "sync worker", "export job"],
        "components": ["authentication", "charts", "CSV import", "notifications", "billing"],
        "tools": ["Redis", "Celery", "Sentry", "Docker", "GitHub Actions", "Grafana"],
        "dbs": ["PostgreSQL", "MySQL", "SQLite", "MongoDB"],
        "purposes": ["caching", "the job queue", "analytics", "session storage"],
        "platforms": ["AWS ECS", "Heroku", "Fly.io", "a DigitalOcean droplet", "Render"],
    },
    {
        "name": "an inventory service for a chain of bike shops",
        "framework": "FastAPI",
        "lang": "Python",
        "tables": ["products", "stock_levels", "suppliers", "orders", "stores"],
        "services": ["stock API", "reorder service", "search endpoint", "nightly import"],
        "components": ["barcode scanning", "supplier sync", "pricing", "audit log", "search"],
        "tools": ["RabbitMQ", "Elasticsearch", "Prometheus", "Kubernetes", "Terraform", "Redis"],
        "dbs": ["PostgreSQL", "MariaDB", "DynamoDB", "CockroachDB"],
        "purposes": ["full-text search", "the event bus", "reporting", "caching"],
        "platforms": ["Google Cloud Run", "AWS EKS", "a Hetzner server", "Azure App Service"],
    },
    {
        "name": "a mobile app backend for booking climbing gym sessions",
        "framework": "Express",
        "lang": "TypeScript",
        "tables": ["bookings", "members", "sessions", "gyms", "payments"],
        "services": ["booking API", "availability endpoint", "payment webhook", "push sender"],
        "components": ["check-in", "waitlist", "payments", "push notifications", "admin panel"],
        "tools": ["Stripe", "Firebase", "Datadog", "Docker", "CircleCI", "Redis"],
        "dbs": ["PostgreSQL", "MongoDB", "Firestore", "MySQL"],
        "purposes": ["rate limiting", "the job queue", "analytics", "caching"],
        "platforms": ["AWS Lambda", "Vercel", "Railway", "Google Kubernetes Engine"],
    },
    {
        "name": "a machine-learning pipeline that classifies support tickets",
        "framework": "Django",
        "lang": "Python",
        "tables": ["tickets", "labels", "predictions", "training_runs", "customers"],
        "services": ["prediction API", "labelling tool", "training job", "feedback endpoint"],
        "components": ["feature extraction", "model training", "labelling UI", "monitoring"],
        "tools": ["MLflow", "Airflow", "Weights & Biases", "Docker", "Jenkins", "Redis"],
        "dbs": ["PostgreSQL", "BigQuery", "ClickHouse", "SQLite"],
        "purposes": ["feature storage", "experiment tracking", "caching", "reporting"],
        "platforms": ["AWS SageMaker", "a GPU box in the office", "Azure ML", "Lambda Labs"],
    },
]
PEOPLE = ["Priya", "Marcus", "Lena", "Tomás", "Aiko", "Jonah", "Fatima", "Oskar", "Chen", "Nadia"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
COLUMNS = [
    "merchant_category",
    "settled_at",
    "currency_code",
    "external_ref",
    "notes",
    "tax_amount",
    "is_recurring",
    "created_by",
    "approved_at",
    "source_channel",
]


# -- what is generated ----------------------------------------------------------------------


@dataclass
class Message:
    id: str
    user: bool
    text: str
    when: datetime


@dataclass
class Question:
    text: str
    evidence: set[str]
    kind: str
    updated: str = ""  # a knowledge update: the id of the newest statement


@dataclass
class Conversation:
    name: str
    messages: list[Message] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


# -- facts: what the person states, changes and later asks ---------------------------------


@dataclass
class Fact:
    """Statements (each a user message, in order) and the question about them."""

    kind: str
    statements: list[str]
    question: str
    update: bool = False  # the last statement replaces the earlier ones
    all_needed: bool = True  # every statement is evidence (else the last one)


def _date(rng: random.Random) -> str:
    return f"{rng.choice(MONTHS)} {rng.randint(2, 28)}"


def _facts(rng: random.Random, p: dict) -> list[Fact]:
    """The planted facts of one conversation: a mix of kinds, each worded one of several ways."""
    svc = rng.sample(p["services"], 2)
    tables = rng.sample(p["tables"], 3)
    comps = rng.sample(p["components"], 3)
    people = rng.sample(PEOPLE, 3)
    tools = rng.sample(p["tools"], 4)
    dbs = rng.sample(p["dbs"], 2)
    purpose = rng.choice(p["purposes"])
    plats = rng.sample(p["platforms"], 2)
    ms_old, ms_new = rng.choice([(400, 250), (620, 180), (900, 340), (1200, 450)])
    cols = rng.sample(COLUMNS, rng.randint(2, 4))
    budget_old, budget_new = rng.choice([(300, 450), (800, 650), (1500, 1200), (200, 350)])
    rows = rng.choice([3, 12, 40, 85])
    sprint = _date(rng)
    sprint_moved = _date(rng)
    fw = p["framework"]
    facts = [
        Fact(
            "deadline",
            [
                rng.choice(
                    [
                        f"Our first sprint ends {sprint}, so the {tables[0]} migration has to land before then.",
                        f"Heads up: sprint one wraps up on {sprint}. Can we plan the {comps[0]} work around that?",
                        f"The first sprint finishes {sprint} and I'd like {comps[0]} demoable by then.",
                    ]
                )
            ],
            rng.choice(
                [
                    "When does my first sprint end?",
                    "What date does sprint one finish?",
                    "By when is the first sprint over?",
                ]
            ),
        ),
        Fact(
            "update",
            [
                rng.choice(
                    [
                        f"Right now the {svc[0]} averages about {ms_old} ms per request, which feels slow.",
                        f"I measured the {svc[0]}: average response time is {ms_old} ms at the moment.",
                    ]
                ),
                rng.choice(
                    [
                        f"Good news, after the caching change the {svc[0]} now averages {ms_new} ms.",
                        f"Update on performance: the {svc[0]} is down to {ms_new} ms on average since we added caching.",
                    ]
                ),
            ],
            rng.choice(
                [
                    f"What is the average response time of the {svc[0]}?",
                    f"How fast is the {svc[0]} on average these days?",
                    f"What's the {svc[0]}'s average latency now?",
                ]
            ),
            update=True,
            all_needed=False,
        ),
        Fact(
            "aggregate",
            [
                rng.choice(
                    [
                        f"Can you add a `{c}` column to the {tables[1]} table? I need it for {comps[1]}.",
                        f"I also want a `{c}` column on {tables[1]}.",
                        f"One more for the {tables[1]} table: a `{c}` column, nullable for now.",
                    ]
                )
                for c in cols
            ],
            rng.choice(
                [
                    f"How many columns did I want to add to the {tables[1]} table across my requests?",
                    f"Which new columns have I asked for on the {tables[1]} table?",
                ]
            ),
        ),
        Fact(
            "experience",
            [
                rng.choice(
                    [
                        f"I've never written a {fw} route in this project, the routes were all done by {people[0]}.",
                        f"Full disclosure: I haven't touched {fw} routing here before, {people[0]} built all of it.",
                    ]
                )
            ],
            rng.choice(
                [
                    f"Have I written any {fw} routes in this project myself?",
                    f"Who wrote the {fw} routes in my project?",
                ]
            ),
        ),
        Fact(
            "owner",
            [
                rng.choice(
                    [
                        f"{people[1]} is handling the {comps[2]} work this month.",
                        f"FYI {people[1]} owns {comps[2]} for now.",
                    ]
                ),
                rng.choice(
                    [
                        f"Change of plan: {people[2]} takes over {comps[2]} from {people[1]}, who moved teams.",
                        f"{people[1]} switched teams, so {comps[2]} is now {people[2]}'s responsibility.",
                    ]
                ),
            ],
            rng.choice(
                [
                    f"Who is working on {comps[2]}?",
                    f"Who's responsible for {comps[2]} at the moment?",
                ]
            ),
            update=True,
            all_needed=False,
        ),
        Fact(
            "choice",
            [
                f"We use {dbs[0]} for {purpose} at the moment.",
                rng.choice(
                    [
                        f"We migrated {purpose} off {dbs[0]}, it runs on {dbs[1]} now.",
                        f"Decision made: {purpose} moves from {dbs[0]} to {dbs[1]} starting this week.",
                    ]
                ),
            ],
            rng.choice(
                [f"Which database do we use for {purpose}?", f"Where does {purpose} live now?"]
            ),
            update=True,
            all_needed=False,
        ),
        Fact(
            "order",
            [
                f"I set up {tools[0]} this morning, finally.",
                f"Today I got {tools[1]} running in staging.",
            ],
            rng.choice(
                [
                    f"Which did I set up first, {tools[1]} or {tools[0]}?",
                    f"Did {tools[0]} or {tools[1]} come first in my setup?",
                ]
            ),
        ),
        Fact(
            "size",
            [
                rng.choice(
                    [
                        f"For context, the {tables[2]} table holds roughly {rows} million rows.",
                        f"{tables[2]} is about {rows} million rows, so full scans hurt.",
                    ]
                )
            ],
            rng.choice(
                [
                    f"How big is my {tables[2]} table?",
                    f"About how many rows are in the {tables[2]} table?",
                ]
            ),
        ),
        Fact(
            "budget",
            [
                f"Our monthly cloud budget is ${budget_old}, hard limit.",
                rng.choice(
                    [
                        f"Finance changed our cloud budget to ${budget_new} a month.",
                        f"New number from finance: ${budget_new} per month for cloud spend.",
                    ]
                ),
            ],
            rng.choice(
                ["What's my cloud budget per month?", "How much can we spend on cloud each month?"]
            ),
            update=True,
            all_needed=False,
        ),
        Fact(
            "deploy",
            [
                f"We deploy on {plats[0]} for now.",
                rng.choice(
                    [
                        f"We moved production to {plats[1]} last week, {plats[0]} is retired.",
                        f"Deployment target changed: everything runs on {plats[1]} now.",
                    ]
                ),
            ],
            rng.choice(["Where do we deploy the app?", "What platform does production run on?"]),
            update=True,
            all_needed=False,
        ),
        Fact(
            "team",
            [
                rng.choice(
                    [
                        "I'm the only backend developer on the team, everyone else does frontend.",
                        "It's just me on the backend; the other three are frontend folks.",
                    ]
                )
            ],
            rng.choice(
                [
                    "How many backend developers are on my team?",
                    "Am I the only one doing backend work?",
                ]
            ),
        ),
        Fact(
            "moved",
            [
                f"Sprint two is planned to end {_date(rng)}.",
                f"Sprint two got pushed, it now ends {sprint_moved}.",
            ],
            rng.choice(["When does the second sprint end?", "What's the end date of sprint two?"]),
            update=True,
            all_needed=False,
        ),
    ]
    return facts


# -- filler: the person's ordinary requests and the assistant's long answers ---------------

_ASKS = [
    "How should I structure the {table} table so queries on {component} stay fast?",
    "Can you explain how to add pagination to the {service} in {framework}?",
    "What's the cleanest way to test the {component} code with {tool} in the loop?",
    "I'm getting a timeout from the {service} when the {table} table is large. Ideas?",
    "Could you write a migration that adds an index on {table} for the {component} screens?",
    "How do I wire {tool} into our {framework} app without slowing down startup?",
    "Review this plan for {component}: split it into a service and keep {table} as the source of truth.",
    "What are the trade-offs between {db} and {db2} for our {table} data?",
    "Show me how to log slow requests in the {service} with {tool}.",
    "Can you help me write a background job that cleans up old rows in {table}?",
    "How would you cache the {service} responses, and what would you invalidate on writes to {table}?",
    "Draft a README section that explains how {component} works for new developers.",
    "What should our error handling look like in the {service}?",
    "Can you sketch a {lang} function that validates incoming {table} payloads?",
    "Explain how connection pooling works with {db} in {framework}.",
]
_OPENERS = [
    "Good question. There are a few moving parts here, so let's take them one at a time.",
    "Here's how I would approach it, keeping your current setup in mind.",
    "Sure. The short answer is that it depends on your access patterns, but there is a sensible default.",
    "Let's break this down: what you want, what can go wrong, and a concrete implementation.",
    "This comes up a lot in {framework} projects, and there is a well-trodden path.",
]
_PARAGRAPHS = [
    "First, think about how the {table} table is read. If most queries filter by a tenant "
    "and a date range, a composite index on those two columns covers the common case, and "
    "the planner will use it for both the {component} screens and the {service}. Avoid "
    "indexing every column: each index slows down writes and the nightly jobs that touch {table}.",
    "Second, keep the request path thin. The {service} should validate input, call one "
    "function in the service layer and serialize the result. Anything slow — talking to "
    "{tool}, recomputing aggregates, sending notifications — belongs in a background worker "
    "so that a spike in traffic does not turn into a spike in latency.",
    "For testing, I'd use fixtures that create a small, realistic dataset: a handful of rows "
    "in {table}, one or two edge cases (empty strings, very large amounts, unicode names) "
    "and a fake for {tool} that records calls. Run the same tests against {db} in CI so "
    "that you catch dialect differences before they reach production.",
    "On the {framework} side, register the blueprint or router once, and keep configuration "
    "in environment variables read at startup. That way the {component} module stays easy "
    "to import in tests and you do not accidentally open connections at import time.",
    "Caching is worth it only when reads dominate. Cache the serialized response of the "
    "{service} keyed by the query parameters, give it a short TTL, and delete the affected "
    "keys whenever a write to {table} commits. Measure the hit rate; below 60 percent the "
    "complexity rarely pays for itself.",
    "Pagination should be keyset-based rather than offset-based once {table} grows: pass the "
    "last seen id and timestamp, order by both, and fetch one more row than you return to "
    "know whether there is a next page. Offsets get slower the deeper a user scrolls.",
    "Error handling: map domain errors to clear HTTP statuses in one place, log unexpected "
    "exceptions with a request id, and never leak stack traces to clients. For the "
    "{component} flows, return a message the frontend can show as it is.",
    "With {db}, connection pooling matters more than people expect. Size the pool to the "
    "number of worker processes times a small constant, set a statement timeout, and make "
    "sure long transactions in the {component} code do not hold connections across network calls.",
    "Migrations should be backwards compatible: add the new column or index first, deploy "
    "code that writes both shapes, backfill in batches, and only then drop the old column. "
    "On a large {table} table, build indexes concurrently so writes are not blocked.",
    "Observability: emit a histogram of request durations per route, count errors by type "
    "and add a trace span around every call to {tool}. When the {service} slows down you "
    "want to see immediately whether it is the database, the cache or an upstream.",
]
_CODE = [
    "```sql\nCREATE INDEX CONCURRENTLY idx_{table}_tenant_created\n    ON {table} (tenant_id, created_at DESC);\n\nSELECT id, amount, created_at\n  FROM {table}\n WHERE tenant_id = $1 AND created_at < $2\n ORDER BY created_at DESC\n LIMIT 51;\n```",
    "```python\ndef list_{table}(session, tenant_id, before=None, limit=50):\n    query = session.query({model}).filter_by(tenant_id=tenant_id)\n    if before is not None:\n        query = query.filter({model}.created_at < before)\n    rows = query.order_by({model}.created_at.desc()).limit(limit + 1).all()\n    return rows[:limit], len(rows) > limit\n```",
    '```python\n@app.get("/{table}")\ndef get_{table}(cursor: str | None = None):\n    items, more = service.page(cursor=cursor)\n    return {{"items": [i.to_dict() for i in items], "next": items[-1].id if more else None}}\n```',
    "```yaml\nservices:\n  worker:\n    image: app:latest\n    command: worker --queue {component_slug}\n    environment:\n      - DATABASE_URL=${{DATABASE_URL}}\n      - CACHE_TTL=30\n```",
]
_LISTS = [
    "A checklist before you ship it:\n- add the index in its own migration\n- run the slow "
    "query log for a day\n- alert on p99 of the {service}\n- document the {component} flow\n"
    "- load-test with a copy of {table}",
    "What I would avoid:\n1. computing aggregates on every request\n2. long transactions "
    "around calls to {tool}\n3. offset pagination on {table}\n4. catching every exception silently",
]
_CLOSERS = [
    "If you share the current query plan I can be more specific.",
    "Let me know how it behaves under load and we can tune it from there.",
    "Happy to write the tests for this too if that helps.",
    "Does that match what you had in mind for {component}?",
]


def _fill(template: str, rng: random.Random, p: dict) -> str:
    table = rng.choice(p["tables"])
    component = rng.choice(p["components"])
    db, db2 = rng.sample(p["dbs"], 2)
    return template.format(
        table=table,
        model=table.title().replace("_", "").rstrip("s"),
        component=component,
        component_slug=component.replace(" ", "_"),
        service=rng.choice(p["services"]),
        framework=p["framework"],
        tool=rng.choice(p["tools"]),
        db=db,
        db2=db2,
        lang=p["lang"],
    )


def _answer(rng: random.Random, p: dict, asked: str) -> str:
    """A 1,000-4,000 character answer; half of them echo a sentence of what was asked."""
    parts = [_fill(rng.choice(_OPENERS), rng, p)]
    if rng.random() < 0.5:
        parts.append(f'You mentioned: "{asked.split("?")[0].strip()}". That shapes the plan.')
    parts += [_fill(paragraph, rng, p) for paragraph in rng.sample(_PARAGRAPHS, rng.randint(3, 9))]
    if rng.random() < 0.7:
        parts.append(_fill(rng.choice(_CODE), rng, p))
    if rng.random() < 0.5:
        parts.append(_fill(rng.choice(_LISTS), rng, p))
    parts.append(_fill(rng.choice(_CLOSERS), rng, p))
    return "\n\n".join(parts)


def _ask(rng: random.Random, p: dict) -> str:
    return _fill(rng.choice(_ASKS), rng, p)


# -- a conversation ---------------------------------------------------------------------------


def conversation(seed: int, turns: int) -> Conversation:
    """One project's chat of ``turns`` exchanges with its planted facts and questions."""
    rng = random.Random(seed)
    p = PROJECTS[seed % len(PROJECTS)]
    facts = _facts(rng, p)
    # each statement is one user message at a turn; a fact's statements keep their order
    # and are spread over the conversation (an update comes well after what it replaces)
    slots: dict[int, tuple[int, int]] = {}
    for f, fact in enumerate(facts):
        n = len(fact.statements)
        span = turns - 10
        while True:
            picks = sorted(rng.sample(range(2, span), n))
            if all(t not in slots for t in picks) and (
                n == 1 or min(b - a for a, b in itertools.pairwise(picks)) >= turns // 8
            ):
                break
        for s, t in enumerate(picks):
            slots[t] = (f, s)
    start = datetime(2026, 2, 2, 9, 0, tzinfo=UTC) + timedelta(days=seed % 50)
    when = start
    conv = Conversation(name=f"longchat-{seed}")
    ids: dict[tuple[int, int], str] = {}
    for t in range(turns):
        when += timedelta(days=1) if t % 6 == 0 else timedelta(minutes=rng.randint(3, 40))
        if t in slots:
            f, s = slots[t]
            said = facts[f].statements[s]
            if rng.random() < 0.5:  # a fact said in passing, with a request after it
                said = f"{said} {_ask(rng, p)}"
        else:
            said = _ask(rng, p)
        uid = f"{conv.name}:u{t}"
        conv.messages.append(Message(uid, True, said, when))
        if t in slots:
            ids[slots[t]] = uid
        when += timedelta(minutes=1)
        conv.messages.append(Message(f"{conv.name}:a{t}", False, _answer(rng, p, said), when))
    for f, fact in enumerate(facts):
        said = [ids[(f, s)] for s in range(len(fact.statements))]
        evidence = set(said) if fact.all_needed else {said[-1]}
        conv.questions.append(
            Question(fact.question, evidence, fact.kind, said[-1] if fact.update else "")
        )
    return conv


def conversations(seeds: list[int], turns: list[int]) -> list[Conversation]:
    """One conversation per seed, their lengths cycling through ``turns``."""
    return [conversation(s, turns[i % len(turns)]) for i, s in enumerate(seeds)]
