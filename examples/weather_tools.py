"""Two small tools for the weather scenario (``examples/scenarios/weather.yaml``).

From the root of a clone::

    toolnexus-agent run --fake examples/scenarios/weather.yaml \
        --tools examples.weather_tools:TOOLS "What is the weather in Paris?"
"""


def get_weather(city: str) -> str:
    """Today's forecast for a city."""
    return f"sunny, 21 C in {city}"


def get_time(timezone: str) -> str:
    """The local time in an IANA timezone."""
    return f"14:05 in {timezone}"


TOOLS = [get_weather, get_time]
