"""The agent's health figures: per provider and per tool, over a period."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from conversations.models import Conversation, Message, Run, RunStatus
from conversations.selectors import agent_stats

pytestmark = pytest.mark.django_db


def _run(conversation, provider, status, *, cost="0", prompt_tokens=0, rounds=1) -> Run:
    return Run.objects.create(
        conversation=conversation,
        provider=provider,
        status=status,
        finished_at=timezone.now() if status in RunStatus.finished() else None,
        cost=Decimal(cost),
        prompt_tokens=prompt_tokens,
        rounds=rounds,
    )


def _calls(run, seq, *calls: tuple[str, dict, bool]) -> None:
    """An assistant turn of ``run`` asking for ``calls`` (id, flags, result is an error),
    and the tool messages that answer them."""
    Message.objects.create(
        conversation=run.conversation,
        run=run,
        seq=seq,
        role="assistant",
        tool_calls=[{"id": id_, "name": "search_voices", **flags} for id_, flags, _ in calls],
    )
    for n, (id_, _, is_error) in enumerate(calls, start=1):
        Message.objects.create(
            conversation=run.conversation,
            run=run,
            seq=seq + n,
            role="tool",
            tool_call_id=id_,
            name="search_voices",
            is_error=is_error,
        )


def test_stats_per_provider_and_tool_over_the_period(make_ad):
    session, other_session, kimi_session = (
        Conversation.objects.create(ad=make_ad(title=f"Ad {n}")) for n in range(3)
    )
    first = _run(session, "openai", "succeeded", cost="0.010", prompt_tokens=1000, rounds=3)
    _run(session, "openai", "failed", cost="0.002", prompt_tokens=200, rounds=1)
    _run(other_session, "openai", "succeeded", cost="0.004", prompt_tokens=600, rounds=2)
    kimi = _run(kimi_session, "kimi", "succeeded", cost="0.001")
    _calls(first, 1, ("a", {"repaired": True}, False), ("b", {}, True))
    _calls(kimi, 1, ("c", {"parse_error": "not JSON"}, True))
    old = _run(Conversation.objects.create(ad=make_ad(title="Old")), "openai", "failed", cost="9")
    _calls(old, 1, ("d", {"repaired": True}, True))
    Run.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))

    now = timezone.now()
    stats = agent_stats(since=now - timedelta(days=1), until=now)

    providers = {row["provider"]: row for row in stats["providers"]}
    openai = providers["openai"]
    assert openai["runs"] == 3 and openai["conversations"] == 2
    assert openai["runsByStatus"]["succeeded"] == 2 and openai["runsByStatus"]["failed"] == 1
    assert openai["runsByStatus"]["queued"] == 0
    assert openai["roundsPerRun"] == 2.0
    assert openai["cost"] == "0.016000" and openai["costPerRun"] == "0.005333"
    assert openai["perConversation"] == {
        "promptTokens": 900.0,
        "cachedTokens": 0.0,
        "completionTokens": 0.0,
        "cost": "0.008000",
    }
    assert providers["kimi"]["runsByStatus"]["succeeded"] == 1
    tools = {(row["provider"], row["tool"]): row for row in stats["tools"]}
    assert tools["openai", "search_voices"] == {
        "provider": "openai",
        "tool": "search_voices",
        "calls": 2,
        "errors": 1,
        "successRate": 0.5,
        "repaired": 1,
        "argumentRepairRate": 0.5,
    }
    assert tools["kimi", "search_voices"]["argumentRepairRate"] == 1.0
    assert stats["toolCalls"] == 3 and stats["argumentRepairRate"] == 0.6667
    assert stats["runsByStatus"]["failed"] == 1  # the older run is outside the period
