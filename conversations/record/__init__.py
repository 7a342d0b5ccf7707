"""What a run writes and reads back: its messages as rows (``messages``) with their token
estimates (``tokens``), and a step's events, model calls and rows, written under the
worker's claim (``log``). Below the loop and the run's lifecycle, which both write
through it."""
