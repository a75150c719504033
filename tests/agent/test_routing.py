"""Model fallback over the real SDK against the fake: which model gets each request, with
which signatures, what the result records and what it costs."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from agent import Agent, ClientSettings, ModelSettings, RetryPolicy, RunLimits
from agent._cost import run_cost
from agent.errors import ConfigurationError, ModelError
from agent.events import DoneEvent, FallbackEvent
from agent.testing import FakeGemini, error, function_call, reply
from agent.testing._signatures import SignatureBook, decode_signature
from tests.agent._loop_support import KEY, echo_toolkit

PRO = "gemini-3.1-pro-preview"
FLASH = "gemini-3-flash-preview"
PLACEHOLDER = "skip_thought_signature_validator"
BOOK = SignatureBook()


async def _no_wait(seconds: float) -> None:
    return None


def make_agent(fake: FakeGemini, models: Any = (PRO, FLASH), **limits: Any) -> Agent:
    """The one place these tests build an agent: two tries per model, no waiting."""
    retry = RetryPolicy(attempts=2, sleep=_no_wait, jitter=0.0)
    return Agent(
        list(models),
        echo_toolkit(),
        limits=RunLimits(retry=retry, **limits),
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )


def first_call_signature(content: dict[str, Any]) -> str | None:
    part = next(p for p in content["parts"] if "functionCall" in p)
    signature = part.get("thoughtSignature")
    return None if signature is None else str(signature)


def issued_by(signature: str | None, model: str, content: dict[str, Any]) -> bool:
    part = next(p for p in content["parts"] if "functionCall" in p)
    raw = decode_signature(signature)
    return raw is not None and raw == BOOK.sign(part, model)


OVERLOADED = error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")


async def test_a_turn_past_its_retries_goes_to_the_next_model_with_foreign_signatures_replaced():
    fake = FakeGemini(
        [
            function_call("echo", {"text": "one"}),  # turn 1: pro, signed by pro
            OVERLOADED,  # turn 2: pro fails twice: the retry policy gives up
            OVERLOADED,
            function_call("echo", {"text": "two"}),  # ... and flash answers, signed by flash
            "Done.",  # turn 3: pro is cooling down: flash again
        ],
        api_key=KEY,
    )
    agent = make_agent(fake)
    events = [event async for event in agent.stream("go")]
    result = events[-1].result  # type: ignore[union-attr]
    fake.assert_consumed()
    assert result.status == "completed" and result.text == "Done."
    assert [r.model for r in fake.requests] == [PRO, PRO, PRO, FLASH, FLASH]
    assert [r.status for r in fake.requests] == [200, 503, 503, 200, 200]
    # Flash never saw pro's signature: the current turn's step carries the placeholder.
    to_flash = fake.requests[3].contents
    assert first_call_signature(to_flash[1]) == PLACEHOLDER
    # Pro's own requests kept pro's signature exactly as received.
    assert issued_by(first_call_signature(fake.requests[1].contents[1]), PRO, to_flash[1])
    # Turn 3: flash's own step keeps flash's signature; pro's stays the placeholder.
    last = fake.requests[4].contents
    assert first_call_signature(last[1]) == PLACEHOLDER
    assert issued_by(first_call_signature(last[3]), FLASH, last[3])
    # The transcript keeps every turn as received.
    assert issued_by(first_call_signature(result.contents[1]), PRO, result.contents[1])
    # Which model answered, per turn; each turn priced at it.
    assert result.turn_models == (PRO, FLASH, FLASH)
    assert result.to_dict()["turn_models"] == [PRO, FLASH, FLASH]
    assert result.model == FLASH
    for usd, model, usage in zip(
        result.cost.turns, result.turn_models, result.turn_usage, strict=True
    ):
        assert usd == pytest.approx(run_cost(model, [usage]).usd)
    assert result.cost.usd == pytest.approx(sum(result.cost.turns))
    assert result.cost.turns[1] != pytest.approx(run_cost(PRO, [result.turn_usage[1]]).usd)
    fallbacks = [e for e in events if isinstance(e, FallbackEvent)]
    assert fallbacks == [FallbackEvent(PRO, FLASH, 503, "UNAVAILABLE", 2)]
    assert fallbacks[0].to_dict()["fallback"] == FLASH


async def test_after_the_cool_down_the_first_model_is_tried_again_without_the_foreign_signatures():
    fake = FakeGemini(
        [
            function_call("echo", {"text": "one"}),  # pro
            OVERLOADED,
            OVERLOADED,
            function_call("echo", {"text": "two"}),  # flash
            "Done.",  # pro again: no cool-down left
        ],
        api_key=KEY,
    )
    result = await make_agent(fake, fallback_cooldown=0.0).run("go")
    fake.assert_consumed()
    assert [r.model for r in fake.requests] == [PRO, PRO, PRO, FLASH, PRO]
    back = fake.requests[4].contents
    # Pro gets its own signature back, and the placeholder where flash signed.
    assert issued_by(first_call_signature(back[1]), PRO, back[1])
    assert first_call_signature(back[3]) == PLACEHOLDER
    assert result.turn_models == (PRO, FLASH, PRO)


async def test_the_cool_down_is_shared_by_the_agents_runs():
    fake = FakeGemini([OVERLOADED, OVERLOADED, "First.", "Second."], api_key=KEY)
    agent = make_agent(fake, fallback_cooldown=3600.0)
    first = await agent.run("one")
    second = await agent.run("two")
    fake.assert_consumed()
    # The second run goes straight to flash: no request waits on pro while it cools down.
    assert [r.model for r in fake.requests] == [PRO, PRO, FLASH, FLASH]
    assert first.turn_models == (FLASH,) and second.turn_models == (FLASH,)


@pytest.mark.parametrize(
    "failure",
    [
        error(429, retry_delay=3600.0),  # longer than the retry policy waits: given up at once
        error(429, quota_id="GenerateRequestsPerDayPerProjectPerModel-FreeTier"),  # daily
    ],
    ids=["long-retry-info", "daily-quota"],
)
async def test_a_quota_the_retry_policy_gives_up_on_falls_back_at_once(failure: Any):
    fake = FakeGemini([failure, "From flash."], api_key=KEY)
    result = await make_agent(fake).run("go")
    fake.assert_consumed()
    assert [r.model for r in fake.requests] == [PRO, FLASH]
    assert result.text == "From flash." and result.turn_models == (FLASH,)


async def test_a_request_error_does_not_fall_back():
    fake = FakeGemini([error(400, "INVALID_ARGUMENT", "Bad request.")], api_key=KEY)
    with pytest.raises(ModelError) as raised:
        await make_agent(fake).run("go")
    assert raised.value.code == 400
    assert [r.model for r in fake.requests] == [PRO]


async def test_when_every_model_fails_the_run_fails_with_the_last_failure():
    fake = FakeGemini([OVERLOADED] * 4, api_key=KEY)
    with pytest.raises(ModelError) as raised:
        await make_agent(fake).run("go")
    fake.assert_consumed()
    assert raised.value.code == 503 and raised.value.attempts == 2
    assert [r.model for r in fake.requests] == [PRO, PRO, FLASH, FLASH]


async def test_the_thinking_setting_goes_in_the_form_each_model_takes():
    fake = FakeGemini([OVERLOADED, OVERLOADED, "ok"], api_key=KEY)
    agent = Agent(
        [FLASH, "gemini-2.5-flash"],
        settings=ModelSettings(thinking="low"),
        limits=RunLimits(retry=RetryPolicy(attempts=2, sleep=_no_wait)),
        client=ClientSettings(api_key=KEY, http_client=fake.http_client()),
    )
    await agent.run("go")
    thinking = [r.body["generationConfig"]["thinkingConfig"] for r in fake.requests]
    assert thinking[0] == {"thinkingLevel": "LOW"}
    assert thinking[2] == {"thinkingBudget": 1024}


async def test_a_history_signed_by_a_model_this_process_never_saw_is_sent_again_without_it():
    # A conversation flash signed (say, in another process) is continued by an agent whose
    # first model is pro: pro refuses flash's signatures once, then gets the history without
    # them, and the run's later turns do not pay that refusal again.
    signer = FakeGemini([reply(function_call("echo", {"text": "x"}))], api_key=KEY)
    earlier = await Agent(
        FLASH,
        echo_toolkit(),
        limits=RunLimits(max_turns=1),
        client=ClientSettings(api_key=KEY, http_client=signer.http_client()),
    ).run("start")
    assert earlier.status == "incomplete"  # it stopped after the call ran
    fake = FakeGemini([function_call("echo", {"text": "y"}), "Done."], api_key=KEY)
    result = await make_agent(fake).run(history=earlier.contents)
    fake.assert_consumed()
    assert [r.status for r in fake.requests] == [400, 200, 200]
    assert fake.requests[0].error == "Corrupted thought signature."
    assert first_call_signature(fake.requests[1].contents[1]) == PLACEHOLDER
    assert first_call_signature(fake.requests[2].contents[1]) == PLACEHOLDER
    assert result.status == "completed" and result.turn_models == (PRO, PRO)


async def test_an_agent_of_one_model_continuing_another_models_history_sends_it_once_without():
    # A session flash signed, continued by an agent of pro alone (chat --session --model,
    # a fork on the web page): pro refuses flash's signatures once; the turn goes again
    # without them, and the later turns of the run do not pay that refusal again.
    signer = FakeGemini([reply(function_call("echo", {"text": "x"}))], api_key=KEY)
    earlier = await Agent(
        FLASH,
        echo_toolkit(),
        limits=RunLimits(max_turns=1),
        client=ClientSettings(api_key=KEY, http_client=signer.http_client()),
    ).run("start")
    fake = FakeGemini([function_call("echo", {"text": "y"}), "Done."], api_key=KEY)
    agent = Agent(
        PRO, echo_toolkit(), client=ClientSettings(api_key=KEY, http_client=fake.http_client())
    )
    result = await agent.run(history=earlier.contents)
    fake.assert_consumed()
    assert [r.status for r in fake.requests] == [400, 200, 200]
    assert fake.requests[0].error == "Corrupted thought signature."
    assert first_call_signature(fake.requests[1].contents[1]) == PLACEHOLDER
    assert first_call_signature(fake.requests[2].contents[1]) == PLACEHOLDER
    # The transcript keeps flash's signature as recorded; only the requests went without.
    assert result.contents[1] == earlier.contents[1]
    assert result.status == "completed" and result.turn_models == (PRO, PRO)


def test_the_model_list_is_checked():
    for bad in ([], [PRO, PRO], [PRO, ""], [PRO, 3]):
        with pytest.raises(ConfigurationError):
            Agent(bad, client=ClientSettings(api_key=KEY))  # type: ignore[arg-type]
    agent = Agent([PRO, FLASH], client=ClientSettings(api_key=KEY))
    assert agent.model == PRO and agent.models == (PRO, FLASH)


async def test_a_typed_output_the_fallback_cannot_take_is_refused_when_the_agent_is_built():
    with pytest.raises(ConfigurationError, match="output_mode='tool'"):
        Agent(
            [FLASH, "gemini-2.5-flash"],
            echo_toolkit(),
            output_type={"type": "object", "properties": {"a": {"type": "string"}}},
            client=ClientSettings(api_key=KEY),
        )


async def test_a_stream_and_a_run_record_the_same(tmp_path: Any) -> None:
    script = [OVERLOADED, OVERLOADED, "Hello."]
    streamed = FakeGemini(list(script), api_key=KEY)
    events = [e async for e in make_agent(streamed).stream("go")]
    done = events[-1]
    assert isinstance(done, DoneEvent)
    ran = FakeGemini(list(script), api_key=KEY)
    result = await make_agent(ran).run("go")
    assert done.result.turn_models == result.turn_models == (FLASH,)
    assert [r.kind for r in streamed.requests] == ["stream"] * 3
    assert [r.model for r in streamed.requests] == [r.model for r in ran.requests]


def test_placeholder_bytes_round_trip_to_the_documented_string() -> None:
    from agent._signatures import PLACEHOLDER as RAW

    assert base64.urlsafe_b64encode(RAW).decode() == PLACEHOLDER


async def test_a_signed_answer_of_an_earlier_turn_loses_its_signature_on_the_way_to_another_model():
    # Gemini 3 signs the last part of a plain answer too; another model would refuse that
    # signature anywhere in the history, so it is dropped (not replaced) outside the turn.
    fake = FakeGemini(["Hi.", OVERLOADED, OVERLOADED, "Hello again."], api_key=KEY, sign_text=True)
    agent = make_agent(fake)
    first = await agent.run("hello")
    assert "thoughtSignature" in first.contents[1]["parts"][-1]
    second = await agent.run("and again", history=first.contents)
    fake.assert_consumed()
    to_flash = fake.requests[-1]
    assert to_flash.model == FLASH and to_flash.status == 200
    assert "thoughtSignature" not in to_flash.contents[1]["parts"][-1]
    assert second.contents[1] == first.contents[1]  # the transcript keeps it as received


def test_the_gemini_batch_engine_refuses_an_agent_of_several_models():
    from agent._batch import check_model

    agent = Agent([PRO, FLASH], client=ClientSettings(api_key=KEY))
    with pytest.raises(ConfigurationError, match="sends every call of a run to one model"):
        check_model(agent._core.model)
    check_model(Agent(PRO, client=ClientSettings(api_key=KEY))._core.model)  # one model: fine
