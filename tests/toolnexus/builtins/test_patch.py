"""The pure patch core: parsing the grammar and applying hunks, with no files involved."""

from __future__ import annotations

import pytest

from toolnexus.builtins._patch import (
    AddFile,
    DeleteFile,
    Hunk,
    PatchError,
    UpdateFile,
    apply_hunks,
    parse_patch,
    plan_patch,
)


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


# -- parsing ---------------------------------------------------------------------------


def test_parse_all_three_operations() -> None:
    ops = parse_patch(
        patch(
            "*** Add File: new.txt",
            "+hello",
            "+",
            "*** Update File: src/a.py",
            "*** Move to: src/b.py",
            "@@ def f():",
            "     x = 1",
            "-    return x",
            "+    return x + 1",
            "*** End of File",
            "*** Delete File: old.txt",
        )
    )
    assert ops == [
        AddFile("new.txt", "hello\n\n"),
        UpdateFile(
            "src/a.py",
            (
                Hunk(
                    ((" ", "    x = 1"), ("-", "    return x"), ("+", "    return x + 1")),
                    ("def f():",),
                    end_of_file=True,
                ),
            ),
            move_to="src/b.py",
        ),
        DeleteFile("old.txt"),
    ]


def test_parse_hunks_split_by_at_lines_and_nested_anchors() -> None:
    (op,) = parse_patch(
        patch(
            "*** Update File: a",
            "-first",
            "+FIRST",
            "@@ class A:",
            "@@     def f(self):",
            "-x",
            "+y",
            "@@",
            " ctx",
            "+z",
        )
    )
    assert isinstance(op, UpdateFile)
    assert [h.anchors for h in op.hunks] == [(), ("class A:", "def f(self):"), ()]
    assert [h.old for h in op.hunks] == [["first"], ["x"], ["ctx"]]
    assert [h.new for h in op.hunks] == [["FIRST"], ["y"], ["ctx", "z"]]


def test_parse_unified_diff_header_is_not_an_anchor() -> None:
    (op,) = parse_patch(patch("*** Update File: a", "@@ -1,2 +1,2 @@", "-a", "+b"))
    assert isinstance(op, UpdateFile)
    assert op.hunks[0].anchors == ()
    (op,) = parse_patch(patch("*** Update File: a", "@@ -3 +3 @@ def g():", "-a", "+b"))
    assert isinstance(op, UpdateFile)
    assert op.hunks[0].anchors == ("def g():",)


def test_parse_tolerates_heredoc_fence_crlf_and_blank_edges() -> None:
    body = patch("*** Add File: x", "+1")
    expected = [AddFile("x", "1\n")]
    assert parse_patch("\n\n" + body + "\n\n") == expected
    assert parse_patch("<<'EOF'\n" + body + "EOF\n") == expected
    assert parse_patch("```diff\n" + body + "```") == expected
    assert parse_patch(body.replace("\n", "\r\n")) == expected


def test_parse_blank_line_in_hunk_is_empty_context() -> None:
    (op,) = parse_patch(patch("*** Update File: a", " one", "", "-two", "+2"))
    assert isinstance(op, UpdateFile)
    assert op.hunks[0].lines == ((" ", "one"), (" ", ""), ("-", "two"), ("+", "2"))


def test_parse_pure_rename_needs_no_hunks() -> None:
    assert parse_patch(patch("*** Update File: a", "*** Move to: b")) == [
        UpdateFile("a", (), move_to="b")
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "must start with the line '*** Begin Patch'"),
        ("*** Add File: x\n+1\n*** End Patch", "must start with the line '*** Begin Patch'"),
        ("*** Begin Patch\n*** Add File: x\n+1\n", "must end with the line '*** End Patch'"),
        (patch(), "changes no files"),
        (patch("*** Frobnicate File: x"), "patch line 2: expected '*** Add File: '"),
        (patch("*** Add File: x", "no plus"), "patch line 3: every line of '*** Add File: x'"),
        (patch("*** Add File:   "), "'*** Add File:' needs a file path"),
        (patch("*** Update File: a"), "'*** Update File: a' has no hunks"),
        (patch("*** Update File: a", "@@ f", " ctx"), "would change nothing"),
        (patch("*** Update File: a", "@@ anchor only"), "has no lines"),
        (patch("*** Update File: a", "-x", "?x"), "patch line 4: a hunk line of 'a' must start"),
        (patch("*** Delete File: a", "+x"), "takes no lines"),
    ],
)
def test_parse_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(PatchError, match=None) as info:
        parse_patch(text)
    assert message in str(info.value)


