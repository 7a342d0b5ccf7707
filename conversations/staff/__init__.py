"""What staff use: the admin's conversations and runs (``admin``), a conversation read as a
transcript (``transcript``), a run's events folded for its admin page (``event_rows``),
and the terminal chat of ``manage.py chat`` (``terminal``)."""
