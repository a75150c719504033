"""Typed accessors for SDK responses, so tests read plainly and type-check."""

from __future__ import annotations

from google.genai import types


def candidate(response: types.GenerateContentResponse) -> types.Candidate:
    assert response.candidates, "the response has no candidates"
    return response.candidates[0]


def content(response: types.GenerateContentResponse) -> types.Content:
    found = candidate(response).content
    assert found is not None, "the candidate has no content"
    return found


def parts(response: types.GenerateContentResponse) -> list[types.Part]:
    return list(content(response).parts or [])


def usage(response: types.GenerateContentResponse) -> types.GenerateContentResponseUsageMetadata:
    assert response.usage_metadata is not None
    return response.usage_metadata
