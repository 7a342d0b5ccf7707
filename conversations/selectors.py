"""Reads of conversations and runs: what a run produced, the messages of a
conversation as typed parts for web clients, and the production statistics."""

from __future__ import annotations

import uuid
from collections import defaultdict
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Avg, Count, Min, Q, QuerySet, Sum
from django.shortcuts import get_object_or_404

from adstudio.db.sql import column, columns, from_row, quote_name, uuid_param
from conversations.models import Conversation, Message, MessageRole, ModelCall, Run, RunStatus
from drafts.models import Ad, Draft
from workspaces.access import scoped
from workspaces.models import Membership
from workspaces.roles import Action, roles_allowed


def runs_for(user) -> QuerySet[Run]:
    """The runs of the ads ``user`` may see."""
    runs = Run.objects.select_related("conversation", "conversation__ad")
    return scoped(runs, user, workspace="conversation__ad__workspace")


def run_key_used(*, user, idempotency_key: str) -> bool:
    """Whether ``user`` already started a run with ``idempotency_key``: a request sent
    with it again is a replay, answered with that run (``services.run_once_per_key``)."""
    if not idempotency_key:
        return False
    return Run.objects.filter(requested_by=user, idempotency_key=idempotency_key).exists()


def runs_queued() -> tuple[int, datetime | None]:
    """How many runs wait for a worker, and when the oldest of them was created: one
    query, through the partial index of unfinished runs (for the metrics' scrape)."""
    queued = Run.objects.filter(status=RunStatus.QUEUED).aggregate(
        count=Count("pk"), oldest=Min("created_at")
    )
    return queued["count"], queued["oldest"]


def conversations_for(user) -> QuerySet[Conversation]:
    """The conversations of the ads ``user`` may see."""
    return scoped(Conversation.objects.select_related("ad"), user, workspace="ad__workspace")


def run_drafts(*, run: Run) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """``(drafts, draftsCreated)``: per kind the latest version this run wrote, and every
    draft it wrote in order. Read from the drafts themselves, never guessed."""
    created = list(
        Draft.objects.filter(run_id=run.pk)
        .order_by("created_at", "version")
        .values("id", "kind", "version")
    )
    latest: dict[str, int] = {}
    for draft in created:
        latest[draft["kind"]] = max(latest.get(draft["kind"], 0), draft["version"])
    return (
        {kind: f"v{version}" for kind, version in latest.items()},
        [{"kind": d["kind"], "version": f"v{d['version']}", "id": d["id"]} for d in created],
    )


def conversation_taking_messages(
    *, ad, latest: Conversation | None, conversation_id: uuid.UUID | None
) -> Conversation | None:
    """Where a message about ``ad`` goes: the conversation it names, which must be the
    ad's current one (only that one takes messages; ``Http404`` for any other), or else
    the ad's latest (``latest``, None when it has none yet)."""
    if not conversation_id or (latest and latest.pk == conversation_id):
        return latest
    return get_object_or_404(
        Conversation.objects.filter(ad=ad, superseded_at=None), pk=conversation_id
    )


def conversation_latest(
    *, ad_id: uuid.UUID, conversations: QuerySet[Conversation] | None = None
) -> Conversation | None:
    """The ad's current conversation (its latest), from ``conversations`` (all by
    default)."""
    conversations = Conversation.objects.all() if conversations is None else conversations
    return conversations.filter(ad_id=ad_id).order_by("-created_at").first()


def conversation_latest_for(user, *, ad_id: uuid.UUID) -> tuple[Conversation | None, str | None]:
    """``(conversation, role)``: the ad's current conversation with its ad, and ``user``'s
    role in the ad's workspace, if ``user`` may see the ad (a member, or a superuser);
    ``(None, None)`` otherwise or when the ad has no conversation. Plain SQL, one
    statement: every chat message reads it, and compiling the queryset cost more than
    running it (``benchmarks.chat_post``)."""
    conversation_table = quote_name(Conversation._meta.db_table)
    ad_table = quote_name(Ad._meta.db_table)
    membership_table = quote_name(Membership._meta.db_table)
    role = (
        f"(SELECT m.{column(Membership, 'role')} FROM {membership_table} m "
        f"WHERE m.{column(Membership, 'workspace')} = a.{column(Ad, 'workspace')} "
        f"AND m.{column(Membership, 'user')} = %s)"
    )
    sql = (
        f"SELECT {columns(Conversation, 'c')}, {columns(Ad, 'a')}, {role} "
        f"FROM {conversation_table} c JOIN {ad_table} a ON a.{column(Ad, 'id')} = "
        f"c.{column(Conversation, 'ad')} WHERE c.{column(Conversation, 'ad')} = %s "
        f"AND c.{column(Conversation, 'superseded_at')} IS NULL"
    )
    params = [user.pk, uuid_param(ad_id)]
    if not user.is_superuser:
        readers = roles_allowed(Action.VIEW)
        sql += f" AND {role} IN ({', '.join(['%s'] * len(readers))})"
        params += [user.pk, *readers]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None, None
    conversation, after = from_row(Conversation, row)
    conversation.ad, after = from_row(Ad, row, after)
    return conversation, row[after]


