"""gunicorn's configuration in the tests: each worker dies with its master, which dies
with the test process (``testbed.lifetime``); gunicorn's gthread workers notice a dead
master themselves, uvicorn's do not."""

from testbed.lifetime import die_with_parent


def post_fork(server, worker) -> None:
    die_with_parent()
