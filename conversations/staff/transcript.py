"""The transcript staff read in the admin: one page of a conversation's (or a run's)
messages as turns, each tool call a card with the result that answered it, grouped under
the runs that wrote them with the drafts they made, in a fixed number of queries."""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce

from conversations.models import Message, MessageRole, Run, RunStatus
from conversations.record.messages import draft_call_key
from drafts.models import Draft

TRANSCRIPT_PAGE_SIZE = 50
# What the transcript reads of a message: not provider_data, which may hold a long hidden
# reasoning text per message.
TRANSCRIPT_FIELDS = (
    "seq",
    "role",
    "text",
    "tool_calls",
    "tool_call_id",
    "name",
    "is_error",
    "run_id",
    "created_at",
)


@dataclass
class ToolCard:
    """One tool call and the result that answered it (matched by call id), both as
    readable text. ``called`` is False for a result whose call is on an earlier page."""

    call_id: str
    name: str
    called: bool = True
    arguments: str = ""  # the parsed arguments, pretty-printed
    raw_arguments: str = ""  # only when the arguments could not be parsed
    parse_error: str = ""
    repaired: bool = False
    result: str | None = None  # pretty-printed when JSON; None: no result stored
    result_seq: int | None = None
    result_on_next_page: bool = False
    is_error: bool = False
    draft: Draft | None = None  # the draft this call wrote


@dataclass
class Turn:
    """One message: a user, assistant or system turn, or a tool result shown on its own."""

    seq: int
    role: str
    text: str
    run_id: uuid.UUID | None
    created_at: datetime
    cards: list[ToolCard] = field(default_factory=list)


@dataclass
class RunSection:
    """The consecutive turns of one run on the page, under the run's header."""

    run: Run | None
    turns: list[Turn]
    continued: bool = False  # the run began on an earlier page
    drafts: list[Draft] = field(default_factory=list)


@dataclass
class Transcript:
    page: Page
    sections: list[RunSection]
    page_range: list
    # Runs that have no message yet (queued, or stopped before their first step), shown
    # after the last page's messages.
    idle_runs: list[Run]
    runs_by_status: dict[str, int] | None = None

    @property
    def runs_count(self) -> int:
        return sum((self.runs_by_status or {}).values())


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _pretty_text(text: str) -> str:
    """A tool result as stored (JSON text, usually), pretty-printed when it is JSON."""
    try:
        return _pretty(json.loads(text))
    except ValueError:
        return text


def _card(call: dict[str, Any]) -> ToolCard:
    card = ToolCard(
        call_id=call.get("id", ""),
        name=call.get("name", ""),
        parse_error=call.get("parse_error") or "",
        repaired=bool(call.get("repaired")),
    )
    if card.parse_error:
        card.raw_arguments = call.get("raw_arguments", "")
    else:
        card.arguments = _pretty(call.get("arguments") or {})
    return card


def _answer(card: ToolCard, row: Message) -> None:
    card.result = _pretty_text(row.text)
    card.result_seq = row.seq
    card.is_error = row.is_error


def conversation_transcript(
    *, conversation_id: uuid.UUID, page: int | str = 1, per_page: int = TRANSCRIPT_PAGE_SIZE
) -> Transcript:
    """One page of the conversation's messages with their runs and the drafts the runs
    wrote, in a fixed number of queries whatever the conversation's length."""
    transcript = _transcript(
        messages=Message.objects.filter(conversation_id=conversation_id),
        runs=Run.objects.filter(conversation_id=conversation_id),
        page=page,
        per_page=per_page,
    )
    counts = dict(
        Run.objects.filter(conversation_id=conversation_id)
        .order_by()
        .values_list("status")
        .annotate(n=Count("pk"))
    )
    # In the lifecycle's order (queued, running, ..., succeeded), not the database's.
    transcript.runs_by_status = {s: counts[s] for s in RunStatus.values if s in counts}
    return transcript


def run_transcript(
    *, run_id: uuid.UUID, page: int | str = 1, per_page: int = TRANSCRIPT_PAGE_SIZE
) -> Transcript:
    """One page of the run's own messages, read as the conversation's transcript is."""
    return _transcript(
        messages=Message.objects.filter(run_id=run_id),
        runs=Run.objects.filter(pk=run_id),
        page=page,
        per_page=per_page,
    )


