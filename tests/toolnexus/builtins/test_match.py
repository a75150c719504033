"""The pure glob/grep matching core, tested without any file system."""

from __future__ import annotations

import re

import pytest

from toolnexus.builtins._match import (
    MAX_BRACE_DEPTH,
    GlobError,
    GlobPattern,
    decode_text,
    is_binary,
    matching_lines,
    sort_paths,
)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "pkg/sub/a.py", True),  # no "/" in the pattern: matches the name anywhere
        ("*.py", "a.pyc", False),
        ("*.{py,md}", "docs/index.md", True),
        ("*.{py,md}", "a.txt", False),
        ("*.{py,{md,txt}}", "notes.txt", True),  # nested braces
        ("[ab].py", "a.py", True),
        ("[ab].py", "x/b.py", True),
        ("[ab].py", "c.py", False),
        ("[!ab].py", "c.py", True),
        ("[!ab].py", "a.py", False),
        ("[a-c]?.py", "b1.py", True),
        ("file?.txt", "file10.txt", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/x/a.py", False),  # "*" never crosses "/"
        ("src/**/*.py", "src/a.py", True),  # "**" matches zero directories
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**/*.py", "lib/src/a.py", False),  # a pattern with "/" is anchored
        ("**/*.py", "a.py", True),
        ("**/*.py", "deep/er/a.py", True),
        ("src/**", "src/x/y", True),
        ("**", "any/thing", True),
        ("./src/*.py", "src/a.py", True),
        ("a+b(1).py", "a+b(1).py", True),  # regex metacharacters are literal
        ("a+b(1).py", "aab1.py", False),
        ("[unclosed", "[unclosed", True),
        ("{unclosed", "{unclosed", True),
    ],
)
def test_glob_pattern(pattern: str, path: str, expected: bool) -> None:
    assert GlobPattern(pattern).matches(path) is expected


def test_a_glob_matches_the_whole_path_only() -> None:
    anchored = GlobPattern("src/*.py")
    assert anchored.matches("src/a.py")
    assert not anchored.matches("src/a.py.bak")
    assert not anchored.matches("lib/src/a.py")
    assert not GlobPattern("*.py").matches("a.py.bak")


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("[a-]x", "-x", True),  # a dash at the end of a class is literal
        ("[-a]x", "-x", True),
        ("[]a]", "]", True),  # so is a "]" first
        ("[!a-c]", "/", False),  # a negated class never matches "/"
        ("a\nb*", "a\nbc", True),  # "*" and "?" match newlines in names
        ("{a,{b,c}d}", "cd", True),
        ("{,x}y", "y", True),  # an empty alternative
        ("**/", "a/b/", True),
        ("x/**/y", "x/y", True),
        ("x**y", "xaay", True),  # "**" inside a segment is two "*"
        ("x**y", "xa/y", False),
    ],
)
def test_glob_edge_cases(pattern: str, path: str, expected: bool) -> None:
    assert GlobPattern(pattern).matches(path) is expected


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        ("*a" * 10 + "*b", "a" * 200),  # a backtracking regex tries ~10^15 ways here
        ("**/" * 20 + "x", "d/" * 40 + "y"),
        ("*" * 4000 + "b", "a" * 4000),
        ("{a,{a,{a,{a,a*}}}}" * 20 + "b", "a" * 200),
    ],
)
def test_matching_stays_linear_on_patterns_that_make_regexes_backtrack(
    pattern: str, path: str
) -> None:
    assert GlobPattern(pattern).matches(path) is False
    assert GlobPattern(pattern).matches(path.replace("a", "b", 1)) is False


def test_a_bad_range_or_too_deep_braces_is_a_glob_error() -> None:
    with pytest.raises(GlobError, match="bad character range z-a"):
        GlobPattern("[z-a]")
    with pytest.raises(GlobError, match=f"nested more than {MAX_BRACE_DEPTH} deep"):
        GlobPattern("{" * 100 + "a" + "}" * 100)
    assert GlobPattern("{" * MAX_BRACE_DEPTH + "a" + "}" * MAX_BRACE_DEPTH).matches("a")


def test_sort_paths_orders_segment_by_segment() -> None:
    paths = ["b.py", "a.b", "a/z.py", "a/b/c.py", "A.py"]
    assert sort_paths(paths) == ["A.py", "a/b/c.py", "a/z.py", "a.b", "b.py"]
    assert sort_paths(reversed(paths)) == sort_paths(paths)


def test_binary_detection() -> None:
    assert is_binary(b"abc\x00def")
    assert not is_binary(b"plain text\n")
    assert decode_text(b"\x89PNG\r\n\x1a\n\x00\x00") is None
    assert decode_text(b"caf\xe9") is None  # latin-1, not UTF-8
    assert decode_text("café\n".encode()) == "café\n"
    assert decode_text(b"\xef\xbb\xbfbom") == "bom"


def test_matching_lines_has_no_phantom_last_line() -> None:
    empty = re.compile("^$")
    assert list(matching_lines("a\nb\n", empty)) == []
    assert list(matching_lines("a\n\nb", empty)) == [(2, "")]
    assert list(matching_lines("", empty)) == []


def test_matching_lines_numbers_and_crlf() -> None:
    regex = re.compile(r"o$")
    assert list(matching_lines("foo\r\nbar\r\nzoo\r\n", regex)) == [(1, "foo"), (3, "zoo")]
