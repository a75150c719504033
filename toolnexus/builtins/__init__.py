"""The ten built-in file/shell tools, confined to a workspace.

Importing this package registers them; `toolnexus.build` does that for you.
"""

from toolnexus.builtins import _files, _interact, _search, _shell, _web  # noqa: F401
