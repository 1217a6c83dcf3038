"""A PostgreSQL of the tests' own (issue 16): a new cluster (initdb) in a temp dir, listening only
on a Unix socket there, run as the `postgres` user when the tests run as root (PostgreSQL refuses
root), stopped and removed at exit. The Python twin of src/store/testing/postgres_server.h.

    pg = pg_harness.shared()
    url = pg.database("mytest")       # postgresql://postgres@/mytest?host=/tmp/...&port=5432
    subprocess.run([paddock, "server", "--store", url, ...])
"""
import atexit
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time


def _bindir():
    found = sorted(d for d in glob.glob("/usr/lib/postgresql/*/bin") if os.path.exists(os.path.join(d, "postgres")))
    if not found:
        raise RuntimeError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/postgres); run scripts/setup")
    return found[-1]


def _as_postgres():
    """preexec_fn for children that must not run as root; they die with their parent."""
    if os.geteuid() != 0:
        return None
    pw = pwd.getpwnam("postgres")

    def demote():
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)
    return demote


class Postgres:
    def __init__(self):
        self.bindir = _bindir()
        # Under /tmp whatever TMPDIR says: the postgres user must reach it, and the socket's path
        # must stay within a Unix socket's 107 bytes.
        self.dir = tempfile.mkdtemp(prefix="paddock-pg-", dir="/tmp")
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        with open(os.path.join(self.dir, "initdb.log"), "wb") as log:
            subprocess.run([os.path.join(self.bindir, "initdb"), "-D", os.path.join(self.dir, "data"), "-U", "postgres",
                            "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"],
                           stdout=log, stderr=log, preexec_fn=_as_postgres(), check=True)
        self.proc = None
        self.start()

    def start(self):
        log = open(os.path.join(self.dir, "postgres.log"), "ab")
        self.proc = subprocess.Popen(
            [os.path.join(self.bindir, "postgres"), "-D", os.path.join(self.dir, "data"), "-k", self.dir,
             "-c", "listen_addresses=", "-p", "5432", "-c", "max_connections=300"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, preexec_fn=_as_postgres())
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.psql("postgres", "SELECT 1", check=False).returncode == 0:
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited at start: {self.log_tail()}")
            time.sleep(0.05)  # pg_isready polls the same way; no event tells a socket is ready
        raise RuntimeError(f"postgres did not become ready: {self.log_tail()}")

    def log_tail(self, n=2000):
        try:
            with open(os.path.join(self.dir, "postgres.log"), "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def psql(self, database, sql, check=True):
        return subprocess.run([os.path.join(self.bindir, "psql"), "-h", self.dir, "-p", "5432", "-U", "postgres",
                               "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
                              capture_output=True, text=True, check=check, timeout=60)

    def database(self, name):
        """Creates database `name` ([a-z0-9_]) if needed; returns its URL for --store."""
        exists = self.psql("postgres", f"SELECT 1 FROM pg_database WHERE datname = '{name}'").stdout.strip()
        if not exists:
            self.psql("postgres", f"CREATE DATABASE {name}")
        return f"postgresql://postgres@/{name}?host={self.dir}&port=5432"

    def kill(self):
        """kill -9 of the postmaster; start() brings it back on the same data."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def restart(self):
        # Its backends leave when they see the postmaster gone; until then a new one refuses the
        # data dir, so starting is retried.
        deadline = time.monotonic() + 30
        while True:
            try:
                return self.start()
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # immediate shutdown
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


_SHARED = None


def shared():
    """One PostgreSQL for the whole test process, started on first use and stopped at exit."""
    global _SHARED
    if _SHARED is None:
        _SHARED = Postgres()
        atexit.register(_SHARED.stop)
    return _SHARED