# -- applying --------------------------------------------------------------------------


def hunk(*lines: str, anchors: tuple[str, ...] = (), eof: bool = False) -> Hunk:
    return Hunk(tuple((line[0], line[1:]) for line in lines), anchors, eof)


def test_apply_replaces_whole_lines_only() -> None:
    text = "foobar\nfoo\n"
    assert apply_hunks(text, [hunk("-foo", "+baz")]) == "foobar\nbaz\n"


def test_apply_hunk_not_matching_whole_line_fails_with_expected_lines() -> None:
    with pytest.raises(PatchError) as info:
        apply_hunks("foobar\n", [hunk(" foo", "-bar", "+x")], "src/a.py")
    message = str(info.value)
    assert "src/a.py: hunk 1 does not match" in message
    assert "    foo\n    bar" in message


def test_anchor_picks_the_right_occurrence() -> None:
    text = "def a():\n    return 1\n\ndef b():\n    return 1\n"
    out = apply_hunks(text, [hunk("-    return 1", "+    return 2", anchors=("def b():",))])
    assert out == "def a():\n    return 1\n\ndef b():\n    return 2\n"


def test_anchor_repeated_as_first_context_line_still_matches() -> None:
    text = "x\ndef b():\n    return 1\n"
    out = apply_hunks(
        text, [hunk(" def b():", "-    return 1", "+    pass", anchors=("def b():",))]
    )
    assert out == "x\ndef b():\n    pass\n"


def test_missing_anchor_is_an_error() -> None:
    with pytest.raises(PatchError, match="anchor line 'def zzz'"):
        apply_hunks("a\n", [hunk("-a", "+b", anchors=("def zzz",))])


def test_hunks_apply_in_order_after_each_other() -> None:
    text = "x\ny\nx\nz\n"
    out = apply_hunks(text, [hunk("-x", " y", "+1"), hunk("-x", "+2")])
    assert out == "y\n1\n2\nz\n"


def test_ambiguous_context_is_refused() -> None:
    text = "def a():\n    return 1\n\ndef b():\n    return 1\n"
    with pytest.raises(PatchError) as info:
        apply_hunks(text, [hunk("-    return 1", "+    return 2")], "m.py")
    assert "m.py: hunk 1 matches more than once (at lines 2 and 5)" in str(info.value)
    assert "'@@'" in str(info.value)


def test_an_anchor_or_more_context_makes_a_hunk_unique() -> None:
    text = "def a():\n    return 1\n\ndef b():\n    return 1\n"
    want = "def a():\n    return 1\n\ndef b():\n    return 2\n"
    assert (
        apply_hunks(text, [hunk("-    return 1", "+    return 2", anchors=("def b():",))]) == want
    )
    assert apply_hunks(text, [hunk(" def b():", "-    return 1", "+    return 2")]) == want


def test_overlapping_hunks_are_refused() -> None:
    with pytest.raises(PatchError, match="hunks 1 and 2 change overlapping lines"):
        apply_hunks("a\nb\nc\n", [hunk("-b", " c", "+B"), hunk(" a", "-b", "+X")])


def test_many_hunks_on_a_long_file_apply_in_order() -> None:
    lines = [f"line {i}" for i in range(4000)]
    hunks = [hunk(f" line {i}", f"-line {i + 1}", f"+LINE {i + 1}") for i in range(0, 4000, 2)]
    out = apply_hunks("\n".join(lines) + "\n", hunks).splitlines()
    assert out[:4] == ["line 0", "LINE 1", "line 2", "LINE 3"]
    assert out[-1] == "LINE 3999"


