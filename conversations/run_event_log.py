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
        return (
            str(self.first_seq)
            if self.first_seq == self.last_seq
            else (f"{self.first_seq}\u2013{self.last_seq}")
        )


def run_event_rows(*, run_id: uuid.UUID) -> list[EventRow]:
    """The run's events in order, consecutive streamed text deltas as one row whose data
    is the whole text (``{"text", "deltas"}``)."""
    rows: list[EventRow] = []
    for event in RunEvent.objects.filter(run_id=run_id).order_by("seq"):
        delta = event.data.get("delta") if event.type == RunEventType.TEXT else None
        last = rows[-1] if rows else None
        if delta is not None and last is not None and last.deltas:
            last.last_seq = event.seq
            last.data["text"] += delta
            last.deltas += 1
            last.data["deltas"] = last.deltas
            continue
        if delta is not None:
            rows.append(
                EventRow(
                    event.seq,
                    event.seq,
                    event.type,
                    {"text": delta, "deltas": 1},
                    event.created_at,
                    deltas=1,
                )
            )
            continue
        rows.append(EventRow(event.seq, event.seq, event.type, event.data, event.created_at))
    return rows