def agent_stats(*, since: datetime, until: datetime) -> dict[str, Any]:
    """The numbers that say whether the agent works in production, per provider and tool:
    runs by status, rounds, tokens and cost per run and per conversation (a user's
    session with the director), tool-call success and argument-repair rates."""
    runs = Run.objects.filter(created_at__gte=since, created_at__lt=until)
    by_status = dict(runs.values_list("status").annotate(n=Count("id")).order_by())
    provider_status: dict[str, dict[str, int]] = defaultdict(dict)
    counted = runs.exclude(provider="").values_list("provider", "status").annotate(n=Count("id"))
    for provider, run_status, count in counted.order_by():
        provider_status[provider][run_status] = count
    per_provider = []
    for row in (
        runs.exclude(provider="")
        .values("provider")
        .annotate(
            runs=Count("id"),
            conversations=Count("conversation", distinct=True),
            avg_rounds=Avg("rounds"),
            prompt_tokens=Sum("prompt_tokens"),
            cached_tokens=Sum("cached_tokens"),
            completion_tokens=Sum("completion_tokens"),
            cost=Sum("cost"),
        )
        .order_by("provider")
    ):
        for total in ("prompt_tokens", "cached_tokens", "completion_tokens", "cost"):
            row[total] = row[total] or 0
        statuses = provider_status[row["provider"]]
        per_provider.append(
            {
                "provider": row["provider"],
                "runs": row["runs"],
                "runsByStatus": {status: statuses.get(status, 0) for status in RunStatus.values},
                "succeeded": statuses.get(RunStatus.SUCCEEDED, 0),
                "failed": statuses.get(RunStatus.FAILED, 0),
                "roundsPerRun": round(float(row["avg_rounds"] or 0), 2),
                "promptTokens": row["prompt_tokens"],
                "cachedTokens": row["cached_tokens"],
                "completionTokens": row["completion_tokens"],
                "cost": str(row["cost"]),
                "costPerRun": str(round(row["cost"] / row["runs"], 6)),
                "conversations": row["conversations"],
                "perConversation": {
                    "promptTokens": round(row["prompt_tokens"] / row["conversations"], 1),
                    "cachedTokens": round(row["cached_tokens"] / row["conversations"], 1),
                    "completionTokens": round(row["completion_tokens"] / row["conversations"], 1),
                    "cost": str(round(row["cost"] / row["conversations"], 6)),
                },
            }
        )
    # Argument repairs are marked on the assistant's calls; results on the tool messages.
    asked: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # calls, repaired
    for provider, tool_calls in (
        Message.objects.filter(
            role=MessageRole.ASSISTANT, run__created_at__gte=since, run__created_at__lt=until
        )
        .exclude(tool_calls=[])
        .values_list("run__provider", "tool_calls")
        .iterator()
    ):
        for call in tool_calls:
            counts = asked[provider, call.get("name", "")]
            counts[0] += 1
            counts[1] += bool(call.get("repaired") or call.get("parse_error"))
    tool_rows = Message.objects.filter(
        role=MessageRole.TOOL, run__created_at__gte=since, run__created_at__lt=until
    )
    per_tool = []
    for row in (
        tool_rows.values("run__provider", "name")
        .annotate(calls=Count("id"), errors=Count("id", filter=Q(is_error=True)))
        .order_by("run__provider", "name")
    ):
        calls, repaired = asked.get((row["run__provider"], row["name"]), (0, 0))
        per_tool.append(
            {
                "provider": row["run__provider"],
                "tool": row["name"],
                "calls": row["calls"],
                "errors": row["errors"],
                "successRate": round(1 - row["errors"] / row["calls"], 4),
                "repaired": repaired,
                "argumentRepairRate": round(repaired / calls, 4) if calls else None,
            }
        )
    calls = sum(counts[0] for counts in asked.values())
    repaired = sum(counts[1] for counts in asked.values())
    model_calls = ModelCall.objects.filter(
        run__created_at__gte=since, run__created_at__lt=until
    ).aggregate(total=Count("id"), failed=Count("id", filter=~Q(error_code="")))
    return {
        "since": since,
        "until": until,
        "runsByStatus": {status: by_status.get(status, 0) for status in RunStatus.values},
        "providers": per_provider,
        "tools": per_tool,
        "toolCalls": calls,
        "argumentRepairRate": round(repaired / calls, 4) if calls else None,
        "modelCalls": model_calls["total"],
        "modelCallsFailed": model_calls["failed"],
    }