def test_out_of_order_hunk_accepted_when_unique() -> None:
    text = "a\nb\nc\n"
    out = apply_hunks(text, [hunk("-c", "+C"), hunk("-a", "+A")])
    assert out == "A\nb\nC\n"


def test_end_of_file_hunk_matches_the_last_lines() -> None:
    text = "end\nmiddle\nend\n"
    out = apply_hunks(text, [hunk("-end", "+END", eof=True)])
    assert out == "end\nmiddle\nEND\n"


def test_pure_addition_appends_at_end_or_after_anchor() -> None:
    assert apply_hunks("a\nb\n", [hunk("+c")]) == "a\nb\nc\n"
    assert apply_hunks("a\nb\n", [hunk("+x", anchors=("a",))]) == "a\nx\nb\n"


def test_whitespace_fallback_keeps_file_text_for_context() -> None:
    text = "keep   \nold\n"
    out = apply_hunks(text, [hunk(" keep", "-old", "+new")])
    assert out == "keep   \nnew\n"


def test_trailing_blank_context_line_is_forgiven() -> None:
    assert apply_hunks("a\nb", [hunk("-b", "+c", " ")]) == "a\nc"


def test_crlf_stays_crlf_and_mixed_endings_are_kept() -> None:
    assert apply_hunks("a\r\nb\r\n", [hunk(" a", "-b", "+c", "+d")]) == "a\r\nc\r\nd\r\n"
    assert apply_hunks("a\r\nb\nc\n", [hunk("-c", "+C")]) == "a\r\nb\nC\r\n"


def test_final_newline_state_is_kept() -> None:
    assert apply_hunks("a\nb", [hunk(" b", "+c")]) == "a\nb\nc"
    assert apply_hunks("a\nb\n", [hunk("-b")]) == "a\n"
    assert apply_hunks("", [hunk("+first")]) == "first\n"
    assert apply_hunks("only\n", [hunk("-only")]) == ""


# -- planning a whole patch ------------------------------------------------------------


def test_plan_is_all_or_nothing_and_reports_the_failing_file() -> None:
    files = {"a": "1\n", "b": "2\n"}
    ops = parse_patch(
        patch("*** Update File: a", "-1", "+one", "*** Update File: b", "-nope", "+two")
    )
    with pytest.raises(PatchError, match="b: hunk 1 does not match"):
        plan_patch(ops, files.get)
    assert files == {"a": "1\n", "b": "2\n"}


def test_plan_two_updates_of_one_file_both_apply() -> None:
    files = {"a": "1\n2\n"}
    ops = parse_patch(
        patch("*** Update File: a", "-1", "+one", "*** Update File: ./a", "-2", "+two")
    )
    plan = plan_patch(ops, files.get, resolve=lambda p: p.removeprefix("./"))
    assert plan.changes == {"a": "one\ntwo\n"}
    assert plan.summary == ("M a", "M ./a")


def test_plan_second_update_failing_fails_the_whole_patch() -> None:
    ops = parse_patch(patch("*** Update File: a", "-1", "+one", "*** Update File: a", "-1", "+x"))
    with pytest.raises(PatchError, match="a: hunk 1 does not match"):
        plan_patch(ops, {"a": "1\n"}.get)


def test_plan_add_delete_move() -> None:
    files = {"old": "x\n", "gone": "bye\n"}
    ops = parse_patch(
        patch(
            "*** Add File: new",
            "+hi",
            "*** Delete File: gone",
            "*** Update File: old",
            "*** Move to: moved",
            "-x",
            "+y",
        )
    )
    plan = plan_patch(ops, files.get)
    assert plan.changes == {"new": "hi\n", "gone": None, "old": None, "moved": "y\n"}
    assert plan.summary == ("A new", "D gone", "R old -> moved")


