"""Colour only on a terminal, never with ``NO_COLOR`` or ``TERM=dumb``; each line painted alone."""

from __future__ import annotations

import io

import pytest

from agent.cli._style import Style, wants_colour


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "environ", "expected"),
    [
        (_Terminal(), {"TERM": "xterm"}, True),
        (_Terminal(), {}, True),
        (_Terminal(), {"NO_COLOR": ""}, True),  # set but empty: the convention ignores it
        (_Terminal(), {"NO_COLOR": "1"}, False),
        (_Terminal(), {"TERM": "dumb"}, False),
        (io.StringIO(), {"TERM": "xterm"}, False),  # a pipe, a file, a test's capture
    ],
)
def test_colour_is_for_terminals_that_want_it(
    stream: io.StringIO, environ: dict[str, str], expected: bool
) -> None:
    assert wants_colour(stream, environ) is expected


def test_the_environment_is_read_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setenv("NO_COLOR", "yes")
    assert Style.for_stream(_Terminal()) == Style(colour=False)
    monkeypatch.delenv("NO_COLOR")
    assert Style.for_stream(_Terminal()) == Style(colour=True)


def test_paint_wraps_each_line_and_nothing_when_colour_is_off() -> None:
    assert Style(colour=True).paint("a\n\nb", "call") == "\033[36ma\033[0m\n\n\033[36mb\033[0m"
    assert Style(colour=True).paint("", "error") == ""
    assert Style().paint("a\nb", "call") == "a\nb"
