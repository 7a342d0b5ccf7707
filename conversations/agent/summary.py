"""Folding a long conversation's older turns into its summary, so a request fits the
context budget: the recent whole turns are sent as they are, the older ones as prose.
"""

from __future__ import annotations

import json
import logging

from django.conf import settings

import providers
from adstudio import observability
from conversations.agent.history import recent_turns_within, split_turns
from conversations.agent.prompts import SUMMARY_SYSTEM_PROMPT, summary_request_text
from conversations.models import Conversation
from conversations.record.log import RunLog
from conversations.runs.step_gate import provider_wait
from providers import GenerateRequest, ProviderError, UserMessage

logger = logging.getLogger(__name__)


def summarise_if_needed(log: RunLog, *, route: list[providers.ProviderBinding]) -> None:
    """Fold the oldest turns into the conversation's summary when the history would not
    fit the context budget; the recent whole turns are sent as they are."""
    budget = settings.ADSTUDIO_CONTEXT_BUDGET_TOKENS
    if sum(row.tokens for row in log.rows) <= budget:
        return
    # Keep half the budget of recent turns, so the next summary is many turns away and
    # the requests in between share one cacheable prefix.
    older, recent = recent_turns_within(split_turns(log.rows), budget=budget // 2)
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
