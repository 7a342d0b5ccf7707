"""docs/api.md's useChat page, built from the guide's own code block (`tsc`, esbuild),
served on the API's origin and driven in Chromium against the production server and a
worker: drafts, a reset reply, a failed run, Stop, a reload mid-reply, Try again; then
what useChat holds is exactly the conversation's `conversation/ui` history."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from accounts.services import token_create
from conversations.models import Run
from tests.clients.directors import history_director
from tests.support.browser import loopback_visit
from tests.support.worker import ROOT

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build-page"
# A page's usual setting: a bundler resolves the modules.
TSCONFIG = {
    "compilerOptions": {
        "target": "ES2022",
        "module": "ESNext",
        "moduleResolution": "bundler",
        "jsx": "react-jsx",
        "strict": True,
        "noEmit": True,
        "skipLibCheck": True,
        "types": [],
        "lib": ["ES2022", "DOM", "DOM.Iterable"],
    },
    "files": ["page.tsx"],
}
INDEX = (
    '<!doctype html><meta charset="utf-8"><div id="root"></div>'
    '<script type="module" src="page.js"></script>'
)


def guide_page() -> str:
    """The tsx block of docs/api.md's "A useChat page, end to end"."""
    guide = (ROOT / "docs" / "api.md").read_text()
    section = guide.split("### A useChat page, end to end", 1)[1]
    return re.search(r"```tsx\n(.*?)```", section, re.DOTALL).group(1)


@pytest.fixture
def page_bundle(node) -> Path:
    """The guide's page type-checked and bundled, beside the published types module."""
    shutil.rmtree(BUILD, ignore_errors=True)
    BUILD.mkdir()
    (BUILD / "page.tsx").write_text(guide_page())
    shutil.copy(ROOT / "clients" / "adstudio-chat.ts", BUILD / "adstudio-chat.ts")
    (BUILD / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    tools = HERE / "node_modules" / ".bin"
    bundle = ["page.tsx", "--bundle", "--format=esm", "--jsx=automatic", "--outfile=page.js"]
    production = '--define:process.env.NODE_ENV="production"'
    for command in (
        [tools / "tsc", "-p", "tsconfig.json"],
        [tools / "esbuild", *bundle, production],
    ):
        result = subprocess.run(
            [str(part) for part in command], cwd=BUILD, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout + result.stderr
    return BUILD / "page.js"


def serve_page(bundle: Path):
    """The page on the API's own origin, as a site would serve it (no CORS needed)."""

    def fulfil(route) -> None:
        if route.request.url.endswith("/page.js"):
            route.fulfill(body=bundle.read_text(), content_type="text/javascript")
        else:
            route.fulfill(body=INDEX, content_type="text/html")

    return fulfil


def chat(page) -> dict:
    return page.evaluate("JSON.parse(JSON.stringify(window.chat))")


def send(page, text: str) -> None:
    """Type and send ``text``; return once its reply has ended (or the chat shows an error)."""
    replies = sum(m["role"] == "assistant" for m in chat(page)["messages"])
    page.fill("input", text)
    page.click("button[type=submit]")
    page.wait_for_function(
        """(replies) => window.chat.messages.filter((m) => m.role === "assistant").length > replies
        && ["ready", "error"].includes(window.chat.status)""",
        arg=replies,
        timeout=30_000,
    )


def last_reply_has_text(page) -> None:
    page.wait_for_function(
        """() => { const last = window.chat.messages.at(-1);
        return last.role === "assistant"
          && last.parts.some((p) => p.type === "text" && p.text); }""",
        timeout=15_000,
    )


def test_the_guides_page_chats_stops_resumes_and_holds_the_history(
    page_bundle, chromium, web_stack, user, make_ad
):
    web_stack.fake_openai.responder = history_director()
    ad = make_ad(language="en")
    token = token_create(user=user)[1]
    base = web_stack.base

    with loopback_visit(chromium) as visit:
        page = visit.page
        page.route(f"{base}/_chat/**", serve_page(page_bundle))
        page.goto(f"{base}/_chat/#ad={ad.pk}&token={token}")
        page.wait_for_function("window.chat !== undefined")

        send(page, "tools: a music bed")
        assert page.locator(".brief").inner_text().startswith("Brief: ")
        assert page.locator(".draft").inner_text() == "New draft: music v1"
        assert page.locator(".tool").inner_text() == "Music v1: warm piano"

        send(page, "reset: say it twice")
        assert page.locator(".abandoned").count() == 1

        send(page, "fail: this one breaks")
        assert "bad request" in page.locator(".chat-error").inner_text()
        assert page.locator("section.assistant").last.get_attribute("data-status") == "failed"

        page.fill("input", "slow: take your time")
        page.click("button[type=submit]")
        last_reply_has_text(page)
        stopped_at = time.monotonic()
        page.click("text=Stop")
        page.wait_for_selector("section.assistant[data-status=cancelled]", timeout=10_000)
        stop_took = time.monotonic() - stopped_at
        page.wait_for_function("window.chat.status === 'ready'")

        page.fill("input", "pause: and come back")
        page.click("button[type=submit]")
        last_reply_has_text(page)
        page.reload()  # mid-reply: the history so far, then the rest of the reply
        page.wait_for_function(
            """() => window.chat && window.chat.status === "ready"
            && window.chat.messages.at(-1).metadata?.status === "succeeded" """,
            timeout=30_000,
        )
        resumed = chat(page)["messages"][-1]
        assert [p["text"] for p in resumed["parts"] if p["type"] == "text"] == [
            "Part one, and after a while part two."
        ]

        send(page, "plain: one line")
        replaced = chat(page)["messages"][-1]["id"]
        page.click("text=Try again")
        page.wait_for_function(
            """(replaced) => window.chat.status === "ready"
            && window.chat.messages.at(-1).id !== replaced""",
            arg=replaced,
            timeout=30_000,
        )
        held = chat(page)["messages"]
        assert visit.aborted == []

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    stored = client.get(f"/api/ads/{ad.pk}/conversation/ui").json()["results"]
    assert held == stored  # what the person saw is what is stored
    assert len({m["id"] for m in held}) == len(held) == 12  # six turns, one reply replaced
    assert held[-1]["parts"][-1]["text"] == "Plain answer number 2."
    statuses = list(
        Run.objects.filter(conversation__ad=ad)
        .order_by("created_at")
        .values_list("status", flat=True)
    )
    assert statuses == [
        "succeeded",
        "succeeded",
        "failed",
        "cancelled",
        "succeeded",
        "succeeded",
        "succeeded",
    ]
    assert stop_took < 5, stop_took  # the benchmark measures it; the bound is generous
