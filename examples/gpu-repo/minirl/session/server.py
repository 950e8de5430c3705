"""A toy multi-turn session server.

The server keeps per-session message histories and renders them into a
prompt string. Protocol ``v1`` re-renders the whole history each turn;
``v2`` appends incrementally to a cached prompt. Both must produce the
same prompt text ("token-in, token-out" consistency).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

PROTOCOL_VERSIONS = ("v1", "v2")

Message = Tuple[str, str]  # (role, content)


def render_message(role: str, content: str) -> str:
    return f"<|{role}|>{content}<|end|>"


class SessionServer:
    """In-memory session server speaking protocol ``v1`` or ``v2``."""

    def __init__(self, version: str = "v2") -> None:
        if version not in PROTOCOL_VERSIONS:
            raise ValueError(f"unsupported protocol version: {version!r}")
        self.version = version
        self._history: Dict[str, List[Message]] = {}
        self._cache: Dict[str, str] = {}
        self._next_id = 0

    def open(self, system: Optional[str] = None) -> str:
        session_id = f"s{self._next_id}"
        self._next_id += 1
        self._history[session_id] = []
        self._cache[session_id] = ""
        if system is not None:
            self.append(session_id, "system", system)
        return session_id

    def close(self, session_id: str) -> None:
        self._history.pop(session_id)
        self._cache.pop(session_id)

    def append(self, session_id: str, role: str, content: str) -> None:
        if session_id not in self._history:
            raise KeyError(f"unknown session: {session_id}")
        if role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"unknown role: {role!r}")
        self._history[session_id].append((role, content))
        if self.version == "v2":
            self._cache[session_id] += render_message(role, content)

    def history(self, session_id: str) -> List[Message]:
        return list(self._history[session_id])

    def prompt(self, session_id: str) -> str:
        if self.version == "v1":
            return "".join(render_message(r, c) for r, c in self._history[session_id])
        return self._cache[session_id]

    def assistant_text(self, session_id: str) -> str:
        """Concatenated assistant turns, separated by newlines."""
        return "\n".join(c for r, c in self._history[session_id] if r == "assistant")

    @property
    def open_sessions(self) -> int:
        return len(self._history)
