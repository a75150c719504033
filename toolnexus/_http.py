"""PLACEHOLDER — replaced by the http_tool implementation."""

from typing import Any


def http_tool(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError
