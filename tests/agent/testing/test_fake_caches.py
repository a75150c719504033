"""The fake's context caches, through the real SDK: create, get, list, patch, delete, use.

The fake answers what Gemini answers: the minimum size with its message, the 400 for a
request that names a cache and sets its parts, the 403 for a cache that is gone, and
``cachedContentTokenCount`` in the usage of a request that named one.
"""

from __future__ import annotations

import pytest
from google.genai import errors, types

from agent.testing import FakeGemini, reply
from agent.testing._caches import CONFLICT_MESSAGE, MISSING_MESSAGE

MODEL = "gemini-2.5-flash"
BIG = "Follow the house rules to the letter. " * 400  # about 3,800 tokens as the fake counts
TOOL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="lookup",
            description="Look a word up.",
            parameters_json_schema={"type": "object", "properties": {"word": {"type": "string"}}},
        )
    ]
)


def _client(fake: FakeGemini):
    return fake.client(api_version="v1beta")


def _create(fake: FakeGemini, **config: object) -> types.CachedContent:
    options = {"system_instruction": BIG, "tools": [TOOL], "ttl": "300s", **config}
    return _client(fake).caches.create(
        model=MODEL,
        config=types.CreateCachedContentConfig(**options),
    )


def _status(exc: pytest.ExceptionInfo[errors.APIError]) -> tuple[int, str]:
    return exc.value.code, str(exc.value.message)


def test_a_cache_is_created_read_listed_extended_and_deleted():
    fake = FakeGemini([])
    made = _create(fake, display_name="house rules")
    assert made.name == "cachedContents/fakecache0001"
    assert made.model == "models/gemini-2.5-flash"
    assert made.display_name == "house rules"
    assert made.usage_metadata is not None and made.usage_metadata.total_token_count
    assert made.create_time is not None and made.expire_time is not None
    assert (made.expire_time - made.create_time).total_seconds() == pytest.approx(300)
    client = _client(fake)
    assert client.caches.get(name=made.name).name == made.name
    assert [c.name for c in client.caches.list()] == [made.name]
    longer = client.caches.update(
        name=made.name, config=types.UpdateCachedContentConfig(ttl="900s")
    )
    assert longer.expire_time is not None and longer.update_time is not None
    assert (longer.expire_time - longer.update_time).total_seconds() == pytest.approx(900)
    client.caches.delete(name=made.name)
    with pytest.raises(errors.APIError) as gone:
        client.caches.get(name=made.name)
    assert _status(gone) == (403, MISSING_MESSAGE)
    assert fake.caches.created == [made.name]
    assert fake.caches.deleted == [made.name]
    assert [method for method, _ in fake.caches.requests] == [
        "POST",
        "GET",
        "GET",
        "PATCH",
        "DELETE",
        "GET",
    ]


def test_the_list_comes_a_page_at_a_time():
    fake = FakeGemini([])
    names = [_create(fake).name for _ in range(5)]
    pager = _client(fake).caches.list(config=types.ListCachedContentsConfig(page_size=2))
    assert [cache.name for cache in pager] == names
    assert sum(1 for method, _ in fake.caches.requests if method == "GET") == 3


def test_a_cache_smaller_than_the_models_minimum_is_refused_with_geminis_message():
    fake = FakeGemini([])
    with pytest.raises(errors.APIError) as small:
        _create(fake, system_instruction="Be brief.", tools=None)
    code, message = _status(small)
    assert code == 400
    assert message.startswith("Cached content is too small. total_token_count=")
    assert message.endswith("min_total_token_count=2048")
    assert not fake.caches.caches
    fake.caches.min_tokens = 1  # a test may lower it
    assert _create(fake, system_instruction="Be brief.", tools=None).name


def test_gemini_3_needs_a_larger_cache():
    fake = FakeGemini([])
    with pytest.raises(errors.APIError) as small:
        _client(fake).caches.create(
            model="gemini-3-flash-preview",
            config=types.CreateCachedContentConfig(system_instruction=BIG[:9000]),
        )
    assert _status(small)[1].endswith("min_total_token_count=4096")


def test_the_parts_of_a_cache_are_checked_like_a_request():
    fake = FakeGemini([])
    bad = types.Tool(
        function_declarations=[types.FunctionDeclaration(name="bad name!", description="x")]
    )
    with pytest.raises(errors.APIError) as refused:
        _create(fake, tools=[bad])
    assert refused.value.code == 400
    assert "bad name!" in str(refused.value.message)
    with pytest.raises(errors.APIError) as unknown:
        _client(fake).caches.create(
            model="gemini-9-ultra", config=types.CreateCachedContentConfig(system_instruction=BIG)
        )
    assert unknown.value.code == 404


