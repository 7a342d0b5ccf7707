"""A run's events as the web reads them while they commit: each web process's wake-ups
when a run's events commit, or someone's access shrinks (``wakeups``); a page of events
waited for, and a run waited for to its end (``waits``); the reads shared by the streams
a coroutine serves (``reads``); a stream's reader checked again after an access change
(``access``); and the one loop of every stream and long poll (``follow``)."""
