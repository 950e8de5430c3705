"""render.escape.bar_names: Gantt bar names, each the shortest path suffix no other path ends with."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ci_policy.render.escape import bar_names, mermaid_safe

SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/…")


def test_bar_names():
    assert bar_names(["a/test_server.py", "b/test_server.py", "tests/test_kl.py"]) == {
        "a/test_server.py": "a/test_server.py", "b/test_server.py": "b/test_server.py",
        "tests/test_kl.py": "test_kl.py"}
    # A path that is the end of another keeps its whole self; the other takes one more component.
    assert bar_names(["x.py", "a/x.py", "b/a/x.py"]) == {"x.py": "x.py", "a/x.py": "a/x.py", "b/a/x.py": "b/a/x.py"}
    assert bar_names(["t/a/s/x.py", "t/b/s/x.py", "t/y.py"]) == {
        "t/a/s/x.py": "a/s/x.py", "t/b/s/x.py": "b/s/x.py", "t/y.py": "y.py"}
    # Equal once made safe: told apart by a number. Cut to `longest` characters from the end.
    assert bar_names(["a b.py", "a:b.py", "a_b.py"]) == {"a b.py": "a_b.py", "a:b.py": "a_b.py_2",
                                                          "a_b.py": "a_b.py_3"}
    assert bar_names(["d/" + "x" * 100 + ".py"], longest=20) == {"d/" + "x" * 100 + ".py": "…" + "x" * 16 + ".py"}
    assert bar_names([]) == {}


COMPONENT = st.sampled_from(["a", "b", "tests", "test_server.py", "x y", "e2e", "a:b", "", "é"])
PATHS = st.lists(st.lists(COMPONENT, min_size=1, max_size=5).map("/".join), max_size=40)


@given(PATHS)
def test_bar_names_are_unique_safe_and_the_shortest_distinguishing_suffix(paths):
    names = bar_names(paths)
    assert set(names) == set(paths)
    assert len(set(names.values())) == len(names)
    assert all(set(n) <= SAFE or any(not c.isascii() and c.isalnum() for c in n) for n in names.values())
    safe = {p: mermaid_safe(p) for p in names}
    for p, name in names.items():
        if list(safe.values()).count(safe[p]) > 1 or name.endswith(tuple(f"_{i}" for i in range(2, 50))):
            continue  # told apart by a number: not a suffix rule case
        comps = safe[p].split("/")
        k = len(name.split("/"))
        assert name == ("/".join(comps[-k:]) or "file")
        others = [safe[q].split("/") for q in names if q != p]
        # No other path ends with these k components; with one fewer, another does (or there is no fewer).
        assert k == len(comps) or all(o[-k:] != comps[-k:] for o in others)
        assert k == 1 or any(o[-(k - 1):] == comps[-(k - 1):] for o in others)