def test_a_request_naming_a_cache_is_answered_as_if_its_parts_were_in_it():
    seen: list[dict[str, object]] = []

    def model(body: dict[str, object]) -> object:
        seen.append(body)
        return "Done."

    fake = FakeGemini(model)
    made = _create(fake)
    response = _client(fake).models.generate_content(
        model=MODEL, contents="Go.", config=types.GenerateContentConfig(cached_content=made.name)
    )
    usage = response.usage_metadata
    assert usage is not None and made.usage_metadata is not None
    assert usage.cached_content_token_count == made.usage_metadata.total_token_count
    assert usage.prompt_token_count is not None
    assert usage.prompt_token_count > usage.cached_content_token_count
    sent = fake.requests[0].body
    # Over the wire: no system instruction, no tools; the model sees the cache's.
    assert "systemInstruction" not in sent and "tools" not in sent
    assert sent["cachedContent"] == made.name
    assert seen[0]["systemInstruction"]["parts"] == [{"text": BIG}]
    assert [t["functionDeclarations"][0]["name"] for t in seen[0]["tools"]] == ["lookup"]
    assert fake.caches.caches["fakecache0001"].uses == 1


@pytest.mark.parametrize("extra", ["system_instruction", "tools", "tool_config"])
def test_a_request_with_a_cache_and_its_parts_is_refused(extra: str):
    fake = FakeGemini(["never sent"])
    made = _create(fake)
    value = {
        "system_instruction": "Be brief.",
        "tools": [TOOL],
        "tool_config": types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(
                mode=types.FunctionCallingConfigMode.AUTO
            )
        ),
    }[extra]
    config = types.GenerateContentConfig(cached_content=made.name, **{extra: value})
    with pytest.raises(errors.APIError) as refused:
        _client(fake).models.generate_content(model=MODEL, contents="Go.", config=config)
    assert _status(refused) == (400, CONFLICT_MESSAGE)
    assert fake.requests[0].status == 400
    assert fake.remaining == 1  # a refused request uses up no reply


def test_a_cache_serves_its_own_model_only():
    fake = FakeGemini(["never sent"])
    made = _create(fake)
    with pytest.raises(errors.APIError) as refused:
        _client(fake).models.generate_content(
            model="gemini-2.5-pro",
            contents="Go.",
            config=types.GenerateContentConfig(cached_content=made.name),
        )
    code, message = _status(refused)
    assert code == 400
    assert message == (
        "Model used by GenerateContent request (gemini-2.5-pro) and CachedContent "
        "(gemini-2.5-flash) has to be the same."
    )


def test_a_cache_past_its_ttl_is_gone():
    fake = FakeGemini(["never sent", "never sent"])
    made = _create(fake)
    client = _client(fake)
    config = types.GenerateContentConfig(cached_content=made.name)
    fake.caches.advance(301)
    with pytest.raises(errors.APIError) as gone:
        client.models.generate_content(model=MODEL, contents="Go.", config=config)
    assert _status(gone) == (403, MISSING_MESSAGE)
    assert list(client.caches.list()) == []
    fresh = _create(fake)
    fake.caches.expire(str(fresh.name))  # as the server ends it when its time runs out
    with pytest.raises(errors.APIError) as ended:
        client.models.generate_content(
            model=MODEL,
            contents="Go.",
            config=types.GenerateContentConfig(cached_content=fresh.name),
        )
    assert _status(ended)[0] == 403


def test_a_scripted_usage_is_sent_as_given():
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11}
    fake = FakeGemini([reply("Done.", usage=usage)])
    made = _create(fake)
    response = _client(fake).models.generate_content(
        model=MODEL, contents="Go.", config=types.GenerateContentConfig(cached_content=made.name)
    )
    assert response.usage_metadata is not None
    assert response.usage_metadata.cached_content_token_count is None


def test_the_fake_server_serves_caches_over_http():
    fake = FakeGemini(["Done."])
    with fake.serve() as server:
        from google import genai

        client = genai.Client(
            api_key="k",
            http_options=types.HttpOptions(base_url=server.base_url, api_version="v1beta"),
        )
        made = client.caches.create(
            model=MODEL, config=types.CreateCachedContentConfig(system_instruction=BIG)
        )
        client.caches.update(name=made.name, config=types.UpdateCachedContentConfig(ttl="60s"))
        response = client.models.generate_content(
            model=MODEL,
            contents="Go.",
            config=types.GenerateContentConfig(cached_content=made.name),
        )
        client.caches.delete(name=made.name)
    assert response.text == "Done."
    assert fake.caches.deleted == [made.name]
