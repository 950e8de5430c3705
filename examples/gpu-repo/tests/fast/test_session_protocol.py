"""Unit tests for the session server protocol (v1 vs v2 consistency)."""

import pytest

from minirl.session.server import SessionServer, render_message


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_prompt_rendering(version):
    server = SessionServer(version=version)
    assert server.version == version
    sid = server.open(system="be brief")
    server.append(sid, "user", "hi")
    server.append(sid, "assistant", "hello")
    assert server.prompt(sid) == (
        render_message("system", "be brief") + render_message("user", "hi") + render_message("assistant", "hello")
    )


def test_v1_and_v2_agree():
    servers = [SessionServer("v1"), SessionServer("v2")]
    turns = [("user", "2+2?"), ("assistant", "4"), ("tool", "ok"), ("assistant", "done")]
    prompts = []
    for server in servers:
        sid = server.open()
        for role, content in turns:
            server.append(sid, role, content)
        prompts.append((server.prompt(sid), server.assistant_text(sid)))
    assert prompts[0] == prompts[1]
    assert prompts[0][1] == "4\ndone"


def test_session_lifecycle_and_errors():
    server = SessionServer()
    assert server.version == "v2"
    a = server.open()
    b = server.open()
    assert a != b and server.open_sessions == 2
    server.close(a)
    assert server.open_sessions == 1
    with pytest.raises(KeyError):
        server.append(a, "user", "x")
    with pytest.raises(ValueError):
        server.append(b, "robot", "x")
    with pytest.raises(ValueError):
        SessionServer("v3")
