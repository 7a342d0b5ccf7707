"""The worker's lease on a run, a room per purpose: its task sent once the run is stored
(``enqueue``), claimed with a token (``claim``), finished exactly once over a whole
history (``finish``), the conversation's next run sent after it (``chain``), and the
recovery sweep (``recover``)."""
