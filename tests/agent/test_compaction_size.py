"""Compaction's running transcript size: measured once per Content, equal to a full measure."""

from __future__ import annotations

import base64
import json
from typing import Any

from agent._compaction import TranscriptSize, estimate_tokens, prune
from agent._media import inline_data, media_tokens


def full_measure(contents: list[dict[str, Any]]) -> int:
    """The estimate as defined: the whole transcript's JSON at four characters a token,
    each inline file as the tokens Gemini bills for it instead of its base64."""
    if not contents:
        return 0
    blobs = [len(data) for data in inline_data(contents)]
    chars = len(json.dumps(contents, ensure_ascii=False)) - sum(blobs)
    return chars // 4 + 1 + sum(media_tokens(size * 3 // 4) for size in blobs)


def prompt(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def call(n: int) -> dict[str, Any]:
    return {"role": "model", "parts": [{"functionCall": {"id": f"c{n}", "name": "fetch"}}]}


def result(n: int, *, image: int = 0) -> dict[str, Any]:
    response: dict[str, Any] = {"id": f"c{n}", "name": "fetch", "response": {"output": "é" * 3000}}
    if image:
        data = base64.b64encode(b"\x89PNG" * image).decode()
        response["parts"] = [{"inlineData": {"mimeType": "image/png", "data": data}}]
    return {"role": "user", "parts": [{"functionResponse": response}]}


def answer(text: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"text": text, "thoughtSignature": "c2ln"}]}


def test_the_running_size_equals_a_full_measure_as_the_transcript_changes() -> None:
    size = TranscriptSize()
    transcript: list[dict[str, Any]] = []
    assert size.tokens(transcript) == full_measure(transcript) == 0
    for n in range(6):  # turns appended, one with an inline file of its own
        transcript += [prompt(f"turn {n} — ünïcödé"), call(n), result(n, image=n == 2 and 5000)]
        transcript.append(answer(f"done {n}"))
        assert size.tokens(transcript) == full_measure(transcript) == estimate_tokens(transcript)
    # Compaction prunes older results in place: new dicts where the old ones were.
    transcript, pruned = prune(transcript, 12, 2_000)
    assert pruned == 3
    assert size.tokens(transcript) == full_measure(transcript)
    # A summary replaces the older exchanges: what is kept moves to the front.
    summary = {"role": "user", "parts": [{"text": "[Summary] notes"}, *transcript[16]["parts"]]}
    transcript = [summary, *transcript[17:]]
    assert size.tokens(transcript) == full_measure(transcript)
    transcript = transcript[:3]
    assert size.tokens(transcript) == full_measure(transcript)
    assert size.tokens([]) == 0


def test_each_content_is_measured_once() -> None:
    size = TranscriptSize()
    transcript = [prompt("a"), call(1), result(1), answer("b")]
    size.tokens(transcript)
    seen = list(size.measured)
    transcript = [*transcript, prompt("c")]
    size.tokens(transcript)
    # The four measured before are the very same records: only the new prompt was measured.
    assert all(a is b for a, b in zip(size.measured, seen, strict=False))
    assert len(size.measured) == 5
    # A Content replaced in the middle is measured again, and only it.
    transcript[2] = result(1, image=100)
    size.tokens(transcript)
    changed = [i for i, (a, b) in enumerate(zip(size.measured, seen, strict=False)) if a is not b]
    assert changed == [2]
