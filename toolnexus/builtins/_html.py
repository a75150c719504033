"""The visible-text extractor behind ``webfetch``'s ``format="text"``.

Its own module so that ``html.parser`` is imported only when a page is converted.
"""

from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["TextExtractor"]


class TextExtractor(HTMLParser):
    """Collects the visible text of an HTML document, one block per line."""

    _SKIP = frozenset({"script", "style", "noscript", "template", "head", "svg"})
    _BLOCK = frozenset(
        {
            "p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article",
            "header", "footer", "nav", "aside", "main", "h1", "h2", "h3", "h4", "h5",
            "h6", "pre", "blockquote", "hr", "dd", "dt", "dl", "form", "title",
        }
    )  # fmt: skip

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skipping = max(0, self._skipping - 1)
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)
