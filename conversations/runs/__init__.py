"""A run's lifecycle on the worker's side, a room per purpose: its task sent once the run
is stored (``enqueue``), claimed with a token (``claim``) under the run's and the
conversation's row locks (``locks``), kept with heartbeats and a cancel listener
(``heartbeat``), finished exactly once over a whole history (``finish``), the
conversation's next run sent after it (``chain``), the recovery sweep (``recover``); the
worker's limit on runs computing at once (``step_gate``) and its start-up check that its
database pool can serve them (``worker_capacity``)."""
