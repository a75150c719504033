"""``/compact`` in ``toolnexus-agent chat``."""

from __future__ import annotations

from agent.testing import FakeGemini
from tests.cli.conftest import Cli


def test_slash_compact_summarises_the_older_turns(cli: Cli) -> None:
    answers = [f"answer {i}" for i in range(5)]
    fake = FakeGemini([*answers, "Notes: five questions asked.", "last answer"])
    lines = "".join(f"question {i}\n" for i in range(5)) + "/compact\nand now?\n"
    with fake.serve() as server:
        code, _, err = cli("chat", "--no-builtins", server=server, stdin="/compact\n" + lines)
    assert code == 0, err
    assert "(nothing to compact yet)" in err
    assert "(compacted: the older turns summarised, 8 messages kept)" in err
    last = fake.requests[-1].contents
    assert last[0]["parts"][0]["text"].endswith("Notes: five questions asked.")
    assert last[0]["parts"][1]["text"] == "question 1"
    assert "question 0" not in str(last)
    fake.assert_consumed()
