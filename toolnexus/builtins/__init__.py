"""The ten built-in file/shell tools, confined to a workspace.

Importing this package registers them (their declarations only: each tool's code loads
on its first call); `toolnexus.build` does that for you.
"""

from toolnexus.builtins import _declared  # noqa: F401
