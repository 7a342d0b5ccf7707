"""Folding a long conversation's older turns into its summary, so a request fits the
context budget: the recent whole turns are sent as they are, the older ones as prose.
"""

from __future__ import annotations

import json
import logging
from functools import cache

from django.conf import settings

import providers
from adstudio import observability
from conversations.agent.history import recent_turns_within, split_turns
from conversations.agent.prompts import (
    SUMMARY_SYSTEM_PROMPT,
    summary_block,
    summary_request_text,
    system_prompt,
)
from conversations.agent.tools import tool_specs
from conversations.models import Conversation
from conversations.record.log import RunLog
from conversations.record.tokens import count_tokens
from conversations.runs.step_gate import provider_wait
from providers import GenerateRequest, ProviderError, UserMessage

logger = logging.getLogger(__name__)


@cache
def standing_prompt_tokens() -> int:
    """What every request carries before its history: the system prompt and the tool
    schemas (names, descriptions, parameters). The same for every request of a process."""
    tools = json.dumps(
        [[spec.name, spec.description, spec.parameters] for spec in tool_specs()],
        ensure_ascii=False,
    )
    return count_tokens(system_prompt()) + count_tokens(tools)


def summarise_if_needed(log: RunLog, *, route: list[providers.ProviderBinding]) -> None:
    """Fold the oldest turns into the conversation's summary when the request would not
    fit the context budget (``ADSTUDIO_CONTEXT_BUDGET_TOKENS``: the whole request, system
    prompt, tools and summary included); the recent whole turns are sent as they are."""
    summary = log.conversation.summary
    room = (
        settings.ADSTUDIO_CONTEXT_BUDGET_TOKENS
        - standing_prompt_tokens()
        - (count_tokens(summary_block(summary)) if summary else 0)
    )
    if sum(row.tokens for row in log.rows) <= room:
        return
    # Keep half the room of recent turns, so the next summary is many turns away and the
    # requests in between share one cacheable prefix.
    older, recent = recent_turns_within(split_turns(log.rows), budget=max(room, 0) // 2)
    if not older:
        return
    transcript = "\n".join(
        f"{row.role}: {row.text}"
        + (f" [calls: {json.dumps(row.tool_calls, ensure_ascii=False)}]" if row.tool_calls else "")
        for turn in older
        for row in turn
    )
    request = GenerateRequest(
        model="",
        system=SUMMARY_SYSTEM_PROMPT,
        messages=(UserMessage(text=summary_request_text(log.conversation.summary, transcript)),),
    )
    round_no = log.run.rounds + 1
    try:
        with provider_wait():
            response = providers.generate(
                request,
                route=route,
                on_attempt=lambda attempt: log.model_call(round_no, attempt),
                watch=observability.model_call,
            )
    except ProviderError:
        # The older turns stay in this request, over the budget, rather than be dropped
        # unsummarised for good; the next turn tries the summary again.
        logger.warning(
            "summary failed for conversation %s; this request carries the whole history",
            log.conversation.pk,
        )
        return
    summary = response.message.text.strip()
    log.count_usage(response)
    upto = older[-1][-1].seq
    log.batch.update(Conversation, log.conversation.pk, summary=summary, summary_upto_seq=upto)
    log.conversation.summary = summary
    log.conversation.summary_upto_seq = upto
    log.rows = [row for turn in recent for row in turn]
