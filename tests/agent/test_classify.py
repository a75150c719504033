"""Pure classification of model responses (the finish-reason policy)."""

from __future__ import annotations

import pytest

from agent._classify import Kind, classify
from agent._response import Call, ModelResponse


def r(**kw: object) -> ModelResponse:
    return ModelResponse(content=None, **kw)  # type: ignore[arg-type]


CALL = [Call("read", {"path": "a"}, "1")]


@pytest.mark.parametrize(
    ("response", "kind", "reason"),
    [
        (r(text="hi", finish_reason="STOP"), Kind.FINAL, None),
        (r(text="hi", finish_reason=None), Kind.FINAL, None),
        (r(calls=CALL, finish_reason="STOP"), Kind.CALLS, None),
        (r(calls=CALL, text="let me look", finish_reason="STOP"), Kind.CALLS, None),
        (r(finish_reason="MALFORMED_FUNCTION_CALL"), Kind.MALFORMED, "MALFORMED_FUNCTION_CALL"),
        (
            r(calls=CALL, finish_reason="UNEXPECTED_TOOL_CALL"),
            Kind.MALFORMED,
            "UNEXPECTED_TOOL_CALL",
        ),
        (r(text="cut", finish_reason="MAX_TOKENS"), Kind.MAX_TOKENS, "MAX_TOKENS"),
        (r(calls=CALL, finish_reason="SAFETY"), Kind.BLOCKED, "SAFETY"),
        (r(finish_reason="RECITATION"), Kind.BLOCKED, "RECITATION"),
        (r(finish_reason="OTHER"), Kind.BLOCKED, "OTHER"),
        (r(finish_reason="SOME_NEW_REASON"), Kind.BLOCKED, "SOME_NEW_REASON"),
        (r(block_reason="SAFETY"), Kind.BLOCKED, "SAFETY"),
        (r(block_reason="OTHER", finish_reason="STOP", text="x"), Kind.BLOCKED, "OTHER"),
        (r(finish_reason="STOP"), Kind.EMPTY, None),
        (r(text="  \n", finish_reason="STOP"), Kind.EMPTY, None),
        (r(thoughts=["hmm"], finish_reason="STOP"), Kind.EMPTY, None),
        (r(), Kind.EMPTY, None),
    ],
)
def test_classify(response, kind, reason):
    classified = classify(response)
    assert (classified.kind, classified.reason) == (kind, reason)
