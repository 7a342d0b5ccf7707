"""A program for the fork server's test (``python -m tests.support.forked_program``): it
prints what it was given (its arguments, folder, environment, session) and exits with
the code its first argument names, or sleeps until it is signalled (``sleep``)."""

import json
import os
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
            }
        ),
        flush=True,
    )
    if sys.argv[1] == "sleep":
        time.sleep(600)
    sys.exit(int(sys.argv[1]))
