"""The tools the example eval gives the agent (``--tools tools:TOOLS``)."""

from __future__ import annotations

from toolnexus import define_tool


@define_tool
def get_weather(city: str) -> str:
    """Today's forecast for a city."""
    forecasts = {"Paris": "sunny, 21 C", "Oslo": "rain, 9 C"}
    return forecasts.get(city, "no forecast")


TOOLS = [get_weather]
