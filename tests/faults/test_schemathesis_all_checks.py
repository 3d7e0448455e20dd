"""schemathesis with every built-in check (``schemathesis.checks.CHECKS``: the 14 of 4.32,
``ignored_auth`` and ``use_after_free`` included), against the in-process API with
LUMINA_API_KEYS set, so the schema's bearer scheme is enforced and ``ignored_auth`` probes
each operation without the key and with a wrong one. Zero failures allowed.

Per operation: 15 generated requests (positive and negative) sent with the key, then again
with the path ids replaced by ones that exist. Stateful: 40 short sequences along the links
schemathesis infers (POST /conversations → GET/PATCH/DELETE → GET …, execute → runs), where
``use_after_free`` and ``ensure_resource_availability`` apply.

Six rules the OpenAPI schema cannot state are kept out of "positive" data, each tested
elsewhere: a task over LUMINA_MAX_TASK_CHARS (a deployment setting) is a documented 413;
``after`` cursors are opaque (only an issued one is valid); an Idempotency-Key reused with
another request is a 422; execute* needs the task in the query or the body; a fork point
must be a seq the conversation has; a chat completion's last message must be a user
message with text.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config._checks import (
    NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES,
    POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES,
    NegativeDataRejectionConfig,
    PositiveDataAcceptanceConfig,
)
from schemathesis.python import asgi
from schemathesis.specs.openapi.formats import unregister_string_format

from tests.api.test_schemathesis import (  # noqa: F401 - the autouse fixture applies here too
    Existing,
    WithServices,
    _nodeid_for_schemathesis,
)

KEY = "st-key-0123456789"
load_all_checks()
ALL_CHECKS = list(CHECKS.get_all())


@pytest.fixture
def app(settings_factory) -> Iterator[WithServices]:
    # The per-owner run cap (#24) has its own tests; its 429 is no schema question here.
    settings = settings_factory(
        api_keys=f"fuzzer:{KEY}",
        max_body_bytes=4096,
        max_task_chars=200,
        max_active_runs_per_owner=10_000,
    )
    yield WithServices(settings)
    asgi.shutdown_lifespans()


class Bearer:
    """The key on every generated request (schemathesis's ``ignored_auth`` then probes the
    same request without it and with a wrong one)."""

    def get(self, case, context):
        return KEY

    def set(self, case, data, context) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


def cursor(when: datetime, row_id: int) -> str:
    """A page cursor as the API issues them (``nextCursor``)."""
    raw = f"{when.isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


CURSORS = st.builds(
    cursor,
    st.datetimes(timezones=st.just(UTC), min_value=datetime(2000, 1, 1)),
    st.integers(1, 2**31 - 1),
)


def is_cursor(value: object) -> bool:
    try:
        raw = base64.urlsafe_b64decode(str(value) + "=" * (-len(str(value)) % 4)).decode()
        stamp, row_id = raw.split("|")
        return datetime.fromisoformat(stamp).tzinfo is not None and 0 < int(row_id) < 2**31
    except ValueError:
        return False


def map_query(_context, query):
    """A cursor is opaque: only one the API issued is valid (422 otherwise, by design), and
    schemathesis also draws words from its dictionary for ``format: cursor``. A short
    string that is not a cursor becomes one; other values stay (they are the negatives)."""
    after = (query or {}).get("after")
    if isinstance(after, str) and len(after) <= 200 and not is_cursor(after):
        query["after"] = cursor(datetime.now(UTC), 1)
    return query


def existing_fork_point(case: schemathesis.Case) -> None:
    """A fork point must be a seq the conversation has (1..lastSeq, 422 otherwise: state
    the schema cannot state; tested in tests/api/test_fork.py): a valid one is left out
    (fork everything, which any conversation has); other values stay (negatives)."""
    at_seq = case.body.get("atSeq") if isinstance(case.body, dict) else None
    whole = type(at_seq) is int or (type(at_seq) is float and at_seq.is_integer())
    if case.path.endswith("/fork") and whole and 1 <= at_seq < 2**31:  # 204.0 is 204 too
        del case.body["atSeq"]


def asks_a_question(body: object) -> bool:
    """A chat completion's new input is its last message, which must be a user message
    with text (a 400 otherwise, a rule about the list's last item that OpenAPI cannot
    state; tested in tests/api/test_openai_gateway.py)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return True  # schema-invalid anyway: a negative case
    last = messages[-1]
    content = last.get("content")
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "".join(t for t in texts if isinstance(t, str))
    return last.get("role") == "user" and isinstance(content, str) and bool(content.strip())


