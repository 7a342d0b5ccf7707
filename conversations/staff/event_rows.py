"""A run's events as staff read them on its admin page: the text a reply streamed in many
small ``text`` events folded into the one text it made, every other event as it is."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from conversations.models import RunEvent, RunEventType


@dataclass
class EventRow:
    first_seq: int
    last_seq: int
    type: str
    data: dict[str, Any]
    created_at: datetime
    deltas: int = 0  # the text events folded into this row

    @property
    def data_json(self) -> str:
        return json.dumps(self.data, indent=2, ensure_ascii=False, sort_keys=True, default=str)

    @property
    def seqs(self) -> str:
        if self.first_seq == self.last_seq:
            return str(self.first_seq)
        return f"{self.first_seq}\u2013{self.last_seq}"


def run_event_rows(*, run_id: uuid.UUID) -> list[EventRow]:
    """The run's events in order, consecutive streamed text deltas as one row whose data
    is the whole text (``{"text"}``) and ``deltas`` how many events it was."""
    rows: list[EventRow] = []
    for event in RunEvent.objects.filter(run_id=run_id).order_by("seq"):
        delta = event.data.get("delta") if event.type == RunEventType.TEXT else None
        if delta is None:
            rows.append(EventRow(event.seq, event.seq, event.type, event.data, event.created_at))
        elif rows and rows[-1].deltas:  # the text goes on
            rows[-1].last_seq = event.seq
            rows[-1].data["text"] += delta
            rows[-1].deltas += 1
        else:
            rows.append(
                EventRow(event.seq, event.seq, event.type, {"text": delta}, event.created_at, 1)
            )
    return rows
