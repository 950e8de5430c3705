"""Multi-turn session server used during rollouts."""

from minirl.session.server import SessionServer

__all__ = ["SessionServer"]
