"""A node process answering one JSON line per request line: the test bridges' shared part
(tests/github_js.py, tests/mermaid_render.py).

- In: `start(stderr)`, which checks what the process needs (raising the bridge's own error
  when something is missing) and starts it with `stderr` as its standard error; the bridge's
  error for a process that ended (`missing`), its name in that error, and how long `close`
  waits for it.
- Out: `exchange(line)`: the process started on first use (again if it ended), `line` written,
  the answer line read, under a lock; `close()`: its stdin closed, the process waited for and
  killed when it will not end.
- Refused: a process that ends before answering: `missing("<name> ended (exit N): <stderr>")`.
"""

from __future__ import annotations

import subprocess
import tempfile
import threading
from collections.abc import Callable
from typing import IO


class NodeProcess:
    def __init__(self, start: Callable[[IO[str]], subprocess.Popen[str]], missing: type[Exception], name: str,
                 wait: float) -> None:
        self._start = start
        self._missing = missing
        self._name = name
        self._wait = wait
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()
        # A file, not a pipe: the process' stderr can never fill up and stall a request.
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")

    def exchange(self, line: str) -> str:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start(self._stderr)
            proc = self._proc
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(line + "\n")
                proc.stdin.flush()
                answer = proc.stdout.readline()
            except BrokenPipeError:  # the process ended before reading the request
                answer = ""
            if not answer:
                self._proc = None
                proc.wait()
                self._stderr.seek(0)
                raise self._missing(f"{self._name} ended (exit {proc.returncode}): {self._stderr.read().strip()}")
        return answer

    def close(self) -> None:
        if self._proc is not None:
            proc, self._proc = self._proc, None
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=self._wait)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
