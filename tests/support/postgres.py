"""A PostgreSQL server of a test's own: a throwaway cluster (``initdb``, or a copy of one
made before) on a free loopback port, which the test may crash (SIGKILL to every process
of the server, as a power cut or an OOM kill of the postmaster) or restart. The machine's
shared server is never touched."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

from tests.support.parallel import address_taken, free_port


def _bin_dir() -> Path:
    """The newest installed server's programs (Debian keeps them off PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"), key=_version)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb is None:
        raise RuntimeError("no PostgreSQL server programs (initdb, postgres) found")
    return Path(initdb).parent


def _version(path: str) -> tuple[int, ...]:
    return tuple(int(part) for part in path.split("/")[4].split(".") if part.isdigit())


class PostgresServer:
    """``start()`` it, ``url(name)`` to connect, ``crash()`` and ``restart()`` it,
    ``remove()`` it at the end. As root (CI), its programs run as the postgres user,
    since PostgreSQL refuses to run as root."""

    def __init__(self, *, copy_of: Path | None = None, also_listen_on: str = "") -> None:
        """A new cluster, or a copy of ``copy_of`` (the data directory of a stopped one);
        ``also_listen_on``: an address besides loopback (a network namespace's link)."""
        self.listen = ",".join(filter(None, ["127.0.0.1", also_listen_on]))
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="adstudio-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"
        self.process: subprocess.Popen | None = None
        self._port_known = False
        self._as_postgres = os.geteuid() == 0
        if self._as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")
        if copy_of is not None:
            self._run("cp", "-a", str(copy_of), str(self.data))
            return
        self._run(
            str(_bin_dir() / "initdb"),
            "--pgdata",
            str(self.data),
            "--username",
            "postgres",
            "--auth",
            "trust",
            "--encoding",
            "UTF8",
            "--no-sync",  # the cluster is thrown away: its creation need not be durable
        )

    def _command(self, *args: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *args] if self._as_postgres else list(args)

    def _run(self, *args: str) -> None:
        subprocess.run(self._command(*args), check=True, capture_output=True, timeout=120)

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 60.0) -> None:
        """Start the server (after a crash, its recovery replays the log first). Until a
        start has succeeded, a port that another process took since it was chosen is
        traded for a new one; after that, clients know it."""
        for _ in range(5):
            if self._started(timeout):
                self._port_known = True
                return
            if self._port_known or not address_taken(self.log.read_text()):
                break
            self.port = free_port()
        raise RuntimeError(f"postgres exited early:\n{self.log.read_text()}")

    def _started(self, timeout: float) -> bool:
        if self.listen != "127.0.0.1":  # clients on the other address's subnet are trusted too
            hba = self.data / "pg_hba.conf"
            if "\nhost all all samenet trust\n" not in hba.read_text():
                with hba.open("a") as rules:
                    rules.write("host all all samenet trust\n")
        command = self._command(
            str(_bin_dir() / "postgres"),
            "-D",
            str(self.data),
            "-p",
            str(self.port),
            "-c",
            f"listen_addresses={self.listen}",
            "-c",
            f"unix_socket_directories={self.dir}",
            "-c",
            "max_connections=100",
            "-c",
            "fsync=on",  # a crash test means nothing without it
        )
        with self.log.open("a") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with psycopg.connect(self.url(), connect_timeout=2) as connection:
                    (directory,) = connection.execute("SHOW data_directory").fetchone()
                if directory == str(self.data):
                    return True  # ours, not another server on the same port
            except psycopg.OperationalError:
                pass
            if self.process.poll() is not None:
                return False
            time.sleep(0.02)
        raise RuntimeError(f"postgres not answering after {timeout} s:\n{self.log.read_text()}")

    def crash(self) -> None:
        """SIGKILL the postmaster and every backend at once: what the log had not flushed
        to disk is lost, and the next start recovers from the log."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
            self._wait_for_backends_gone()

    def stop(self) -> None:
        """A fast shutdown: clients are disconnected, the server stops cleanly."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.crash()
            self._wait_for_backends_gone()

    def restart(self) -> None:
        self.stop()
        self.start()

    def remove(self) -> None:
        """Gone, with its data: killed, since nothing it holds needs a clean shutdown."""
        self.crash()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _wait_for_backends_gone(self, timeout: float = 10.0) -> None:
        """Backends outlive their postmaster for a moment, and a new postmaster refuses
        to start while they hold the old shared memory: wait until no process of the
        server's process group is left."""
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(self.process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        raise RuntimeError(f"processes of the server in {self.data} are still running")


def user_token(url: str) -> str:
    """A new user's API token in the database at ``url`` (a private server's, which the
    test's own ORM connection does not reach)."""
    import secrets
    import uuid

    from accounts.models import PREFIX_LENGTH, TOKEN_MARK
    from accounts.services import token_digest

    token = TOKEN_MARK + secrets.token_urlsafe(30)
    with psycopg.connect(url) as connection:
        (user_id,) = connection.execute(
            "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, "
            "email, is_staff, is_active, date_joined) "
            "VALUES ('!', false, %s, '', '', '', false, true, now()) RETURNING id",
            [uuid.uuid4().hex],
        ).fetchone()
        connection.execute(
            "INSERT INTO accounts_apitoken (id, user_id, name, prefix, digest, created_at, "
            "expires_at) VALUES (%s, %s, '', %s, %s, now(), now() + interval '1 day')",
            [uuid.uuid4(), user_id, token[:PREFIX_LENGTH], token_digest(token)],
        )
    return token
