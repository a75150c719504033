"""The install instructions work as written: the package is not on PyPI.

Every ``pip install`` in the README and the docs installs from a path (a clone, ``.``, a
wheel file) with extras that ``pyproject.toml`` declares; none names the package as if it
could be fetched from an index.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
EXTRAS = set(
    tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
)


def test_no_page_installs_the_package_from_an_index() -> None:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"(?<![/\w])toolnexus-gemini\[", text), page.name
        assert not re.search(r"pip install\s+['\"]?toolnexus-gemini\b", text), page.name


def test_every_extra_installed_in_the_docs_exists() -> None:
    for page in PAGES:
        for extras in re.findall(r"pip install[^\n`]*?\[([\w,]+)\]", page.read_text("utf-8")):
            assert set(extras.split(",")) <= EXTRAS, (page.name, extras)


def test_the_readme_shows_a_clone_and_a_wheel_install() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "pip install '/path/to/toolnexus-gemini[mcp]'" in readme
    assert "pip wheel --no-deps -w dist ." in readme
