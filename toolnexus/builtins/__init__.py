"""The ten built-in file/shell tools, confined to a workspace.

Importing this package registers them; `toolnexus.build` does that for you.
"""
