"""Schemathesis with every check it has, against the production server (gunicorn and
uvicorn workers, a Celery worker, real HTTP): no request, valid or not, makes the API
answer outside its schema, accept what the schema forbids, refuse what it allows, or
ignore its authentication. Seeded and budgeted, so CI runs the same cases each time."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from accounts.services import token_create
from drafts.services import draft_create
from testbed.fake_openai import Turn
from tests.support.versions import version_of

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

# Per operation: the suite's budget; a longer search sets SCHEMATHESIS_EXAMPLES.
EXAMPLES = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "30"))


@pytest.fixture
def live_schema(web_stack):
    web_stack.fake_openai.responder = lambda body: Turn(text="Noted.")
    return schemathesis.openapi.from_url(f"{web_stack.base}/api/schema/")


@pytest.fixture
def token(staff_user, make_ad, make_voice):
    ad = make_ad(owner=staff_user)
    make_voice(language="th")
    for kind in ("voices", "music", "sfx"):
        draft_create(ad=ad, version=version_of(kind))
    return token_create(user=staff_user)[1]


schema = schemathesis.pytest.from_fixture("live_schema")
# A language in the spellings people use: the format no pattern describes.
schemathesis.openapi.format(
    "language", st.sampled_from(["th", "Thai", "th-TH", "pt-BR", "English", "ja", "mandarin"])
)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_every_operation_keeps_every_check_on_the_live_server(case, token, web_stack):
    case.call_and_validate(
        base_url=web_stack.base, headers={"Authorization": f"Token {token}"}, timeout=30
    )
