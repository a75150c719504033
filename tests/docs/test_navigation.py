"""A newcomer can find every page: the grouped navigation, the docs home and the README.

- ``mkdocs.yml`` groups the pages under six headings, each page once;
- the docs home (``docs/index.md``) links every page;
- the README's feature table has one row, and one link, per page: each capability;
- the docs home and the README name every extra that ``pyproject.toml`` declares.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(page.relative_to(DOCS).as_posix() for page in DOCS.rglob("*.md"))
GROUPS = [
    "Get started",
    "Tools",
    "The agent loop",
    "Running at scale",
    "Operating",
    "Reference",
]
_LINK = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")


def _nav() -> list[dict[str, Any]]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav: list[dict[str, Any]] = config["nav"]
    return nav


def _pages_under(entry: Any) -> list[str]:
    if isinstance(entry, str):
        return [entry]
    if isinstance(entry, list):
        return [page for item in entry for page in _pages_under(item)]
    return [page for value in entry.values() for page in _pages_under(value)]


def test_the_navigation_groups_every_page_once_under_six_headings() -> None:
    nav = _nav()
    assert [next(iter(group)) for group in nav] == GROUPS
    for group in nav:
        (pages,) = group.values()
        assert isinstance(pages, list) and pages, f"{group}: a heading with no pages"
    listed = _pages_under(nav)
    assert sorted(listed) == PAGES, "every page is in the navigation, once"
    assert listed[0] == "index.md", "the docs home comes first"


def test_the_docs_home_links_every_page() -> None:
    linked = set(_LINK.findall((DOCS / "index.md").read_text(encoding="utf-8")))
    missing = [page for page in PAGES if page != "index.md" and page not in linked]
    assert not missing, f"docs/index.md does not link: {missing}"


def test_the_readme_table_links_each_capability_once_per_row() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    box = readme.split("## What is in the box", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in box.splitlines() if line.startswith("| ") and "](docs/" in line]
    links = [re.findall(r"\]\(docs/([^)#]+)", row) for row in rows]
    assert all(len(found) == 1 for found in links), "one link per row: " + str(links)
    linked = [found[0] for found in links]
    assert len(linked) == len(set(linked)), "a page linked from two rows"
    missing = [page for page in PAGES if page != "index.md" and page not in linked]
    assert not missing, f"the README's feature table does not link: {missing}"


def test_the_readme_stays_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines: it sells and starts, the docs explain"


def test_the_docs_home_and_the_readme_name_every_extra() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = sorted(pyproject["project"]["optional-dependencies"])
    for page in (DOCS / "index.md", ROOT / "README.md"):
        text = page.read_text(encoding="utf-8")
        missing = [extra for extra in extras if f"[{extra}]`" not in text]
        assert not missing, f"{page.name} does not name the extras {missing}"


def test_wide_code_and_tables_scroll_instead_of_being_cut_off() -> None:
    # The readthedocs theme sets `overflow-x: hidden` on the body: without these rules the end
    # of a long code line or a wide table cannot be seen at all.
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    css = "".join((DOCS / name).read_text(encoding="utf-8") for name in config["extra_css"])
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S)))
    scrolling = {selector.strip() for selector, body in rules.items() if "overflow-x: auto" in body}
    assert {".rst-content pre", ".rst-content table"} <= scrolling, scrolling
