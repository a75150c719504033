"""The one event printer of ``run``, ``chat`` and ``demo``: each event kind's exact line."""

from __future__ import annotations

import io

from agent.cli._printer import EventPrinter
from agent.cli._style import Style
from agent.events import (
    RetryEvent,
    SubAgentEvent,
    TextEvent,
    ThoughtEvent,
    ToolCall,
    ToolCallEvent,
    ToolResultEvent,
)
from toolnexus import ToolResult


def test_each_event_kind_has_its_line() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = EventPrinter(out, err)
    read = ToolCall("read", {"path": "a.txt"}, "c1", turn=1)
    ask = ToolCall("question", {"questions": ["Why?"]}, "c2", turn=1)
    waiting = ToolResult("", metadata={"pending": {"id": "r1", "kind": "question"}})
    for event in (
        ThoughtEvent("Read the   file\nfirst.", turn=1),
        ThoughtEvent(" Then answer.", turn=1),
        ToolCallEvent(read),
        ToolResultEvent(read, ToolResult("line 1\nline 2\nline 3")),
        ToolResultEvent(read, ToolResult("Error: no such file", is_error=True)),
        ToolResultEvent(ask, waiting),
        RetryEvent(attempt=1, delay=1.25, code=503, status="UNAVAILABLE", turn=2),
        TextEvent("The file ", turn=2),
        TextEvent("is short.", turn=2),
    ):
        printer.show(event)
    printer.close()
    assert out.getvalue() == "The file is short.\n"
    assert err.getvalue() == (
        "(thinking) Read the file first. Then answer.\n"
        '-> read {"path": "a.txt"}\n'
        "<- read: line 1 (+2 lines)\n"
        "<- read (error): Error: no such file\n"
        "<- question: (waiting for an answer)\n"
        "(model call failed: UNAVAILABLE; retrying after 1.2 s)\n"
    )


def test_a_transcript_on_one_stream_shows_turns_and_ends_text_lines() -> None:
    out = io.StringIO()
    printer = EventPrinter(out, out, turns=True)
    call = ToolCall("bash", {"command": "x" * 200}, None, turn=1)
    for event in (
        TextEvent("Let me check.", turn=1),
        ToolCallEvent(call),
        ToolResultEvent(call, ToolResult("")),
        TextEvent("Done.", turn=2),
    ):
        printer.show(event)
    printer.close()
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["", "--- turn 1 ---", "Let me check."]
    assert lines[3].startswith('-> bash {"command": "xxx') and lines[3].endswith("...")
    assert len(lines[3]) == len("-> bash ") + 100
    assert lines[4:] == ["<- bash: (empty)", "", "--- turn 2 ---", "Done."]


def test_a_coloured_printer_paints_each_kind_of_line_and_leaves_the_answer_alone() -> None:
    out = io.StringIO()
    printer = EventPrinter(out, out, turns=True, style=Style(colour=True))
    read = ToolCall("read", {"path": "a.txt"}, "c1", turn=1)
    for event in (
        ThoughtEvent("Read it.", turn=1),
        ToolCallEvent(read),
        ToolResultEvent(read, ToolResult("Error: no such file", is_error=True)),
        SubAgentEvent(agent="helper", depth=1, event=ToolCallEvent(read)),
        RetryEvent(attempt=1, delay=0.5, code=503, status="UNAVAILABLE", turn=2),
        TextEvent("Done.", turn=2),
    ):
        printer.show(event)
    printer.close()
    assert out.getvalue() == (
        "\n\033[2m--- turn 1 ---\033[0m\n"
        "\033[2;3m(thinking) Read it.\033[0m\n"
        '\033[36m-> read {"path": "a.txt"}\033[0m\n'
        "\033[31m<- read (error): Error: no such file\033[0m\n"
        '  \033[35m[helper]\033[0m \033[36m-> read {"path": "a.txt"}\033[0m\n'
        "\033[33m(model call failed: UNAVAILABLE; retrying after 0.5 s)\033[0m\n"
        "\n\033[2m--- turn 2 ---\033[0m\n"
        "Done.\n"
    )


def test_a_key_the_model_quotes_is_never_shown_even_split_over_pieces(monkeypatch) -> None:
    secret = "AIzaQUOTED-key-0123456789"
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    out, err = io.StringIO(), io.StringIO()
    printer = EventPrinter(out, err)
    call = ToolCall("echo", {"text": secret}, "c1", turn=1)
    for event in (
        ThoughtEvent(f"The key is {secret[:6]}", turn=1),
        ThoughtEvent(f"{secret[6:]}.", turn=1),
        ToolCallEvent(call),
        ToolResultEvent(call, ToolResult(f"said {secret}")),
        TextEvent("Your key: AIza", turn=2),
        TextEvent("QUOTED-key-01", turn=2),
        TextEvent("23456789 and AIza", turn=2),  # ends in what could start the key again
    ):
        printer.show(event)
    printer.close()
    assert out.getvalue() == "Your key: *** and AIza\n"
    assert err.getvalue() == (
        '(thinking) The key is ***.\n-> echo {"text": "***"}\n<- echo: said ***\n'
    )
