"""One golden case through the product as a person would drive it: the ad made from the
brief, its first turn, the refinement if the case has one, each run waited for; then
what the runs left behind read back as an ``AdOutcome`` for the scorers.

The runs are the real ones (the run task, the loop, the tools, the database): executed in
this process where no broker is configured, by the workers where one is.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from django.db.models import Max

from conversations.events.waits import run_wait
from conversations.models import Message, MessageRole, Run, RunStatus
from conversations.run_request import RunRequest
from conversations.services import brief_send, chat_message_send
from drafts.api import BriefSerializer
from drafts.models import Ad, Draft
from drafts.services import ad_create
from evaluations.cases import KINDS, AdOutcome, CaseInput, TurnOutcome, VoiceFacts
from renders.models import RenderStatus
from renders.services import NothingToRender, render_request, versions_of
from voices.models import Voice


class CaseFailed(Exception):
    """The case could not be run to its end (a brief the API refuses, a run that never
    finished): its result records why."""


@dataclass(frozen=True)
class CaseSetup:
    owner: object  # the user the ads are made and the messages sent as
    workspace: object | None = None  # the owner's personal workspace when None
    provider: str | None = None  # requested for every conversation; the routing when None
    run_timeout_s: float = 600.0
    render: bool = False  # a scratch track of the final versions, to measure the speech


def run_case(inputs: CaseInput, setup: CaseSetup) -> AdOutcome:
    serializer = BriefSerializer(data=inputs.brief.model_dump())
    if not serializer.is_valid():
        raise CaseFailed(f"the API refuses the brief: {serializer.errors}")
    ad = ad_create(owner=setup.owner, workspace=setup.workspace, **serializer.validated_data)
    first = _finished(
        brief_send(request=RunRequest(user=setup.owner, ad=ad, provider=setup.provider)),
        setup,
    )
    runs = [first]
    first_drafts = _latest_payloads(ad)
    ad.refresh_from_db(fields=["duration_s"])
    first_duration_s = ad.duration_s
    if inputs.refinement is not None and first.status == RunStatus.SUCCEEDED:
        refinement = chat_message_send(
            request=RunRequest(
                user=setup.owner,
                ad=ad,
                conversation=first.conversation,
                text=inputs.refinement.message,
            )
        )
        runs.append(_finished(refinement, setup))
    drafts = _latest_payloads(ad)
    ad.refresh_from_db()  # a refinement may have changed the brief (its slot)
    measured = _measured_speech(ad, setup) if setup.render else None
    return AdOutcome(
        ad_id=str(ad.pk),
        conversation_id=str(first.conversation_id),
        language=ad.language,
        market=ad.market,
        duration_s=ad.duration_s,
        first_duration_s=first_duration_s,
        first_drafts=first_drafts,
        drafts=drafts,
        turns=[_turn(run) for run in runs],
        voices=_voice_facts(first_drafts, drafts),
        catalogue_locales=_catalogue_locales(ad.language),
        measured_speech_s=measured,
    )


def _measured_speech(ad: Ad, setup: CaseSetup) -> float | None:
    """Where the speech ends in a scratch track of the ad's latest versions."""
    try:
        render, _ = render_request(ad=ad, versions=versions_of(ad), user=setup.owner)
    except NothingToRender as exc:
        raise CaseFailed(f"the scratch track could not be made: {exc}") from None
    deadline = time.monotonic() + setup.run_timeout_s
    while render.status in (RenderStatus.QUEUED, RenderStatus.RENDERING):
        if time.monotonic() > deadline:
            raise CaseFailed(f"render {render.pk} was not made within {setup.run_timeout_s:g} s")
        time.sleep(0.2)
        render.refresh_from_db()
    if render.status != RenderStatus.DONE:
        raise CaseFailed(f"the scratch track could not be made: {render.error}")
    return render.timeline.get("speechEndS")


def _finished(run: Run, setup: CaseSetup) -> Run:
    run = run_wait(run=run, timeout=setup.run_timeout_s)
    if run.status not in RunStatus.finished():
        raise CaseFailed(f"run {run.pk} did not finish within {setup.run_timeout_s:g} s")
    return run


def _latest_payloads(ad: Ad) -> dict[str, dict]:
    latest = Draft.objects.filter(ad=ad).values("kind").annotate(version=Max("version"))
    wanted = {row["kind"]: row["version"] for row in latest}
    rows = Draft.objects.filter(ad=ad, version__in=set(wanted.values())).values(
        "kind", "version", "payload"
    )
    return {r["kind"]: r["payload"] for r in rows if wanted.get(r["kind"]) == r["version"]}


def _found_nothing(text: str) -> bool:
    """A voice search that matched nothing (the market's locale is not in the catalogue,
    say): information for the director, not a call it got wrong."""
    try:
        error = json.loads(text).get("error", "")
    except (ValueError, AttributeError):
        return False
    return isinstance(error, str) and error.startswith("No approved ") and " matches " in error


def _turn(run: Run) -> TurnOutcome:
    versions: dict[str, list[int]] = {}
    for kind, version in Draft.objects.filter(run_id=run.pk).values_list("kind", "version"):
        versions.setdefault(kind, []).append(version)
    calls = errors = repairs = empty_searches = 0
    for role, tool_calls, is_error, text in Message.objects.filter(run=run).values_list(
        "role", "tool_calls", "is_error", "text"
    ):
        if role == MessageRole.ASSISTANT:
            calls += len(tool_calls or [])
            repairs += sum(
                bool(c.get("repaired") or c.get("parse_error")) for c in tool_calls or []
            )
        elif role == MessageRole.TOOL and is_error and _found_nothing(text):
            empty_searches += 1
        elif role == MessageRole.TOOL and is_error:
            errors += 1
    waited = (run.finished_at - run.created_at).total_seconds() if run.finished_at else 0.0
    return TurnOutcome(
        run_id=str(run.pk),
        status=run.status,
        error_code=run.error_code,
        new_versions={kind: sorted(v) for kind, v in versions.items() if kind in KINDS},
        tool_calls=calls,
        tool_errors=errors,
        empty_searches=empty_searches,
        argument_repairs=repairs,
        rounds=run.rounds,
        prompt_tokens=run.prompt_tokens,
        completion_tokens=run.completion_tokens,
        cost_usd=float(run.cost),
        latency_s=round(waited, 3),
    )


def _voice_facts(*drafts: dict[str, dict]) -> dict[str, VoiceFacts]:
    ids = {
        str(track["voiceId"])
        for payloads in drafts
        for track in payloads.get("voices", {}).get("voiceTracks", [])
    }
    numeric = [int(i) for i in ids if i.isascii() and i.isdigit() and len(i) <= 18]
    rows = Voice.objects.filter(pk__in=numeric).values_list(
        "pk", "language", "locale", "gender", "age", "accent"
    )
    return {
        str(pk): VoiceFacts(language=language, locale=locale, gender=gender, age=age, accent=accent)
        for pk, language, locale, gender, age, accent in rows
    }


def _catalogue_locales(language: str) -> list[str]:
    rows = Voice.objects.filter(language=language, approved=True, active=True)
    return sorted(set(rows.exclude(locale="").values_list("locale", flat=True)))
