"""What the run event trigger's notification costs a step that writes events.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.event_notify [--blocks 8] [--statements 500]

Writes three events of one run in one committed statement, as a loop step does, in
blocks with and without the trigger (``conversations_runevent_notify``), alternately so
both see the same minute. Prints microseconds per statement and commit, median of the
blocks. The trigger is enabled again at the end, whatever happens.
"""

from __future__ import annotations

import argparse
import statistics
import time

from benchmarks._bench_db import bench_database_url, create_database, setup_django

TRIGGER = "conversations_runevent_notify"
INSERT = (
    "INSERT INTO conversations_runevent (run_id, seq, type, data, created_at) VALUES "
    "(%s, %s, 'text', '{}', now()), (%s, %s, 'text', '{}', now()), "
    "(%s, %s, 'text', '{}', now())"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--statements", type=int, default=500)
    args = parser.parse_args()
    url = bench_database_url()
    create_database(url)
    setup_django(url)

    import psycopg
    from django.contrib.auth.models import User

    from conversations.models import Conversation, Run
    from drafts.services import ad_create

    owner, _ = User.objects.get_or_create(username="event-notify")
    ad = ad_create(owner=owner, title="notify", client="bench", language="en", duration_s=30)
    run = Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="x")
    seq = 0

    def block(conn) -> float:
        nonlocal seq
        started = time.perf_counter()
        for _ in range(args.statements):
            rows = [(run.pk, seq + i) for i in range(1, 4)]
            conn.execute(INSERT, [value for row in rows for value in row])
            seq += 3
        return (time.perf_counter() - started) / args.statements * 1e6

    timings: dict[str, list[float]] = {"with the trigger": [], "without": []}
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            for _ in range(args.blocks):
                timings["with the trigger"].append(block(conn))
                conn.execute(f"ALTER TABLE conversations_runevent DISABLE TRIGGER {TRIGGER}")
                try:
                    timings["without"].append(block(conn))
                finally:
                    conn.execute(f"ALTER TABLE conversations_runevent ENABLE TRIGGER {TRIGGER}")
        finally:
            ad.delete()  # its conversation, run and events with it
    print(f"event_notify: {args.blocks} blocks x {args.statements} statements, alternately")
    for name, values in timings.items():
        print(
            f"  {name:17} {statistics.median(values):6.1f} us per statement and commit "
            f"(blocks: {' / '.join(f'{v:.0f}' for v in values)})"
        )


if __name__ == "__main__":
    main()
