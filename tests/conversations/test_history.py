"""The request history is made provider-valid and trimmed in whole turns."""

from __future__ import annotations

import json

import pytest

from conversations.agent.history import (
    INTERRUPTED_RESULT,
    pair_calls_and_results,
    recent_turns_within,
    split_turns,
)
from conversations.models import Message as MessageRow
from providers.base import (
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def call(call_id: str, name: str = "search_voices") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments={}, raw_arguments="{}")


def result(call_id: str, name: str = "search_voices") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, name=name, content='{"ok": true}')


def test_an_unanswered_call_gets_an_interrupted_result_before_the_next_turn():
    messages = [
        UserMessage("brief"),
        AssistantMessage(tool_calls=(call("a"), call("b"))),
        result("a"),
        UserMessage("next"),
    ]

    valid = pair_calls_and_results(messages)

    assert [type(m).__name__ for m in valid] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "ToolResultMessage",
        "UserMessage",
    ]
    synthesised = valid[3]
    assert synthesised.tool_call_id == "b" and synthesised.is_error
    assert json.loads(synthesised.content)["error"] == "interrupted"
    assert synthesised.content == INTERRUPTED_RESULT


def test_an_open_call_at_the_end_is_answered_too():
    valid = pair_calls_and_results([UserMessage("x"), AssistantMessage(tool_calls=(call("a"),))])
    assert valid[-1] == ToolResultMessage(
        tool_call_id="a", name="search_voices", content=INTERRUPTED_RESULT, is_error=True
    )


def test_orphaned_and_duplicate_results_are_dropped():
    messages = [
        UserMessage("brief"),
        result("ghost"),
        AssistantMessage(tool_calls=(call("a"),)),
        result("a"),
        result("a"),
        AssistantMessage(text="done"),
        result("late"),
    ]

    valid = pair_calls_and_results(messages)

    assert [getattr(m, "tool_call_id", None) for m in valid] == [None, None, "a", None]


def test_pairing_is_deterministic_and_leaves_valid_history_alone():
    messages = [
        UserMessage("brief"),
        AssistantMessage(tool_calls=(call("a"), call("b"))),
        result("b"),
        result("a"),
        AssistantMessage(text="done"),
    ]
    assert pair_calls_and_results(messages) == messages
    assert pair_calls_and_results(messages) == pair_calls_and_results(list(messages))


def _row(seq: int, role: str, tokens: int) -> MessageRow:
    return MessageRow(seq=seq, role=role, tokens=tokens)


def test_turns_are_kept_whole_from_the_most_recent():
    rows = [
        _row(1, "user", 100),
        _row(2, "assistant", 50),
        _row(3, "tool", 400),
        _row(4, "user", 10),
        _row(5, "assistant", 20),
        _row(6, "tool", 30),
        _row(7, "user", 10),
        _row(8, "assistant", 10),
    ]
    turns = split_turns(rows)
    assert [[r.seq for r in t] for t in turns] == [[1, 2, 3], [4, 5, 6], [7, 8]]

    older, recent = recent_turns_within(turns, budget=100)

    assert [[r.seq for r in t] for t in older] == [[1, 2, 3]]
    assert [[r.seq for r in t] for t in recent] == [[4, 5, 6], [7, 8]]


def test_the_last_turn_is_kept_even_over_budget():
    turns = split_turns([_row(1, "user", 10), _row(2, "user", 5000)])
    older, recent = recent_turns_within(turns, budget=100)
    assert [[r.seq for r in t] for t in recent] == [[2]]
    assert len(older) == 1


@pytest.mark.parametrize("budget", [10**6])
def test_everything_fits_a_large_budget(budget):
    turns = split_turns([_row(1, "user", 10), _row(2, "assistant", 10)])
    older, recent = recent_turns_within(turns, budget=budget)
    assert older == [] and len(recent) == 1


@pytest.mark.django_db
def test_history_rows_read_back_what_the_loop_uses_of_each_message(en_ad):
    from conversations.models import Conversation, Run
    from conversations.record.messages import HISTORY_FIELDS, history_rows, row_to_message

    conversation = Conversation.objects.create(ad=en_ad)
    run = Run.objects.create(conversation=conversation, input_text="brief")
    calls = [{"id": "c1", "name": "search_voices", "arguments": {"language": "en"}}]
    stored = [
        MessageRow.objects.create(conversation=conversation, seq=1, role="user", text="brief"),
        MessageRow.objects.create(
            conversation=conversation,
            run=run,
            seq=2,
            role="assistant",
            tool_calls=calls,
            provider_data={"reasoning_content": "think"},
            tokens=12,
        ),
        MessageRow.objects.create(
            conversation=conversation,
            run=run,
            seq=3,
            role="tool",
            text='{"voices": []}',
            tool_call_id="c1",
            name="search_voices",
            is_error=True,
        ),
    ]

    rows = history_rows(conversation_id=conversation.pk, after_seq=1)

    assert [row.seq for row in rows] == [2, 3]
    for row, instance in zip(rows, stored[1:], strict=True):
        assert {f: getattr(row, f) for f in HISTORY_FIELDS} == {
            f: getattr(instance, f) for f in HISTORY_FIELDS
        }
        assert row_to_message(row) == row_to_message(instance)
    assert rows[0].tool_calls == calls and rows[0].run_id == run.pk
