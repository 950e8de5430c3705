"""A throwaway PostgreSQL server for the metric-history store tests.

- In: the server binaries, found in `$CI_POLICY_PG_BINDIR` (exported by scripts/test.sh),
  else `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin, else `initdb` on PATH.
- Out: `PostgresServer`: `initdb` into a fresh `tempfile.mkdtemp()` directory, a server on
  127.0.0.1 (a free port) and on a unix socket inside that directory, trust authentication;
  `start()` waits (bounded) until it accepts connections; `stop()` shuts it down cleanly,
  `kill()` SIGKILLs the whole server (postmaster and backends) as a crash would (commits
  are synchronous, so a restart after a kill finds every committed row: fsync is off,
  which only matters if the machine itself goes down);
  `cleanup()` stops whatever runs and removes the directory.
- Root: `initdb` and `postgres` refuse to run as root, so under euid 0 both run as an
  unprivileged account (`nobody`, else `postgres`) through subprocess's `user=`/`group=`,
  with the directory chowned to it and created under a world-traversable parent.
- Missing binaries raise `PostgresBinariesMissing`, whose message says to run scripts/test.sh.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

BINDIR_ENV = "CI_POLICY_PG_BINDIR"
UNPRIVILEGED_ACCOUNTS = ("nobody", "postgres")
SUPERUSER = "postgres"


class PostgresBinariesMissing(RuntimeError):
    """No PostgreSQL server binaries (initdb, postgres) on this machine."""


class PostgresStartError(RuntimeError):
    """The server did not come up."""


def _has_server(bindir: Path) -> bool:
    return all(os.access(bindir / name, os.X_OK) for name in ("initdb", "postgres"))


def _version_key(path: Path) -> tuple:
    return tuple(int(p) if p.isdigit() else -1 for p in re.split(r"[.]", path.parent.name))


def find_bindir() -> Path:
    """The directory holding initdb and postgres; `PostgresBinariesMissing` if there is none."""
    hint = ("run `bash scripts/test.sh`, which installs the PostgreSQL server (apt-get install postgresql), "
            f"or set ${BINDIR_ENV} to the directory holding initdb and postgres")
    given = os.environ.get(BINDIR_ENV)
    if given:
        if _has_server(Path(given)):
            return Path(given)
        raise PostgresBinariesMissing(f"${BINDIR_ENV}={given} holds no initdb and postgres: {hint}")
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=30)
            candidate = Path(out.stdout.strip())
            if out.returncode == 0 and out.stdout.strip() and _has_server(candidate):
                return candidate
        except (OSError, subprocess.SubprocessError):
            pass
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True):
        if _has_server(candidate):
            return candidate
    initdb = shutil.which("initdb")
    if initdb and _has_server(Path(initdb).parent):
        return Path(initdb).parent
    raise PostgresBinariesMissing(f"PostgreSQL server binaries (initdb, postgres) were not found: {hint}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _signal_group(leader: int, sig: int) -> None:
    try:
        os.killpg(leader, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def _children(parent: int) -> list[int]:
    """The processes whose parent is `parent` (none where there is no /proc)."""
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else ():
        if entry.name.isdigit():
            fields = _proc_stat(int(entry.name))
            if fields is not None and fields[1] == str(parent):
                found.append(int(entry.name))
    return sorted(found)


def _group_alive(leader: int) -> bool:
    """Whether the process group still has a process that is not a zombie."""
    try:
        os.killpg(leader, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    fields = _proc_stat(leader)
    # A zombie leader counts as gone (its sockets are closed): a backend forks nothing that outlives it.
    return fields is None or fields[0] not in ("Z", "X")


try:  # resolved here: the server's process may not be allowed to read Python's library
    import ctypes

    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (ImportError, OSError, AttributeError):
    _prctl = None
_PR_SET_PDEATHSIG = 1
_SIGINT = int(signal.SIGINT)


def _stop_with_parent() -> None:
    """In the server's process (after the switch of user): a fast shutdown when the test
    process dies without cleaning up (Linux; elsewhere nothing)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, _SIGINT, 0, 0, 0)


