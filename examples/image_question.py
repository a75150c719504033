"""An image question: a picture sent with the prompt, and a tool that returns a picture.

Run it from the repository root::

    python examples/image_question.py

With GEMINI_API_KEY (or GOOGLE_API_KEY) set, it talks to the real Gemini API. Without a key
it runs offline against the fake Gemini of ``agent.testing``, which plays the model.
"""

from __future__ import annotations

import asyncio
import base64
import os
from typing import Any

import toolnexus as tn
from agent import Agent, ClientSettings

MODEL = "gemini-3-flash-preview"
# A 1x1 red PNG, so the example needs no file on disk.
RED_DOT = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def swatch(args: dict[str, Any], ctx: tn.ToolContext) -> tn.ToolResult:
    """Return a colour swatch as an image."""
    image = tn.Attachment("image/png", data=RED_DOT, name="swatch.png")
    return tn.ToolResult("Here is the swatch.", attachments=(image,))


TOOLS = tn.toolkit([tn.Tool("swatch", swatch, "Show the brand colour swatch.", {"type": "object"})])


def offline_agent() -> Agent:
    from agent.testing import FakeGemini, function_call

    fake = FakeGemini(
        [function_call("swatch"), "Both are the same red: the photo matches the swatch."]
    )
    return Agent(
        MODEL, TOOLS, client=ClientSettings(api_key="offline-demo", http_client=fake.http_client())
    )


async def main() -> None:
    if os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY"):
        agent = Agent(MODEL, TOOLS)
    else:
        agent = offline_agent()
        print("No API key found: running against the offline fake Gemini.")
    photo = tn.Attachment("image/png", data=RED_DOT, name="photo.png")
    async with agent:
        result = await agent.run(
            ["Does this photo match our brand colour? Check the swatch.", photo]
        )
    print(result.text)
    print(f"[{result.status}] {result.turns} turns")


if __name__ == "__main__":
    asyncio.run(main())
