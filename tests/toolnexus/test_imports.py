"""``import toolnexus`` stays provider-neutral and light: no google.genai, no pydantic."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import toolnexus as tn
print("import", "google.genai" in sys.modules, "pydantic" in sys.modules)
tk = tn.build()
print("build", "google.genai" in sys.modules, "pydantic" in sys.modules)
"""


def test_import_and_build_load_neither_google_genai_nor_pydantic() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.splitlines() == ["import False False", "build False False"]


def test_lazy_names_resolve_and_are_listed() -> None:
    import toolnexus

    for name in toolnexus.__all__:
        assert getattr(toolnexus, name) is not None
        assert name in dir(toolnexus)
    try:
        toolnexus.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no attribute 'no_such_name'" in str(exc)
    else:
        raise AssertionError("a missing name must raise AttributeError")
