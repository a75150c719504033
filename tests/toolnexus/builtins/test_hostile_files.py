"""Hostile inputs against the file and search tools: races, links, special files, size.

Each case once let a tool escape the workspace, hang, or use memory without bound. The
race cases run a tool many times while another thread swaps a directory of the workspace
with a symlink to a directory outside it; after the fix no call may touch the outside.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sys
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn

SECRET = "SECRET-outside-the-workspace"
ROUNDS = 150


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    for directory in (root / "d", outside):
        directory.mkdir(parents=True)
    (root / "d" / "x.txt").write_text("inside line\n")
    (outside / "x.txt").write_text(f"{SECRET}\ninside line\n")
    (outside / f"{SECRET}.txt").write_text(f"{SECRET}\n")
    return root, outside


@pytest.fixture
def swapping(places: tuple[Path, Path]) -> Iterator[None]:
    """Swap ``root/d`` between its real directory and a symlink to ``outside``."""
    root, outside = places
    (root / ".d_link").symlink_to(outside, target_is_directory=True)
    stop = threading.Event()

    made = itertools.count()

    def into_d(source: str) -> None:
        while True:
            try:
                os.rename(root / source, root / "d")
                return
            except OSError:  # a tool made a new `d` while it was missing: set that aside
                with contextlib.suppress(OSError):
                    os.rename(root / "d", root / f".made{next(made)}")

    def swap() -> None:
        while not stop.is_set():
            os.rename(root / "d", root / ".d_real")
            into_d(".d_link")
            os.rename(root / "d", root / ".d_link")
            into_d(".d_real")

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread = threading.Thread(target=swap, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)


def _outside_state(outside: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(outside.iterdir())}


RACES: dict[str, Callable[[int], tuple[str, dict[str, Any]]]] = {
    "write": lambda i: ("write", {"path": f"d/new{i}.txt", "content": "x\n"}),
    "write existing": lambda i: ("write", {"path": "d/x.txt", "content": f"{i}\n"}),
    "edit": lambda i: (
        "edit",
        {"path": "d/x.txt", "oldString": "inside line", "newString": "inside line"[::-1]},
    ),
    "apply_patch add": lambda i: (
        "apply_patch",
        {"patchText": f"*** Begin Patch\n*** Add File: d/p{i}.txt\n+x\n*** End Patch"},
    ),
    "apply_patch update": lambda i: (
        "apply_patch",
        {
            "patchText": "*** Begin Patch\n*** Update File: d/x.txt\n-inside line\n"
            "+INSIDE LINE\n*** End Patch"
        },
    ),
    "read": lambda i: ("read", {"path": "d/x.txt"}),
    "grep": lambda i: ("grep", {"pattern": "SECRET"}),
    "grep in d": lambda i: ("grep", {"pattern": "SECRET", "path": "d"}),
    "glob": lambda i: ("glob", {"pattern": "**/*.txt"}),
}


@pytest.mark.parametrize("case", list(RACES))
def test_swapping_a_directory_for_a_symlink_never_escapes(
    case: str, places: tuple[Path, Path], swapping: None
) -> None:
    root, outside = places
    before = _outside_state(outside)
    tk = tn.build(root=root, builtins={"tools": {"bash": False, "webfetch": False}})
    leaks = 0
    for i in range(ROUNDS):
        name, args = RACES[case](i)
        result = tn.execute(tk, name, args)
        leaks += SECRET in result.output
    assert leaks == 0
    assert _outside_state(outside) == before


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("write", {"path": "link.txt", "content": "changed\n"}),
        ("edit", {"path": "link.txt", "oldString": "original", "newString": "changed"}),
        (
            "apply_patch",
            {
                "patchText": "*** Begin Patch\n*** Update File: link.txt\n-original\n"
                "+changed\n*** End Patch"
            },
        ),
    ],
)
def test_a_hard_link_to_a_file_outside_is_not_written(
    tmp_path: Path, name: str, args: dict[str, Any]
) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside.txt"
    root.mkdir()
    outside.write_text("original\n")
    os.link(outside, root / "link.txt")
    result = tn.execute(tn.build(root=root), name, args)
    assert result.is_error
    assert "2 hard links" in result.output
    assert outside.read_text() == "original\n"
    assert (root / "link.txt").read_text() == "original\n"


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("write", {"path": "pipe", "content": "x"}, "pipe is not a regular file"),
        ("edit", {"path": "pipe", "oldString": "a", "newString": "b"}, "not a regular file"),
        ("read", {"path": "pipe"}, "pipe is not a regular file"),
        (
            "apply_patch",
            {"patchText": "*** Begin Patch\n*** Update File: pipe\n-a\n+b\n*** End Patch"},
            "not a regular file",
        ),
    ],
)
def test_a_fifo_is_refused_without_hanging(
    tmp_path: Path, name: str, args: dict[str, Any], message: str
) -> None:
    os.mkfifo(tmp_path / "pipe")
    result = tn.execute(tn.build(root=tmp_path), name, args, tn.ToolContext(timeout=10))
    assert result.is_error
    assert message in result.output
    assert (tmp_path / "pipe").is_fifo()


def test_search_walks_past_a_fifo_and_through_a_very_deep_tree(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    deep = tmp_path
    for _ in range(1100):
        deep /= "d"
        deep.mkdir()
    (deep / "bottom.txt").write_text("found me\n")
    tk = tn.build(root=tmp_path)
    context = tn.ToolContext(timeout=60)
    try:
        glob = tn.execute(tk, "glob", {"pattern": "**/bottom.txt"}, context)
        assert glob.output == "d/" * 1100 + "bottom.txt"
        grep = tn.execute(tk, "grep", {"pattern": "found"}, context)
        assert grep.output == "d/" * 1100 + "bottom.txt:1:found me"
    finally:  # pytest's own clean-up of old temporary trees recurses: undo the depth here
        (deep / "bottom.txt").unlink()
        while deep != tmp_path:
            deep.rmdir()
            deep = deep.parent


def test_read_of_a_huge_single_line_keeps_memory_bounded(tmp_path: Path) -> None:
    size = 40_000_000
    with (tmp_path / "one-line.txt").open("wb") as handle:
        for _ in range(size // 1_000_000):
            handle.write(b"a" * 1_000_000)
    tk = tn.build(root=tmp_path)
    tracemalloc.start()
    try:
        result = tn.execute(tk, "read", {"path": "one-line.txt", "limit": 1})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not result.is_error, result.output
    assert f"[line truncated: {size} characters]" in result.output
    assert peak < 5_000_000


def test_read_counts_characters_of_a_long_line_across_chunks(tmp_path: Path) -> None:
    line = "é" * 100_000 + "\r\n"
    (tmp_path / "wide.txt").write_text("first\n" + line + "last\n", newline="")
    tk = tn.build(root=tmp_path, limits=tn.Limits(max_line_length=3))
    output = tn.execute(tk, "read", {"path": "wide.txt"}).output
    assert output.splitlines()[:3] == [
        "00001| fir... [line truncated: 5 characters]",
        "00002| ééé... [line truncated: 100000 characters]",
        "00003| las... [line truncated: 4 characters]",
    ]


async def test_a_catastrophic_grep_pattern_does_not_freeze_the_loop_and_times_out(
    tmp_path: Path,
) -> None:
    # Backtracking `(a+)+$` on this line takes Python's `re` many seconds, holding the GIL.
    (tmp_path / "a.txt").write_text("a" * 27 + "b\n")
    tk = tn.build(root=tmp_path)
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    try:
        result = await tn.execute_async(
            tk, "grep", {"pattern": "(a+)+$"}, tn.ToolContext(timeout=1)
        )
    finally:
        ticker.cancel()
    assert result.is_error
    assert result.output == "Tool 'grep' timed out after 1 s."
    assert ticks >= 20  # the loop kept turning while the pattern ran


async def test_grep_keeps_python_re_syntax_in_its_matcher(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("abab\nabcd\nxyxy\n")
    tk = tn.build(root=tmp_path)
    result = await tn.execute_async(tk, "grep", {"pattern": r"^(\w\w)\1$|c(?=d)"})
    assert result.output == "a.txt:1:abab\na.txt:2:abcd\na.txt:3:xyxy"


BACKTRACKING_GLOB = "*a" * 10 + "*b"
"""As a regex, this tries about 10^15 ways on a long name of ``a`` before it fails."""


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("glob", {"pattern": BACKTRACKING_GLOB}),
        ("grep", {"pattern": "a", "include": BACKTRACKING_GLOB}),
        ("glob", {"pattern": "**/" * 20 + "x"}),
        ("grep", {"pattern": "a", "include": "**/" * 20 + "x"}),
    ],
)
async def test_a_glob_pattern_cannot_make_glob_or_grep_include_backtrack(
    tmp_path: Path, name: str, args: dict[str, Any]
) -> None:
    deep = tmp_path.joinpath(*["d"] * 30)
    deep.mkdir(parents=True)
    (deep / ("a" * 200)).write_text("a\n")
    (tmp_path / ("a" * 200)).write_text("a\n")
    tk = tn.build(root=tmp_path)
    result = await tn.execute_async(tk, name, args, tn.ToolContext(timeout=3))
    expected = "No files found." if name == "glob" else "No matches found."
    assert (result.is_error, result.output) == (False, expected)


def test_a_search_walk_ends_once_its_call_has_ended(tmp_path: Path) -> None:
    from toolnexus._registry import BuiltinSettings
    from toolnexus.builtins._search import _Stopped, _Walker
    from toolnexus.builtins._workspace import Workspace

    for i in range(3):
        (tmp_path / f"f{i}.txt").write_text("")
    stop = threading.Event()  # what the glob and grep handlers set when their call ends
    walk = _Walker(Workspace(BuiltinSettings(root=tmp_path)), tmp_path, stop).files(tmp_path)
    assert next(walk)[1] == "f0.txt"
    stop.set()
    with pytest.raises(_Stopped):
        next(walk)


def test_a_hard_link_to_a_file_outside_is_not_read_unless_the_host_allows_it(
    tmp_path: Path,
) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside.txt"
    root.mkdir()
    outside.write_text(f"{SECRET}\n")
    os.link(outside, root / "link.txt")
    os.link(outside, root / "link.png")  # an image is read whole: the same refusal
    tk = tn.build(root=root)
    for name, args in [
        ("read", {"path": "link.txt"}),
        ("read", {"path": "link.png"}),
        ("edit", {"path": "link.txt", "oldString": "S", "newString": "s"}),
    ]:
        result = tn.execute(tk, name, args)
        assert result.is_error, name
        assert "has 3 hard links; it is not opened" in result.output
        assert SECRET not in result.output
    grep = tn.execute(tk, "grep", {"pattern": "SECRET"})
    assert grep.output == (
        "No matches found.\n"
        "[skipped 2 binary, non-UTF-8, unreadable, oversized or hard-linked file(s)]"
    )
    allowed = tn.build(root=root, allow_hard_links=True)
    assert SECRET in tn.execute(allowed, "read", {"path": "link.txt"}).output
    assert tn.execute(allowed, "grep", {"pattern": "SECRET", "include": "*.txt"}).output == (
        f"link.txt:1:{SECRET}"
    )
    assert outside.read_text() == f"{SECRET}\n"
