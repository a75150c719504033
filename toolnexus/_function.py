"""PLACEHOLDER — replaced by the define_tool implementation."""

from typing import Any


def define_tool(*args: Any, **kwargs: Any) -> Any:
    raise NotImplementedError
