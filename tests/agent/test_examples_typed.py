"""The typed-output, image and grounding examples run offline (no key) end to end."""

from __future__ import annotations

from tests.agent.test_loop_example import run_example


def test_typed_output_example_runs_offline() -> None:
    out = run_example("typed_output.py")
    assert "[completed] mode=native" in out
    assert "Forecast(city='Paris', temp_c=21, advice='Sunglasses.')" in out


def test_search_grounding_example_runs_offline() -> None:
    out = run_example("search_grounding.py")
    assert "jazz festival" in out
    assert "searched: paris events today" in out
    assert "[1] example.org <https://example.org/paris-jazz>" in out


def test_image_question_example_runs_offline() -> None:
    out = run_example("image_question.py")
    assert "the photo matches the swatch" in out
    assert "[completed] 2 turns" in out