def _transcript(
    *, messages: QuerySet[Message], runs: QuerySet[Run], page: int | str, per_page: int
) -> Transcript:
    paginator = Paginator(messages.order_by("seq").only(*TRANSCRIPT_FIELDS), per_page)
    current = paginator.get_page(page)
    rows = list(current.object_list)

    turns: list[Turn] = []
    waiting: dict[str, ToolCard] = {}  # calls of the latest assistant turn, by call id
    for row in rows:
        if row.role == MessageRole.TOOL:
            card = waiting.pop(row.tool_call_id, None)
            if card is None:  # its call is on an earlier page
                card = ToolCard(call_id=row.tool_call_id, name=row.name, called=False)
                turns.append(
                    Turn(
                        seq=row.seq,
                        role=row.role,
                        text="",
                        run_id=row.run_id,
                        created_at=row.created_at,
                        cards=[card],
                    )
                )
            _answer(card, row)
            continue
        turn = Turn(
            seq=row.seq,
            role=row.role,
            text=row.text,
            run_id=row.run_id,
            created_at=row.created_at,
            cards=[_card(call) for call in row.tool_calls],
        )
        # The loop stores an assistant turn's results right after it, before any other
        # message: a call still waiting when the next turn comes was never answered.
        waiting = {card.call_id: card for card in turn.cards}
        turns.append(turn)

    if rows:
        # The results of the page's last calls may start the next page: they are the tool
        # messages after the page, up to the next message of another role.
        last = rows[-1].seq
        block_end = (
            messages.filter(seq__gt=last)
            .exclude(role=MessageRole.TOOL)
            .order_by("seq")
            .values("seq")[:1]
        )
        for row in (
            messages.filter(
                role=MessageRole.TOOL,
                seq__gt=last,
                seq__lt=Coalesce(Subquery(block_end), Value(2**31 - 1)),
            )
            .order_by("seq")
            .only(*TRANSCRIPT_FIELDS)
        ):
            if (card := waiting.pop(row.tool_call_id, None)) is not None:
                _answer(card, row)
                card.result_on_next_page = True

    run_ids = {turn.run_id for turn in turns if turn.run_id}
    first_seq = Message.objects.filter(run_id=OuterRef("pk")).order_by("seq").values("seq")[:1]
    page_runs = list(
        runs.annotate(
            first_seq=Subquery(first_seq),
            took=ExpressionWrapper(
                F("finished_at") - F("started_at"), output_field=DurationField()
            ),
        )
        .filter(Q(pk__in=run_ids) | Q(first_seq__isnull=True))
        .order_by("created_at")
    )
    drafts_by_run: dict[uuid.UUID, list[Draft]] = defaultdict(list)
    drafts_by_call: dict[tuple[uuid.UUID, str], Draft] = {}
    if run_ids:
        for draft in (
            Draft.objects.filter(run_id__in=run_ids)
            .only("id", "kind", "version", "status", "run_id", "tool_call_id")
            .order_by("created_at", "version")
        ):
            drafts_by_run[draft.run_id].append(draft)
            drafts_by_call[draft.run_id, draft.tool_call_id] = draft

    by_id = {run.pk: run for run in page_runs}
    sections: list[RunSection] = []
    for turn in turns:
        for card in turn.cards:
            if card.called:  # a draft is keyed by the place of the call that wrote it
                card.draft = drafts_by_call.get(
                    (turn.run_id, draft_call_key(turn.seq, card.call_id))
                )
        if not sections or sections[-1].turns[-1].run_id != turn.run_id:
            run = by_id.get(turn.run_id)
            sections.append(
                RunSection(
                    run=run,
                    turns=[],
                    continued=run is not None and (run.first_seq or 0) < turn.seq,
                    drafts=drafts_by_run.get(turn.run_id, []),
                )
            )
        sections[-1].turns.append(turn)

    return Transcript(
        page=current,
        sections=sections,
        page_range=list(paginator.get_elided_page_range(current.number, on_each_side=2)),
        idle_runs=[] if current.has_next() else [r for r in page_runs if r.first_seq is None],
    )
