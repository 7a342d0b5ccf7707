"""A program for the fork server's test (``python -m tests.support.forked_program``): it
prints what it was given (its arguments, folder, environment, session) and exits with
the code its first argument names, or sleeps until it is signalled (``sleep``); ``socket
N`` also says the port of the socket it has as descriptor N."""

import json
import os
import socket
import sys
import time

if __name__ == "__main__":
    print(
        json.dumps(
            {
                "argv": sys.argv[1:],
                "cwd": os.getcwd(),
                "greeting": os.environ.get("FORKED_GREETING"),
                "session": os.getsid(0),
                "pid": os.getpid(),
                "main": __name__,
                "port": (
                    socket.socket(fileno=int(sys.argv[2])).getsockname()[1]
                    if sys.argv[1] == "socket"
                    else None
                ),
            }
        ),
        flush=True,
    )
    if sys.argv[1] == "sleep":
        time.sleep(600)
    sys.exit(0 if sys.argv[1] == "socket" else int(sys.argv[1]))
