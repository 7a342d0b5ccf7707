"""The stack at a chat message's draft INSERT is a straight line: down from the view
through the chat-send service, the enqueue, the task and the loop to the write, no module
on it entered again after it was left (``python -m benchmarks.call_path`` prints it). One
stack, at the INSERT: the calls that returned before it are not seen here."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.agent_loop import import_sample_catalogue_if_empty
from benchmarks.call_path import counts, walk

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(("path", "view"), [("rest", "web/api.py"), ("ui", "web/ui_chat_api.py")])
def test_a_chat_message_walks_down_to_its_draft_row(transactional_db, path, view):
    """Committed as in production: the run's task, executed in-process (no broker), runs
    when the chat's transaction commits."""
    import_sample_catalogue_if_empty()
    frames = walk(path)

    # each frame by its file's path in the project (an app's wings are folders of it)
    where = [
        f"{Path(frame.filename).resolve().relative_to(ROOT).as_posix()} {frame.name}"
        for frame in frames
    ]
    assert f"conversations/{view} post" in where
    assert (
        where.index("conversations/services.py chat_send")
        < where.index("conversations/tasks.py run_agent_task")
        < where.index("conversations/agent/steps.py _write_step")
    )
    assert counts(frames)["round_trips"] == 0, "\n".join(where)