def responds_to_a_question(body: object) -> bool:
    """A response's new input must end with a user message with text, give no function
    tools, and not name two different conversations (400s, rules OpenAPI cannot state;
    tested in tests/api/test_responses_api.py)."""
    if not isinstance(body, dict):
        return True
    given = body.get("input")
    if isinstance(given, str):
        asks = bool(given.strip())
    elif isinstance(given, list) and given and isinstance(given[-1], dict):
        dialogue = [item for item in given if isinstance(item, dict)]
        dialogue = [i for i in dialogue if i.get("role") not in ("system", "developer")]
        asks = bool(dialogue) and asks_a_question({"messages": dialogue})
    else:
        return True  # schema-invalid anyway: a negative case
    tools = body.get("tools")
    functions = isinstance(tools, list) and any(
        isinstance(t, dict) and t.get("type") == "function" for t in tools
    )
    both = body.get("conversation") is not None and body.get("previous_response_id") is not None
    return asks and not functions and not both


def items_say_something(body: object, field: str) -> bool:
    """Every door that takes messages (Conversations items, ``/compact``) holds each user
    message to what a question is: some text (a 400 otherwise; tested in
    tests/api/test_input_caps.py), a rule on text that is not only white space that
    OpenAPI cannot state. Schema-invalid bodies stay (negatives)."""
    items = body.get(field) if isinstance(body, dict) else None
    if isinstance(items, str):
        return bool(items.strip())
    if not isinstance(items, list):
        return True
    for item in items:
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, list):
            texts = [p.get("text") for p in content if isinstance(p, dict)]
            content = "".join(t for t in texts if isinstance(t, str))
        if isinstance(content, str) and not content.strip():
            return False
    return True


def filter_case(_context, case):
    """execute* takes the task as a query parameter or in the JSON body: with neither it is
    a 422 ("task is required"), a rule across two locations that OpenAPI cannot state
    (tested in tests/api/test_execute.py). Such requests are left out, as are chat
    completions that ask nothing (``asks_a_question``)."""
    if case.path == "/v1/chat/completions":
        return asks_a_question(case.body)
    if case.path == "/v1/responses":
        return responds_to_a_question(case.body)
    if case.path == "/v1/responses/compact":
        return items_say_something(case.body, "input")
    if case.path.startswith("/v1/conversations"):
        return items_say_something(case.body, "items")
    if "/execute" not in case.path:
        return True
    body = case.body if isinstance(case.body, dict) else {}
    return (case.query or {}).get("task") is not None or body.get("task") is not None


def fresh_idempotency_key(case: schemathesis.Case) -> None:
    """An Idempotency-Key reused with another request is a 422 by design (IETF draft; tested
    in tests/api/test_idempotency.py). Generated keys repeat ("0"), and this test sends
    each case twice, so a valid key is made unique per call; other values stay (negatives)."""
    key = (case.headers or {}).get("Idempotency-Key")
    if isinstance(key, str) and len(key) <= 255:
        case.headers["Idempotency-Key"] = uuid.uuid4().hex


ADMIN_OR_REGENERATE = r"/regenerate$|/messages/\{seq\}/|^/api/v1/admin/|^/api/v1/imports"