@pytest.mark.parametrize(
    ("body", "files", "message"),
    [
        (("*** Add File: a", "+x"), {"a": "here\n"}, "Add File a: the file already exists"),
        (("*** Delete File: a",), {}, "Delete File a: the file does not exist"),
        (("*** Update File: a", "-x", "+y"), {}, "Update File a: the file does not exist"),
        (("*** Update File: a", "*** Move to: b"), {"a": "", "b": ""}, "Move to b: the file"),
    ],
)
def test_plan_errors(body: tuple[str, ...], files: dict[str, str], message: str) -> None:
    with pytest.raises(PatchError) as info:
        plan_patch(parse_patch(patch(*body)), files.get)
    assert message in str(info.value)


def test_plan_delete_then_add_same_file_is_allowed() -> None:
    ops = parse_patch(patch("*** Delete File: a", "*** Add File: a", "+fresh"))
    assert plan_patch(ops, {"a": "stale\n"}.get).changes == {"a": "fresh\n"}


def test_plan_resolve_can_refuse_a_path() -> None:
    def resolve(path: str) -> str:
        if path.startswith(".."):
            raise PatchError(f"{path} is outside")
        return path

    ops = parse_patch(patch("*** Update File: a", "*** Move to: ../b"))
    with pytest.raises(PatchError, match=r"\.\./b is outside"):
        plan_patch(ops, {"a": "x\n"}.get, resolve)


def test_leading_whitespace_is_significant_in_hunks() -> None:
    with pytest.raises(PatchError, match="hunk 1 does not match"):
        apply_hunks("    x = 1\n", [hunk("-x = 1", "+x = 2")])


def test_indented_anchor_matches_regardless_of_indentation() -> None:
    method = "    def f(self):\n        return 1\n"
    text = f"class A:\n{method}class B:\n{method}"
    out = apply_hunks(
        text, [hunk("-        return 1", "+        return 2", anchors=("class B:", "def f(self):"))]
    )
    assert out.endswith("class B:\n    def f(self):\n        return 2\n")
    assert out.startswith("class A:\n    def f(self):\n        return 1\n")


def test_error_messages_stay_short_for_huge_lines() -> None:
    huge = "y" * 100_000
    with pytest.raises(PatchError) as info:
        parse_patch(patch("*** Add File: a", huge))
    assert len(str(info.value)) < 500
    with pytest.raises(PatchError) as info:
        parse_patch(patch("*** Add File: " + huge, "+x"))
    assert "the path is too long (100000 characters)" in str(info.value)
    with pytest.raises(PatchError) as info:
        apply_hunks("a\n", [hunk("-" + huge, "+b")])
    assert len(str(info.value)) < 500


def test_no_newline_marker_from_unified_diffs_is_ignored() -> None:
    (op,) = parse_patch(patch("*** Update File: a", "-x", "\\ No newline at end of file", "+y"))
    assert isinstance(op, UpdateFile)
    assert op.hunks[0].lines == (("-", "x"), ("+", "y"))


@pytest.mark.parametrize("pad", ["  ", "\t", " "])
def test_padded_file_headers_are_accepted_like_padded_markers(pad: str) -> None:
    ops = parse_patch(
        patch(
            f"{pad}*** Update File: a.py",
            f"{pad}*** Move to: b.py",
            "-x",
            "+y",
            f"{pad}*** Add File: c.py",
            "+z",
            f"{pad}*** Delete File: d.py",
        )
    )
    assert ops == [
        UpdateFile("a.py", (Hunk((("-", "x"), ("+", "y"))),), move_to="b.py"),
        AddFile("c.py", "z\n"),
        DeleteFile("d.py"),
    ]


@pytest.mark.parametrize(
    "header",
    [
        "*** Add File: newdir/",
        "*** Update File: src/",
        "*** Delete File: old/",
        "*** Add File: x\\",
    ],
)
def test_a_path_ending_in_a_separator_is_refused(header: str) -> None:
    body = [header, "+x"] if "Add" in header else [header]
    if "Update" in header:
        body += ["-a", "+b"]
    with pytest.raises(PatchError, match="names a directory"):
        parse_patch(patch(*body))
