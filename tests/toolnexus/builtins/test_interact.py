"""The question (suspension) and todowrite tools, through `toolnexus.execute`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolnexus
from toolnexus import Answer, ToolContext, Toolkit
from toolnexus.builtins._interact import render_prompt, render_todos


@pytest.fixture
def tk(tmp_path: Path) -> Toolkit:
    return toolnexus.build(root=tmp_path, builtins={"tools": {}})


QUESTIONS: list[dict[str, Any]] = [
    {"question": "Which colour?", "header": "Colour", "options": ["red", "blue"]},
    {"question": "Anything else?"},
]


def test_render_prompt() -> None:
    assert render_prompt(QUESTIONS) == "Which colour? (options: red, blue)\nAnything else?"
    assert render_prompt([{"question": "Ok?", "options": []}]) == "Ok?"


def test_question_suspends_with_a_request(tk: Toolkit) -> None:
    result = toolnexus.execute(tk, "question", {"questions": QUESTIONS})
    assert result.is_error is False
    request = result.pending
    assert request is not None
    assert request["kind"] == "question"
    assert request["prompt"] == "Which colour? (options: red, blue)\nAnything else?"
    assert request["data"] == {"questions": QUESTIONS}
    assert len(request["id"]) == 32
    assert "Waiting for the human" in result.output
    assert request["prompt"] in result.output
    again = toolnexus.execute(tk, "question", {"questions": QUESTIONS})
    assert again.pending is not None and again.pending["id"] != request["id"]


def test_question_uses_the_call_id(tk: Toolkit) -> None:
    result = toolnexus.execute(
        tk, "question", {"questions": QUESTIONS}, ToolContext(call_id="call-7")
    )
    assert result.pending is not None and result.pending["id"] == "call-7"


def test_question_with_an_answer_returns_its_data_as_json(tk: Toolkit) -> None:
    first = toolnexus.execute(tk, "question", {"questions": QUESTIONS})
    assert first.pending is not None
    answer: Answer = {"id": first.pending["id"], "ok": True, "data": {"answers": ["red", "é"]}}
    result = toolnexus.execute(tk, "question", {"questions": QUESTIONS}, ToolContext(answer=answer))
    assert result.is_error is False
    assert result.pending is None
    assert json.loads(result.output) == {"answers": ["red", "é"]}


def test_question_refused_answer_is_an_error(tk: Toolkit) -> None:
    answer: Answer = {"id": "x", "ok": False}
    result = toolnexus.execute(tk, "question", {"questions": QUESTIONS}, ToolContext(answer=answer))
    assert result.is_error is True
    assert result.pending is None
    assert "did not answer" in result.output


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"questions": "Which colour?"}, "`questions` must be an array"),
        ({"questions": [{"question": "Q", "options": [1, 2]}]}, "`questions[0].options[0]`"),
        ({"questions": [{"header": "no text"}]}, "`questions[0].question`"),
        ({"questions": []}, "`questions` needs at least one"),
        ({"questions": [{"question": "  "}]}, "`questions[0].question` is empty"),
        ({"questions": [{"question": "Q", "multiple": "yes"}]}, "`questions[0].multiple`"),
        ({}, "`questions`"),
    ],
)
def test_question_rejects_malformed_arguments(tk: Toolkit, args: object, field: str) -> None:
    result = toolnexus.execute(tk, "question", args)
    assert result.is_error is True
    assert field in result.output
    assert "Traceback" not in result.output
    assert result.pending is None


TODOS = [
    {"id": "1", "text": "Write the tests", "completed": True},
    {"id": "2", "text": "Make them pass", "completed": False},
]


def test_render_todos() -> None:
    assert render_todos(TODOS) == (
        "1 of 2 todos completed\n[x] Write the tests\n[ ] Make them pass"
    )


def test_todowrite_replaces_and_renders_the_list(tk: Toolkit) -> None:
    result = toolnexus.execute(tk, "todowrite", {"todos": TODOS})
    assert result.is_error is False
    assert result.output == "1 of 2 todos completed\n[x] Write the tests\n[ ] Make them pass"
    assert result.metadata == {"todos": TODOS}
    second = toolnexus.execute(tk, "todowrite", {"todos": TODOS[1:]})
    assert second.output == "0 of 1 todos completed\n[ ] Make them pass"  # stateless
    cleared = toolnexus.execute(tk, "todowrite", {"todos": []})
    assert cleared.is_error is False and "0 todos" in cleared.output


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"todos": "write tests"}, "`todos` must be an array"),
        ({"todos": [{"id": "1", "text": "t"}]}, "`todos[0].completed`"),
        ({"todos": [{"id": 1, "text": "t", "completed": False}]}, "`todos[0].id`"),
        ({"todos": [{"id": "1", "text": "t", "completed": "no"}]}, "`todos[0].completed`"),
        ({"todos": [{"id": "1", "text": " ", "completed": False}]}, "`todos[0].text` is empty"),
        ({"todos": [*TODOS, {"id": "1", "text": "t", "completed": False}]}, "`todos[2].id`"),
    ],
)
def test_todowrite_rejects_malformed_arguments(tk: Toolkit, args: object, field: str) -> None:
    result = toolnexus.execute(tk, "todowrite", args)
    assert result.is_error is True
    assert field in result.output
    assert "Traceback" not in result.output


def test_question_answer_for_another_request_is_an_error(tk: Toolkit) -> None:
    answer: Answer = {"id": "call-other", "ok": True, "data": {"answers": ["red"]}}
    context = ToolContext(call_id="call-7", answer=answer)
    result = toolnexus.execute(tk, "question", {"questions": QUESTIONS}, context)
    assert result.is_error is True
    assert "'call-other', not for this question's request 'call-7'" in result.output


def test_question_answer_that_is_not_a_mapping_is_an_error(tk: Toolkit) -> None:
    context = ToolContext(call_id="call-7", answer="yes")  # type: ignore[arg-type]
    result = toolnexus.execute(tk, "question", {"questions": QUESTIONS}, context)
    assert result.is_error is True
    assert "not a mapping with `id`, `ok` and `data` (got str)" in result.output
    assert "failed:" not in result.output
