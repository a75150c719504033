"""The ten built-in file/shell tools, confined to a workspace.

Importing this package registers them (their declarations only: each tool's code loads
on its first call); `toolnexus.build` does that for you.
"""

from toolnexus._registry import BUILTINS
from toolnexus.builtins import _declared  # noqa: F401  (registers the ten tools)

__all__ = ["BUILTIN_NAMES"]

BUILTIN_NAMES: tuple[str, ...] = tuple(sorted(BUILTINS))
"""The names of the ten built-in tools, sorted."""