def _world_traversable(path: Path) -> bool:
    return all(os.stat(p).st_mode & stat.S_IXOTH for p in (path, *path.parents))


class PostgresServer:
    """One throwaway server; use as a context manager or call `cleanup()`."""

    def __init__(self, bindir: Path | None = None, *, startup_timeout: float = 60.0) -> None:
        self.bindir = Path(bindir) if bindir is not None else find_bindir()
        self.startup_timeout = startup_timeout
        self._account: pwd.struct_passwd | None = None
        parent = None
        if os.geteuid() == 0:
            self._account = self._unprivileged_account()
            parent = tempfile.gettempdir()
            if not _world_traversable(Path(parent)):
                parent = "/tmp"
                if not _world_traversable(Path(parent)):
                    raise PostgresStartError("no world-traversable temporary directory for the server "
                                             f"running as {self._account.pw_name}")
        self.base = Path(tempfile.mkdtemp(prefix="ci-policy-pg-", dir=parent))
        if self._account is not None:
            os.chown(self.base, self._account.pw_uid, self._account.pw_gid)
        self.datadir = self.base / "data"
        self.socket_dir = self.base
        self.log_path = self.base / "server.log"
        self.port: int | None = None
        self._proc: subprocess.Popen | None = None
        self._initialized = False

    @staticmethod
    def _unprivileged_account() -> pwd.struct_passwd:
        for name in UNPRIVILEGED_ACCOUNTS:
            try:
                account = pwd.getpwnam(name)
            except KeyError:
                continue
            if account.pw_uid != 0:
                return account
        raise PostgresStartError("running as root, and none of the accounts "
                                 f"{', '.join(UNPRIVILEGED_ACCOUNTS)} exists to run PostgreSQL as")

    # -- processes --------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C", LANG="C", TZ="UTC")
        if self._account is not None:
            env.update(HOME=str(self.base), USER=self._account.pw_name, LOGNAME=self._account.pw_name)
        return env

    def _as_server_user(self) -> dict:
        if self._account is None:
            return {}
        return {"user": self._account.pw_uid, "group": self._account.pw_gid, "extra_groups": []}

    def initdb(self) -> None:
        proc = subprocess.run(
            [str(self.bindir / "initdb"), "-D", str(self.datadir), "-U", SUPERUSER, "--auth=trust",
             "--encoding=UTF8", "--locale=C", "--no-sync"],
            cwd=self.base, env=self._env(), capture_output=True, text=True, timeout=180, **self._as_server_user())
        if proc.returncode != 0:
            raise PostgresStartError(f"initdb failed (exit {proc.returncode}): {proc.stdout}{proc.stderr}")
        self._initialized = True

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The postmaster's process id (None before the first start)."""
        return None if self._proc is None else self._proc.pid

    def start(self) -> PostgresServer:
        if self.running:
            return self
        if not self._initialized:
            self.initdb()
        fixed_port = self.port is not None
        last = ""
        for _ in range(1 if fixed_port else 3):
            if not fixed_port:
                self.port = free_port()
            self._spawn()
            ready, last = self._wait_ready()
            if ready:
                return self
            self.kill()
            if "could not bind" not in last and "could not create" not in last:
                break
        raise PostgresStartError(f"PostgreSQL did not start on port {self.port}: {last}")

    def _spawn(self) -> None:
        assert self.port is not None
        args = [str(self.bindir / "postgres"), "-D", str(self.datadir), "-p", str(self.port),
                "-c", "listen_addresses=127.0.0.1",
                "-c", f"unix_socket_directories={self.socket_dir}",
                "-c", "fsync=off", "-c", "full_page_writes=off",
                "-c", "dynamic_shared_memory_type=mmap", "-c", "shared_buffers=16MB",
                "-c", "max_connections=60", "-c", "logging_collector=off"]
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(args, cwd=self.base, env=self._env(), stdin=subprocess.DEVNULL,
                                          stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                          preexec_fn=_stop_with_parent, **self._as_server_user())

    def _wait_ready(self) -> tuple[bool, str]:
        deadline = time.monotonic() + self.startup_timeout
        isready = self.bindir / "pg_isready"
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                return False, f"the server exited with {self._proc.returncode}: {self.log_tail()}"
            if self._accepts(isready):
                return True, ""
            time.sleep(0.1)
        return False, f"not ready after {self.startup_timeout:g} s: {self.log_tail()}"

    def _accepts(self, isready: Path) -> bool:
        if os.access(isready, os.X_OK):
            proc = subprocess.run([str(isready), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", SUPERUSER,
                                   "-d", "postgres", "-t", "2"], env=self._env(), capture_output=True, timeout=30)
            return proc.returncode == 0
        import psycopg  # pg_isready is absent: try a real connection

        try:
            psycopg.connect(self.url(), connect_timeout=2).close()
            return True
        except psycopg.Error:
            return False

    def log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no server log)"
        return " | ".join(text.strip().splitlines()[-lines:])

    def stop(self, timeout: float = 30.0) -> None:
        """A clean (fast) shutdown; a server that does not stop in time is killed."""
        if not self.running:
            return
        assert self._proc is not None
        self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL the postmaster and every backend at once, as a crash would; return once all are gone.

        Each backend leads a process group of its own (PostgreSQL's children call setsid()), so
        the postmaster's group alone is not the server: a backend outside it runs on until it
        notices that the postmaster is gone, and a query sent at once could still be answered.
        The postmaster is stopped first, so that it forks no more, and its children, listed
        from /proc, are killed with it.
        """
        if self._proc is None:
            return
        leaders = [self._proc.pid]
        if self._proc.poll() is None:
            _signal_group(self._proc.pid, signal.SIGSTOP)
            leaders += _children(self._proc.pid)
            for leader in leaders:
                _signal_group(leader, signal.SIGKILL)
            self._proc.wait(30)
        else:  # died on its own: what is left of its group (its backends exit once they notice)
            _signal_group(self._proc.pid, signal.SIGKILL)
        # Killed processes may still be exiting with their client sockets open: wait until each
        # group is gone (a zombie has closed its sockets), so "killed" really means it.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_group_alive(leader) for leader in leaders):
            time.sleep(0.02)
        self._remove_shared_memory()

    def _remove_shared_memory(self) -> None:
        """A killed postmaster leaves its small System V segment behind: remove it."""
        try:
            fields = (self.datadir / "postmaster.pid").read_text().splitlines()
        except OSError:
            return
        ipcrm = shutil.which("ipcrm")
        if len(fields) >= 7 and ipcrm:
            parts = fields[6].split()
            if len(parts) == 2 and parts[1].isdigit():
                subprocess.run([ipcrm, "-m", parts[1]], capture_output=True, timeout=30)

    def cleanup(self) -> None:
        try:
            self.stop(timeout=15)
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- addresses --------------------------------------------------------------------------------

    def url(self, dbname: str = "postgres", *, user: str = SUPERUSER, password: str | None = None) -> str:
        """A TCP URL (trust authentication ignores any password given)."""
        auth = user if password is None else f"{user}:{password}"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{dbname}"

    def socket_url(self, dbname: str = "postgres", *, user: str = SUPERUSER) -> str:
        """A URL through the unix socket inside the server's directory."""
        return f"postgresql://{user}@/{dbname}?host={self.socket_dir}&port={self.port}"

    def create_database(self, name: str) -> str:
        """CREATE DATABASE `name` (a plain identifier); its TCP URL."""
        import psycopg
        from psycopg import sql

        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise ValueError(f"database name {name!r} is not a plain identifier")
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def drop_database(self, name: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