@pytest.fixture
def api_schema(app: WithServices) -> Iterator[schemathesis.BaseSchema]:
    # Regenerate is left out: a conversation without a user message is a 422 by design,
    # state the schema cannot state (tests/api/test_regenerate.py; test_schemathesis.py
    # still sends it anything, for server errors). So are a question's edit and branch
    # switch: which seq is a question and which branches it has is the same kind of state
    # (tests/api/test_edit_branches.py). So are the admin routes: this key's
    # owner is no admin, and to anyone but an admin they are the unknown-route 404 for
    # every method and body (tests/api/test_admin_routes.py); an admin's key sends them
    # everything in tests/api/test_schemathesis_accounts.py.
    # The imports are left out too: a multipart upload needs the file or a pasted text (a
    # rule across two fields), and FastAPI reads an empty form field as a missing one;
    # tests/api/test_imports.py sends them bad input, test_auth.py the missing keys. So is
    # a file's upload (multipart; tests/api/test_files.py sends it hostile input); listing,
    # downloading and deleting files are fuzzed.
    loaded = (
        schemathesis.openapi.from_asgi("/openapi.json", app)
        .exclude(path_regex=r"/regenerate$|/messages/\{seq\}/|^/api/v1/imports")
        .exclude(method="POST", path="/api/v1/files")
    )
    loaded.auth()(Bearer)
    # A task longer than LUMINA_MAX_TASK_CHARS (a deployment setting the static schema
    # cannot state) is a documented 413, not a rejected valid request.
    # The bytes of an image's data URL or a file's file_data decide what they are (#48):
    # valid base64 of bytes that are no image (or no accepted type) is a documented 415.
    loaded.config.checks.positive_data_acceptance = PositiveDataAcceptanceConfig(
        expected_statuses=[*POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES, "413", "415"]
    )
    # An invalid body past LUMINA_MAX_BODY_BYTES (4096 here) is refused whole: a 413 is a
    # rejection of negative data as much as a 422 is.
    loaded.config.checks.negative_data_rejection = NegativeDataRejectionConfig(
        expected_statuses=[*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "413"]
    )
    schemathesis.openapi.format("cursor", CURSORS)
    loaded.hook(map_query)
    loaded.hook(filter_case)
    yield loaded
    unregister_string_format("cursor")


def is_file_upload(case: schemathesis.Case) -> bool:
    """POST /api/v1/files: multipart, left to tests/api/test_files.py (see api_schema)."""
    return case.operation.method.upper() == "POST" and case.operation.path == "/api/v1/files"


@pytest.fixture
def existing(app: WithServices, api_schema: schemathesis.BaseSchema) -> Existing:
    return Existing(app, headers={"Authorization": f"Bearer {KEY}"})


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=15,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_every_check_passes(case: schemathesis.Case, existing: Existing) -> None:
    if re.search(ADMIN_OR_REGENERATE, case.operation.path) or is_file_upload(case):
        return  # see api_schema: not for this key (admin), by design (regenerate), uploads
    fresh_idempotency_key(case)
    existing_fork_point(case)
    case.call_and_validate(checks=ALL_CHECKS, timeout=10)
    generated = case.path_parameters or {}
    if not generated:
        return
    ids = existing.for_case(case)
    case.path_parameters = {name: ids.get(name, value) for name, value in generated.items()}
    fresh_idempotency_key(case)
    case.call_and_validate(checks=ALL_CHECKS, timeout=10)


@pytest.mark.slow
def test_stateful_links_pass_every_check(api_schema: schemathesis.BaseSchema) -> None:
    """Sequences along the links schemathesis infers (POST /conversations → GET, PATCH,
    DELETE → GET …; execute → runs): ``use_after_free`` and ``ensure_resource_availability``
    only apply here."""

    # Not the long-term memories: they are written in the background after each turn, so
    # the list a GET returns changes between hypothesis's replays of one sequence, and the
    # DELETE drawn from it cannot be replayed (FlakyStrategyDefinition, not a finding).
    # Nor the list of conversations, for the same reason: every sequence adds to it, so
    # the ids a replayed GET /conversations hands its link to GET /conversations/{id}
    # differ from the first run's (FlakyStrategyDefinition in CI, on a quiet machine).
    # The conversations a sequence creates keep their links (POST → GET, PATCH, DELETE).
    # Their routes keep every check in ``test_every_check_passes`` and tests/api.
    stable = api_schema.exclude(path_regex=r"^/api/v1/memories").exclude(
        method="GET", path="/api/v1/conversations"
    )

    class Machine(stable.as_state_machine()):  # type: ignore[misc]
        def before_call(self, case: schemathesis.Case) -> None:
            fresh_idempotency_key(case)
            existing_fork_point(case)

        def validate_response(self, response, case, additional_checks=None, **kwargs) -> None:
            case.validate_response(
                response,
                checks=ALL_CHECKS,
                transport_kwargs=kwargs or None,
                recorder=self.recorder,
            )

    Machine.run(
        settings=settings(
            max_examples=40,
            stateful_step_count=12,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        )
    )
