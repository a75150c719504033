"""The file tools read, write, edit and apply_patch, driven through build() and execute()."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from toolnexus._registry import BUILTINS, BuiltinSettings
from toolnexus.tool import Toolkit, ToolResult

FIXTURES = Path(__file__).parent.parent.parent / "fixtures"
MINE = ("read", "write", "edit", "apply_patch")


def file_tools(root: Path, **options: Any) -> Toolkit:
    import toolnexus.builtins  # noqa: F401  (fills the registry)

    others = {name: False for name in BUILTINS if name not in MINE}
    return tn.build(root=root, builtins={"tools": others}, **options)


@pytest.fixture
def tk(tmp_path: Path) -> Toolkit:
    return file_tools(tmp_path)


def ok(tk: Toolkit, name: str, **args: Any) -> str:
    result = tn.execute(tk, name, args)
    assert not result.is_error, result.output
    return result.output


def err(tk: Toolkit, name: str, **args: Any) -> str:
    result = tn.execute(tk, name, args)
    assert result.is_error, result.output
    return result.output


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


# -- declarations ----------------------------------------------------------------------


def test_schemas_equal_the_contract_and_source_is_builtin(tk: Toolkit) -> None:
    contract = json.loads((FIXTURES / "builtins.json").read_text())["builtins"]
    assert sorted(tk.names) == sorted(MINE)
    for tool in tk:
        assert tool.input_schema == contract[tool.name]
        assert tool.source == "builtin"
        assert len(tool.description) > 100


# -- read ------------------------------------------------------------------------------


def test_read_numbers_lines_and_ends_with_a_note(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    out = ok(tk, "read", path="a.txt")
    assert out == "00001| alpha\n00002| beta\n\n(End of file: showed lines 1-2 of 2.)"


def test_read_output_does_not_depend_on_final_newline(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "with.txt").write_text("a\nb\nc\n")
    (tmp_path / "without.txt").write_text("a\nb\nc")
    (tmp_path / "crlf.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    for offset, limit in [(1, 3), (2, 1), (3, 5), (1, 2)]:
        outs = {
            ok(tk, "read", path=p, offset=offset, limit=limit)
            for p in ("with.txt", "without.txt", "crlf.txt")
        }
        assert len(outs) == 1, outs


def test_read_window_says_how_to_continue(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = ok(tk, "read", path="n.txt", offset=3, limit=2)
    assert out.startswith("00003| line 3\n00004| line 4\n\n")
    assert "Showed lines 3-4 of 10. Use offset=5" in out
    assert ok(tk, "read", path="n.txt", offset=10).startswith("00010| line 10\n\n(End of file")


def test_read_offset_past_end_states_line_count(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "n.txt").write_text("one\ntwo\nthree")
    assert err(tk, "read", path="n.txt", offset=4) == (
        "`offset` 4 is past the end of n.txt: the file has 3 lines."
    )


def test_read_empty_file(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "e.txt").write_text("")
    assert ok(tk, "read", path="e.txt") == "(The file is empty.)"
    assert "the file has 0 lines" in err(tk, "read", path="e.txt", offset=2)


def test_read_errors(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "bin.dat").write_bytes(b"\x89PNG\x00\x01\x02")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    assert err(tk, "read", path="note.txt") == "File not found: note.txt. Did you mean: notes.txt?"
    assert "dir is a directory, not a file" in err(tk, "read", path="dir")
    assert "bin.dat is a binary file" in err(tk, "read", path="bin.dat")
    assert "latin1.txt is not UTF-8 text (invalid bytes on line 1)" in err(
        tk, "read", path="latin1.txt"
    )


def test_read_strips_bom_and_cuts_long_lines(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_bytes(b"\xef\xbb\xbfhi\n" + b"y" * 50 + b"\n")
    tk = file_tools(tmp_path, limits=tn.Limits(max_line_length=10))
    out = ok(tk, "read", path="b.txt")
    assert out.startswith("00001| hi\n00002| yyyyyyyyyy... [line truncated: 50 characters]\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"offset": 0}, "`offset` must be 1 or more, got 0"),
        ({"limit": -3}, "`limit` must be 1 or more, got -3"),
        ({"limit": 2.5}, "`limit` must be a whole number, got 2.5"),
        ({"offset": "3"}, "`offset` must be a number, got string"),
        ({"limit": [1]}, "`limit` must be a number, got array"),
        ({"path": 7}, "`path` must be a string, got integer"),
        ({"path": "a.txt", "lines": 3}, "unknown argument `lines`"),
    ],
)
def test_read_argument_errors_name_the_field(
    tmp_path: Path, tk: Toolkit, args: dict[str, Any], message: str
) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    assert message in err(tk, "read", **({"path": "a.txt"} | args))


def test_read_accepts_whole_floats(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "a.txt").write_text("1\n2\n3\n")
    assert ok(tk, "read", path="a.txt", offset=2.0, limit=1.0).startswith("00002| 2\n\n")


def test_read_limits_are_configurable(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1\n2\n3\n4\n")
    tk = file_tools(tmp_path, limits=tn.Limits(read_lines=2))
    out = ok(tk, "read", path="a.txt")
    note = "(Showed lines 1-2 of 4. Use offset=3 (with limit=N lines) to read more.)"
    assert out == "00001| 1\n00002| 2\n\n" + note
    assert "read_lines" not in tk["read"].description
    assert "default 2)" in tk["read"].description


def test_read_50_mb_file_is_capped_with_a_note(tmp_path: Path, tk: Toolkit) -> None:
    line = b"x" * 99 + b"\n"
    (tmp_path / "big.txt").write_bytes(line * 500_000)  # 50 MB
    tracemalloc.start()
    try:
        out = ok(tk, "read", path="big.txt")
        tail = ok(tk, "read", path="big.txt", offset=499_999)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(out.encode()) <= 50_000 + 200
    assert out.startswith("00001| " + "x" * 99 + "\n")
    note = out.rsplit("\n", 1)[-1]
    assert note.startswith("(Output capped at 50000 bytes. Showed lines 1-")
    assert "of 500000. Use offset=" in note and "limit" in note
    assert tail.startswith("499999| x") and "showed lines 499999-500000 of 500000" in tail
    # Both reads stream the file: neither holds more than a small part of it at once.
    assert peak < 10_000_000, peak


# -- write -----------------------------------------------------------------------------


def test_write_creates_parents_and_reports_bytes(tmp_path: Path, tk: Toolkit) -> None:
    assert ok(tk, "write", path="a/b/c.txt", content="héllo\n") == (
        "Wrote 7 bytes to a/b/c.txt (new file)."
    )
    assert (tmp_path / "a/b/c.txt").read_bytes() == "héllo\n".encode()
    assert (
        ok(tk, "write", path="a/b/c.txt", content="x")
        == "Wrote 1 bytes to a/b/c.txt (replaced 7 bytes)."
    )
    assert sorted(p.name for p in (tmp_path / "a/b").iterdir()) == ["c.txt"]  # no temp files


def test_write_keeps_crlf_bom_and_permissions(tmp_path: Path, tk: Toolkit) -> None:
    target = tmp_path / "win.txt"
    target.write_bytes(b"\xef\xbb\xbfold\r\nfile\r\n")
    target.chmod(0o640)
    ok(tk, "write", path="win.txt", content="new\ncontent\n")
    assert target.read_bytes() == b"\xef\xbb\xbfnew\r\ncontent\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_write_keeps_crlf_of_a_file_too_big_to_load(tmp_path: Path) -> None:
    target = tmp_path / "big.txt"
    target.write_bytes(b"row\r\n" * 100)
    tk = file_tools(tmp_path, limits=tn.Limits(max_read_bytes=10))
    assert ok(tk, "write", path="big.txt", content="a\nb\n") == (
        "Wrote 6 bytes to big.txt (replaced 500 bytes; kept its CRLF line endings)."
    )
    assert target.read_bytes() == b"a\r\nb\r\n"


def test_write_over_a_binary_file_replaces_it(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "b.bin").write_bytes(b"\x00\x01\r\n")
    assert ok(tk, "write", path="b.bin", content="text\n").endswith("(replaced 4 bytes).")
    assert (tmp_path / "b.bin").read_bytes() == b"text\n"


def test_write_errors(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("")
    assert "d is a directory" in err(tk, "write", path="d", content="x")
    assert "Cannot write f/x.txt" in err(tk, "write", path="f/x.txt", content="x")
    assert "missing required argument `content`" in err(tk, "write", path="x")
    assert "lone surrogates" in err(tk, "write", path="s.txt", content="\ud800")
    assert not (tmp_path / "s.txt").exists()


# -- edit ------------------------------------------------------------------------------


def test_edit_replaces_a_unique_string(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    assert ok(tk, "edit", path="a.py", oldString="y = 2", newString="y = 3") == (
        "Edited a.py: replaced 1 occurrence (line 2)."
    )
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 3\n"


def test_edit_non_unique_needs_replace_all(tmp_path: Path, tk: Toolkit) -> None:
    target = tmp_path / "a.txt"
    target.write_text("foo\nbar\nfoo\n")
    message = err(tk, "edit", path="a.txt", oldString="foo", newString="baz")
    assert "occurs 2 times in a.txt (lines 1, 3); the file is unchanged" in message
    assert "replaceAll" in message
    assert target.read_text() == "foo\nbar\nfoo\n"
    assert "replaced 2 occurrences (lines 1, 3)" in ok(
        tk, "edit", path="a.txt", oldString="foo", newString="baz", replaceAll=True
    )
    assert target.read_text() == "baz\nbar\nbaz\n"


def test_edit_errors_leave_the_file_unchanged(tmp_path: Path, tk: Toolkit) -> None:
    target = tmp_path / "a.txt"
    target.write_text("alpha\n  beta\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "b.bin").write_bytes(b"\x00\x01")
    cases = [
        ({"oldString": "gamma", "newString": "x"}, "`oldString` was not found in a.txt"),
        ({"oldString": "00002|   beta", "newString": "x"}, "line prefixes from read"),
        ({"oldString": "beta\n  ", "newString": "x"}, "only without its leading/trailing"),
        ({"oldString": "alpha", "newString": "alpha"}, "are the same; nothing would change"),
        ({"oldString": "alpha"}, "missing required argument `newString`"),
        ({"oldString": "", "newString": "x"}, "`oldString` is empty"),
        ({"oldString": "alpha", "newString": None}, "`newString` must be a string, got null"),
        (
            {"oldString": "a", "newString": "b", "replaceAll": "yes"},
            "`replaceAll` must be a boolean",
        ),
    ]
    for args, message in cases:
        assert message in err(tk, "edit", path="a.txt", **args)
    assert target.read_text() == "alpha\n  beta\n"
    assert "File not found: nope.txt" in err(
        tk, "edit", path="nope.txt", oldString="a", newString="b"
    )
    assert "d is a directory" in err(tk, "edit", path="d", oldString="a", newString="b")
    assert "b.bin is a binary file" in err(tk, "edit", path="b.bin", oldString="a", newString="b")


def test_edit_keeps_crlf(tmp_path: Path, tk: Toolkit) -> None:
    target = tmp_path / "w.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    ok(tk, "edit", path="w.txt", oldString="one\ntwo", newString="1\n2\n2.5")
    assert target.read_bytes() == b"1\r\n2\r\n2.5\r\nthree\r\n"


# -- apply_patch -----------------------------------------------------------------------


def test_apply_patch_all_operations(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "mod.py").write_text("def f():\n    return 1\n")
    (tmp_path / "old.txt").write_text("bye\n")
    (tmp_path / "ren.txt").write_text("a\nb\n")
    out = ok(
        tk,
        "apply_patch",
        patchText=patch(
            "*** Add File: pkg/new.txt",
            "+hello",
            "+world",
            "*** Update File: mod.py",
            "@@ def f():",
            "-    return 1",
            "+    return 2",
            "*** Delete File: old.txt",
            "*** Update File: ren.txt",
            "*** Move to: moved/ren.txt",
            " a",
            "-b",
            "+B",
            "*** End of File",
        ),
    )
    assert out == "Patch applied:\nA pkg/new.txt\nM mod.py\nD old.txt\nR ren.txt -> moved/ren.txt"
    assert (tmp_path / "pkg/new.txt").read_text() == "hello\nworld\n"
    assert (tmp_path / "mod.py").read_text() == "def f():\n    return 2\n"
    assert not (tmp_path / "old.txt").exists()
    assert not (tmp_path / "ren.txt").exists()
    assert (tmp_path / "moved/ren.txt").read_text() == "a\nB\n"


def test_apply_patch_failure_in_last_file_leaves_first_untouched(
    tmp_path: Path, tk: Toolkit
) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("two\n")
    message = err(
        tk,
        "apply_patch",
        patchText=patch(
            "*** Add File: c.txt",
            "+new",
            "*** Update File: a.txt",
            "-one",
            "+ONE",
            "*** Update File: b.txt",
            "-three",
            "+THREE",
        ),
    )
    assert message.startswith(
        "Patch not applied; no file was changed. b.txt: hunk 1 does not match"
    )
    assert "Expected these lines:\n    three" in message
    assert (tmp_path / "a.txt").read_text() == "one\n"
    assert not (tmp_path / "c.txt").exists()


def test_apply_patch_matches_whole_lines_and_honours_anchors(tmp_path: Path, tk: Toolkit) -> None:
    target = tmp_path / "a.py"
    target.write_text("class A:\n    x = 1\n\nclass B:\n    x = 1\n")
    assert "does not match" in err(
        tk, "apply_patch", patchText=patch("*** Update File: a.py", "-x = 1", "+x = 2")
    )
    ok(
        tk,
        "apply_patch",
        patchText=patch("*** Update File: a.py", "@@ class B:", "-    x = 1", "+    x = 2"),
    )
    assert target.read_text() == "class A:\n    x = 1\n\nclass B:\n    x = 2\n"


def test_apply_patch_two_sections_for_one_file(tmp_path: Path, tk: Toolkit) -> None:
    target = tmp_path / "a.txt"
    target.write_text("1\n2\n")
    two = patch("*** Update File: a.txt", "-1", "+one", "*** Update File: ./a.txt", "-2", "+two")
    ok(tk, "apply_patch", patchText=two)
    assert target.read_text() == "one\ntwo\n"
    bad = patch("*** Update File: a.txt", "-one", "+1", "*** Update File: a.txt", "-zzz", "+y")
    assert "hunk 1 does not match" in err(tk, "apply_patch", patchText=bad)
    assert target.read_text() == "one\ntwo\n"


def test_apply_patch_keeps_crlf(tmp_path: Path, tk: Toolkit) -> None:
    target = tmp_path / "w.txt"
    target.write_bytes(b"a\r\nb\r\n")
    ok(tk, "apply_patch", patchText=patch("*** Update File: w.txt", " a", "-b", "+c", "+d"))
    assert target.read_bytes() == b"a\r\nc\r\nd\r\n"


def test_apply_patch_refuses_paths_outside_and_changes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("x\n")
    tk = file_tools(root)
    for header in ("*** Add File: ../evil.txt", f"*** Add File: {tmp_path / 'evil.txt'}"):
        message = err(
            tk, "apply_patch", patchText=patch("*** Update File: a.txt", "-x", "+y", header, "+z")
        )
        assert "outside the workspace" in message
    move = patch("*** Update File: a.txt", "*** Move to: ../moved.txt", "-x", "+y")
    assert "outside the workspace" in err(tk, "apply_patch", patchText=move)
    assert (root / "a.txt").read_text() == "x\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ws"]


def test_apply_patch_errors(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "b.bin").write_bytes(b"\x00")
    assert "must start with the line '*** Begin Patch'" in err(tk, "apply_patch", patchText="hello")
    assert "d is a directory" in err(tk, "apply_patch", patchText=patch("*** Delete File: d"))
    assert "b.bin is a binary file" in err(
        tk, "apply_patch", patchText=patch("*** Update File: b.bin", "-a", "+b")
    )
    assert "Update File gone.txt: the file does not exist" in err(
        tk, "apply_patch", patchText=patch("*** Update File: gone.txt", "-a", "+b")
    )


def test_apply_patch_write_failure_restores_written_files(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "blocker").write_text("a file where a directory is needed\n")
    message = err(
        tk,
        "apply_patch",
        patchText=patch(
            "*** Update File: a.txt", "-one", "+ONE", "*** Add File: blocker/new.txt", "+x"
        ),
    )
    assert "apply_patch failed while writing blocker/new.txt" in message
    assert "every file already written was restored" in message
    assert (tmp_path / "a.txt").read_text() == "one\n"


# -- confinement -----------------------------------------------------------------------


def test_escapes_are_refused_by_every_tool(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    (root / "link.txt").symlink_to(secret)
    (root / "linkdir").symlink_to(tmp_path)
    tk = file_tools(root)
    for path in ("../secret.txt", str(secret), "link.txt", "linkdir/secret.txt", "linkdir/new.txt"):
        for name, args in [
            ("read", {}),
            ("write", {"content": "x"}),
            ("edit", {"oldString": "top", "newString": "x"}),
        ]:
            assert "outside the workspace" in err(tk, name, path=path, **args)
    assert secret.read_text() == "top secret\n"
    assert not (tmp_path / "new.txt").exists()


def test_skill_dirs_are_readable_but_not_writable(tmp_path: Path) -> None:
    root, skills = tmp_path / "ws", tmp_path / "skills"
    root.mkdir()
    skills.mkdir()
    (skills / "SKILL.md").write_text("---\nname: s\n---\nbody\n")
    settings = BuiltinSettings(root=root.resolve(), read_only=(skills.resolve(),))
    tk = tn.toolkit([BUILTINS[name](settings) for name in MINE])
    assert ok(tk, "read", path=str(skills / "SKILL.md")).startswith("00001| ---\n")
    assert ok(tk, "read", path="../skills/SKILL.md").startswith("00001| ---\n")
    for name, args in [
        ("write", {"path": "../skills/SKILL.md", "content": "x"}),
        ("edit", {"path": "../skills/SKILL.md", "oldString": "body", "newString": "x"}),
        ("apply_patch", {"patchText": patch("*** Delete File: ../skills/SKILL.md")}),
    ]:
        assert "read-only skill directory" in err(tk, name, **args)
    assert (skills / "SKILL.md").read_text() == "---\nname: s\n---\nbody\n"


def test_confine_false_lifts_confinement(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    tk = file_tools(root, confine=False)
    ok(tk, "write", path="../outside.txt", content="ok\n")
    assert (tmp_path / "outside.txt").read_text() == "ok\n"


# -- hostile arguments -----------------------------------------------------------------

HOSTILE: list[Any] = [
    None,
    [],
    ["a.txt"],
    {},
    {"path": "a.txt"},
    0,
    -1,
    2.5,
    1e308,
    float("nan"),
    float("inf"),
    True,
    "",
    "x" * 100_000,
    "n" * 300,  # longer than a file name may be
    "d/" * 2100,
    "../../etc/passwd",
    "/etc/passwd",
    "a\x00b",
    "~nosuchuser_zz/x",
    "\ud800",
]


def test_hostile_arguments_never_raise(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    base = {
        "read": {"path": "a.txt"},
        "write": {"path": "w.txt", "content": "c"},
        "edit": {"path": "a.txt", "oldString": "alpha", "newString": "beta"},
        "apply_patch": {"patchText": patch("*** Update File: a.txt", "-alpha", "+beta")},
    }
    for name, good in base.items():
        for whole in (None, "a.txt", ["a.txt"], 42):
            result = tn.execute(tk, name, whole)
            assert isinstance(result, ToolResult) and result.is_error
        for key in good:
            for value in HOSTILE:
                result = tn.execute(tk, name, good | {key: value})
                assert isinstance(result, ToolResult)
                assert "Traceback" not in result.output
                assert f"Tool {name!r} failed" not in result.output, (name, key, result.output)
                assert len(result.output) < 20_000
                if not isinstance(value, str):
                    assert result.is_error, (name, key, value)
    assert not any(p.name.endswith(".tmp") for p in tmp_path.rglob("*"))
    assert not Path(os.sep, "etc", "passwd").read_text().startswith("c")


def test_special_files_and_oversized_loads_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "big.txt").write_text("0123456789" * 3)
    tk = file_tools(tmp_path, limits=tn.Limits(max_read_bytes=10))
    assert "pipe is not a regular file" in err(tk, "read", path="pipe")
    message = err(tk, "edit", path="big.txt", oldString="0", newString="x", replaceAll=True)
    assert "big.txt is 30 bytes, more than the 10 bytes" in message
    assert ok(tk, "read", path="big.txt").startswith("00001| 0123")  # read streams instead


# -- concurrent calls on one file --------------------------------------------------------

FILLER = "filler line\n" * 200_000  # a file big enough that unlocked edits overlap


async def test_concurrent_edits_of_one_file_keep_both(tmp_path: Path, tk: Toolkit) -> None:
    target = tmp_path / "big.txt"
    for _ in range(4):
        target.write_text("AAA\n" + FILLER + "BBB\n")
        first, second = await asyncio.gather(
            tn.execute_async(tk, "edit", {"path": "big.txt", "oldString": "AAA", "newString": "a"}),
            tn.execute_async(tk, "edit", {"path": "big.txt", "oldString": "BBB", "newString": "b"}),
        )
        assert not first.is_error and not second.is_error
        assert target.read_text() == "a\n" + FILLER + "b\n"


async def test_concurrent_patch_and_edit_keep_both(tmp_path: Path, tk: Toolkit) -> None:
    big, other = tmp_path / "big.txt", tmp_path / "other.txt"
    for _ in range(2):
        big.write_text("AAA\n" + FILLER + "BBB\n")
        other.write_text("one\n")
        patch_text = patch(
            "*** Update File: other.txt", "-one", "+two", "*** Update File: big.txt", "-BBB", "+b"
        )
        patched, edited = await asyncio.gather(
            tn.execute_async(tk, "apply_patch", {"patchText": patch_text}),
            tn.execute_async(tk, "edit", {"path": "big.txt", "oldString": "AAA", "newString": "a"}),
        )
        assert not patched.is_error, patched.output
        assert not edited.is_error, edited.output
        assert big.read_text() == "a\n" + FILLER + "b\n"
        assert other.read_text() == "two\n"


def test_huge_offsets_and_limits_name_the_field(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    message = err(tk, "read", path="a.txt", offset=10**400)
    assert "`offset` must be at most 1000000000, got about 1e400" in message
    assert "`limit` must be at most" in err(tk, "read", path="a.txt", limit=10**400)
    assert "`limit` must be 1 or more, got about -1e400" in err(
        tk, "read", path="a.txt", limit=-(10**400)
    )
    assert "`offset` must be at most" in err(tk, "read", path="a.txt", offset=1e300)


def test_ambiguous_edit_on_one_line_names_the_line_once(tmp_path: Path, tk: Toolkit) -> None:
    (tmp_path / "a.txt").write_text("x = x + x\nend\n")
    message = err(tk, "edit", path="a.txt", oldString="x", newString="y")
    assert "occurs 3 times in a.txt (line 1); the file is unchanged" in message
    out = ok(tk, "edit", path="a.txt", oldString="x", newString="y", replaceAll=True)
    assert out == "Edited a.txt: replaced 3 occurrences (line 1)."
