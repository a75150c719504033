"""Skills: discovery, the `skill` tool's byte-exact output and the `skills_prompt` catalog."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import toolnexus as tn
from toolnexus import Skill, list_skills, skills_prompt
from toolnexus._skill_tool import skill_tool

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "skills"
FIXTURES = ROOT / "tests" / "fixtures"

CATALOG_HEADER = (
    "Skills provide specialized instructions and workflows for specific tasks.\n"
    "Use the skill tool to load a skill when a task matches its description.\n"
    "\n"
    "## Available Skills\n"
)


def write_skill(base: Path, rel: str, frontmatter: str | None, body: str = "Do the thing.") -> Path:
    """Create ``base/rel/SKILL.md``; ``frontmatter`` is the text between the fences."""
    folder = base / rel
    folder.mkdir(parents=True, exist_ok=True)
    text = body if frontmatter is None else f"---\n{frontmatter}\n---\n{body}\n"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return folder


def expected_block(name: str, body: str, directory: Path, files: list[Path] | None) -> str:
    """The skill tool's output, written out from the contract's rules."""
    head = (
        f'<skill_content name="{name}">\n# Skill: {name}\n\n{body}\n\n'
        f"Base directory for this skill: {directory.as_uri()}\n"
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this "
        "base directory."
    )
    if files is None:
        return head + "\n</skill_content>"
    listed = "\n".join(f"<file>{f}</file>" for f in files) if files else ""
    return (
        head
        + "\nNote: file list is sampled.\n\n<skill_files>\n"
        + listed
        + "\n</skill_files>\n</skill_content>"
    )


def load(tk: tn.Toolkit, name: str) -> tn.ToolResult:
    return tn.execute(tk, "skill", {"name": name})


# --- the contract ----------------------------------------------------------------------------


def test_hello_world_output_is_byte_exact() -> None:
    tk = tn.build(skills=str(EXAMPLES), builtins=False)
    result = load(tk, "hello-world")

    directory = EXAMPLES / "hello-world"
    text = (directory / "SKILL.md").read_text(encoding="utf-8")
    body = text.split("---\n", 2)[2].strip()
    expected = expected_block("hello-world", body, directory, [directory / "scripts" / "greet.sh"])
    assert result.is_error is False
    assert result.output == expected
    assert not result.output.endswith("\n")
    assert f"file://{directory}" in result.output
    assert result.metadata == {"name": "hello-world", "directory": str(directory)}


def test_skill_tool_declaration_matches_the_contract() -> None:
    tk = tn.build(skills=EXAMPLES, builtins=False)
    contract = json.loads((FIXTURES / "builtins.json").read_text())["skill"]
    tool = tk["skill"]
    assert tool.source == "skill"
    assert dict(tool.input_schema) == contract
    assert "hello-world" not in tool.description  # the catalog goes out once, in the prompt
    assert "Available Skills" in tool.description
    assert "load" in tool.description.lower()
    [declarations] = tn.to_gemini(tk)
    assert declarations["functionDeclarations"][0]["parameters"] == contract


def test_bad_arguments_are_error_results_naming_the_field() -> None:
    tk = tn.build(skills=EXAMPLES, builtins=False)
    missing = tn.execute(tk, "skill", {})
    assert missing.is_error and "name" in missing.output
    extra = tn.execute(tk, "skill", {"name": "hello-world", "path": "x"})
    assert extra.is_error and "path" in extra.output
    wrong_type = tn.execute(tk, "skill", {"name": 3})
    assert wrong_type.is_error and "name" in wrong_type.output


def test_unknown_skill_lists_sorted_names(tmp_path: Path) -> None:
    for name in ("charlie", "alpha", "bravo"):
        write_skill(tmp_path, f"dir-{name}", f"name: {name}")
    tk = tn.build(skills=tmp_path, builtins=False)
    result = load(tk, "delta")
    assert result.is_error
    assert result.output == 'Skill "delta" not found. Available skills: alpha, bravo, charlie'


def test_relative_skills_dir_gives_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write_skill(tmp_path / "skills", "rel", "name: rel\ndescription: d", "Body.")
    (folder / "notes.txt").write_text("n")
    monkeypatch.chdir(tmp_path)

    [skill] = list_skills("skills").skills
    assert skill.directory == folder and skill.directory.is_absolute()
    assert skill.path == folder / "SKILL.md"

    tk = tn.build(skills="skills", builtins=False)
    output = load(tk, "rel").output
    assert output == expected_block("rel", "Body.", folder, [folder / "notes.txt"])
    assert f"file://{folder}\n" in output


def test_directory_uri_is_percent_encoded(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "with space", "name: spaced")
    output = load(tn.build(skills=tmp_path, builtins=False), "spaced").output
    assert f"file://{tmp_path}/with%20space\n" in output
    assert folder.as_uri() in output


# --- frontmatter ----------------------------------------------------------------------------


def test_no_description(tmp_path: Path) -> None:
    write_skill(tmp_path, "a", "name: plain")
    write_skill(tmp_path, "b", "name: nulled\ndescription: null")
    write_skill(tmp_path, "c", "name: tilde\ndescription: ~")
    write_skill(tmp_path, "d", "name: empty\ndescription:")
    write_skill(tmp_path, "e", "name: blank\ndescription: '  '")
    inventory = list_skills(tmp_path)
    assert [(s.name, s.description) for s in inventory.skills] == [
        ("plain", None),
        ("nulled", None),
        ("tilde", None),
        ("empty", None),
        ("blank", None),
    ]
    assert inventory.skipped == ()
    assert skills_prompt(inventory.skills) == ""


def test_scalars_keep_the_authors_text(tmp_path: Path) -> None:
    write_skill(tmp_path, "a", "name: 010\ndescription: yes")
    write_skill(tmp_path, "b", "name: 1.50\ndescription: 2024-01-05")
    write_skill(tmp_path, "c", "name: 'quoted 007'\ndescription: \"  on  \"")
    write_skill(tmp_path, "d", "name: !!str 0x1F\ndescription: !!int 12")
    write_skill(tmp_path, "e", "name: with-comment # not part of it\ndescription: .inf")
    skills = list_skills(tmp_path).skills
    assert [(s.name, s.description) for s in skills] == [
        ("010", "yes"),
        ("1.50", "2024-01-05"),
        ("quoted 007", "on"),
        ("0x1F", "12"),
        ("with-comment", ".inf"),
    ]


def test_folded_and_literal_descriptions(tmp_path: Path) -> None:
    write_skill(tmp_path, "f", "name: folded\ndescription: >\n  Folds these\n  two lines.\n")
    write_skill(tmp_path, "l", "name: literal\ndescription: |\n  Keeps\n    these  lines.\n")
    skills = list_skills(tmp_path).skills
    assert [s.description for s in skills] == ["Folds these two lines.", "Keeps\n  these  lines."]
    assert skills_prompt(skills) == (
        CATALOG_HEADER + "- **folded**: Folds these two lines.\n- **literal**: Keeps these lines."
    )
    assert "literal" not in skill_tool(skills).description  # listed once, in the prompt


def test_body_after_frontmatter_is_stripped_and_crlf_and_bom_are_read(tmp_path: Path) -> None:
    folder = tmp_path / "crlf"
    folder.mkdir()
    raw = "\ufeff---\r\nname: crlf\r\n---\r\n\r\n  Line one.\r\nLine two.\r\n\r\n"
    (folder / "SKILL.md").write_bytes(raw.encode("utf-8"))
    write_skill(tmp_path, "empty", "name: empty-body", body="")
    crlf, empty = list_skills(tmp_path).skills
    assert crlf.name == "crlf" and crlf.body == "Line one.\nLine two."
    assert empty.body == ""
    output = load(tn.build(skills=tmp_path, builtins=False), "empty-body").output
    assert output == expected_block("empty-body", "", tmp_path / "empty", [])


def test_extra_keys_and_a_dashed_rule_in_the_body(tmp_path: Path) -> None:
    write_skill(
        tmp_path,
        "x",
        "name: x\nlicense: MIT\nmetadata:\n  owner: me\nallowed-tools: [bash]",
        body="Intro\n\n---\n\nAfter a rule.",
    )
    [skill] = list_skills(tmp_path).skills
    assert skill.body == "Intro\n\n---\n\nAfter a rule."


@pytest.mark.parametrize(
    ("frontmatter", "reason", "detail"),
    [
        ("description: no name", "missing-name", "no `name`"),
        ("name:\ndescription: empty name", "missing-name", "no `name`"),
        ("name: ''", "missing-name", "no `name`"),
        ("name: [a, b]", "missing-name", "`name` must be text, not a list"),
        ("name:\n  first: a", "missing-name", "`name` must be text, not a map"),
        ("name: ok\ndescription: [a]", "malformed-frontmatter", "`description` must be text"),
        ("name: [unclosed", "malformed-frontmatter", "invalid YAML"),
        ("name: a\n  bad: indent: here", "malformed-frontmatter", "line 3 of the file"),
        ("name: a\n\tdescription: tab", "malformed-frontmatter", "invalid YAML"),
        ("- just\n- a list", "malformed-frontmatter", "a YAML map"),
        ("plain text", "malformed-frontmatter", "a YAML map"),
        ("name: !custom x", "malformed-frontmatter", "invalid YAML"),
        ("", "missing-name", "no `name`"),
    ],
)
def test_bad_frontmatter_is_skipped_with_a_reason(
    tmp_path: Path, frontmatter: str, reason: str, detail: str
) -> None:
    folder = write_skill(tmp_path, "bad", frontmatter)
    write_skill(tmp_path, "good", "name: good")
    inventory = list_skills(tmp_path)
    assert [s.name for s in inventory.skills] == ["good"]
    [skipped] = inventory.skipped
    assert skipped.path == folder / "SKILL.md"
    assert skipped.reason == reason
    assert detail in skipped.detail


def test_missing_fences(tmp_path: Path) -> None:
    unclosed = tmp_path / "unclosed"
    unclosed.mkdir()
    (unclosed / "SKILL.md").write_text("---\nname: unclosed\n\nBody without a closing fence.\n")
    only_fence = tmp_path / "only-fence"
    only_fence.mkdir()
    (only_fence / "SKILL.md").write_text("---")
    write_skill(tmp_path, "no-frontmatter", None, body="# Just markdown\n")
    skipped = {s.path.parent.name: s for s in list_skills(tmp_path).skipped}
    assert skipped["unclosed"].reason == "malformed-frontmatter"
    assert "closing `---`" in skipped["unclosed"].detail
    assert skipped["only-fence"].reason == "malformed-frontmatter"
    assert skipped["no-frontmatter"].reason == "missing-name"


def test_non_utf8_file_is_unreadable(tmp_path: Path) -> None:
    folder = tmp_path / "latin1"
    folder.mkdir()
    (folder / "SKILL.md").write_bytes("---\nname: caf\xe9\n---\n".encode("latin-1"))
    [skipped] = list_skills(tmp_path).skipped
    assert skipped.reason == "unreadable"
    assert "UTF-8" in skipped.detail and "0xe9" in skipped.detail


def test_dangling_skill_symlink_is_unreadable(tmp_path: Path) -> None:
    folder = tmp_path / "gone"
    folder.mkdir()
    (folder / "SKILL.md").symlink_to(tmp_path / "nowhere.md")
    [skipped] = list_skills(tmp_path).skipped
    assert skipped.reason == "unreadable"
    assert skipped.path == folder / "SKILL.md"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_permission_denied_is_unreadable(tmp_path: Path) -> None:
    locked = write_skill(tmp_path, "locked", "name: locked") / "SKILL.md"
    locked.chmod(0)
    if os.access(locked, os.R_OK):
        locked.chmod(0o644)
        pytest.skip("this user reads any file (root)")
    closed_dir = tmp_path / "closed"
    write_skill(closed_dir, "inner", "name: inner")
    closed_dir.chmod(0)
    try:
        inventory = list_skills(tmp_path)
    finally:
        closed_dir.chmod(0o755)
        locked.chmod(0o644)
    assert inventory.skills == ()
    assert {(s.path, s.reason) for s in inventory.skipped} == {
        (locked, "unreadable"),
        (closed_dir, "unreadable"),
    }


# --- discovery ------------------------------------------------------------------------------


def test_duplicate_names_keep_the_first_and_warn(tmp_path: Path) -> None:
    first = write_skill(tmp_path, "a", "name: same\ndescription: first")
    second = write_skill(tmp_path, "b", "name: same\ndescription: second")
    with pytest.warns(UserWarning, match="already taken") as caught:
        inventory = list_skills(tmp_path)
    assert str(second / "SKILL.md") in str(caught[0].message)
    assert caught[0].filename == __file__
    [skill] = inventory.skills
    assert skill.directory == first and skill.description == "first"
    [skipped] = inventory.skipped
    assert (skipped.path, skipped.reason) == (second / "SKILL.md", "duplicate-name")
    assert str(first / "SKILL.md") in skipped.detail

    with pytest.warns(UserWarning, match="already taken"):
        tk = tn.build(skills=tmp_path, builtins=False)
    assert tk.skills == (skill,)
    assert "first" in tn.skills_prompt(tk) and "second" not in tn.skills_prompt(tk)


def test_duplicates_across_skills_dirs_keep_the_first_dir(tmp_path: Path) -> None:
    write_skill(tmp_path / "z-first", "s", "name: s\ndescription: from z")
    write_skill(tmp_path / "a-second", "s", "name: s\ndescription: from a")
    with pytest.warns(UserWarning):
        inventory = list_skills([tmp_path / "z-first", tmp_path / "a-second"])
    assert [s.description for s in inventory.skills] == ["from z"]


def test_nested_skills_are_found_in_sorted_order(tmp_path: Path) -> None:
    write_skill(tmp_path, "b/deep/er/still", "name: deep")
    write_skill(tmp_path, "a", "name: outer")
    write_skill(tmp_path, "a/sub", "name: inner")
    write_skill(tmp_path, "c", "name: last")
    (tmp_path / "b" / "README.md").write_text("not a skill")
    inventory = list_skills(tmp_path)
    assert [s.name for s in inventory.skills] == ["outer", "inner", "deep", "last"]
    assert inventory.skills[2].directory == tmp_path / "b/deep/er/still"
    # The outer skill lists the nested skill's files as its own.
    output = load(tn.build(skills=tmp_path, builtins=False), "outer").output
    assert f"<file>{tmp_path / 'a/sub/SKILL.md'}</file>" in output


def test_symlinked_dir_and_symlinked_skill_file(tmp_path: Path) -> None:
    elsewhere = write_skill(tmp_path / "elsewhere", "linked", "name: linked-dir")
    (elsewhere / "tool.py").write_text("print()")
    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / "via-link").symlink_to(elsewhere, target_is_directory=True)
    (skills / "file-link").mkdir()
    real_md = tmp_path / "elsewhere" / "kept.md"
    real_md.write_text("---\nname: linked-file\ndescription: via a symlinked SKILL.md\n---\nB")
    (skills / "file-link" / "SKILL.md").symlink_to(real_md)

    by_name = {s.name: s for s in list_skills(skills).skills}
    assert set(by_name) == {"linked-dir", "linked-file"}
    # Paths keep the symlinks the user sees.
    assert by_name["linked-dir"].directory == skills / "via-link"
    assert by_name["linked-file"].path == skills / "file-link" / "SKILL.md"
    assert by_name["linked-file"].body == "B"
    output = load(tn.build(skills=skills, builtins=False), "linked-dir").output
    assert f"<file>{skills / 'via-link' / 'tool.py'}</file>" in output


def test_symlink_cycle_terminates(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "loop", "name: loop")
    (folder / "again").symlink_to(tmp_path, target_is_directory=True)
    (folder / "self").symlink_to(folder, target_is_directory=True)
    (folder / "data.txt").write_text("x")
    inventory = list_skills(tmp_path)
    assert [s.name for s in inventory.skills] == ["loop"]
    assert inventory.skipped == ()
    output = load(tn.build(skills=tmp_path, builtins=False), "loop").output
    assert output.count("<file>") == 1


def test_same_tree_given_twice_is_not_a_duplicate(tmp_path: Path) -> None:
    write_skill(tmp_path, "one", "name: one")
    inventory = list_skills([tmp_path, tmp_path / "one"])
    assert [s.name for s in inventory.skills] == ["one"]
    assert inventory.skipped == ()


@pytest.mark.parametrize("kind", ["empty", "missing"])
def test_empty_or_missing_skills_dir_gives_no_skill_tool(tmp_path: Path, kind: str) -> None:
    skills = tmp_path / "skills"
    if kind == "empty":
        skills.mkdir()
        tk = tn.build(skills=skills, builtins=False)
    else:  # skipped with a warning, by build as by the CLI's --skills
        with pytest.warns(UserWarning, match="skills directory does not exist"):
            tk = tn.build(skills=skills, builtins=False)
    assert "skill" not in tk
    assert tk.skills == ()
    assert tn.to_gemini(tk) == [{"functionDeclarations": []}]
    assert tn.skills_prompt(tk) == ""
    inventory = list_skills(skills)
    assert inventory.skills == ()
    if kind == "missing":
        [skipped] = inventory.skipped
        assert (skipped.path, skipped.reason) == (skills, "unreadable")
        assert skipped.detail == "skills directory does not exist"
    else:
        assert inventory.skipped == ()


def test_a_file_given_as_skills_dir_is_reported(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("x")
    [skipped] = list_skills(not_a_dir).skipped
    assert skipped.detail == "skills directory is not a directory"


def test_thousand_skills_are_discovered(tmp_path: Path) -> None:
    for i in range(1000):
        folder = tmp_path / f"skill-{i:04d}"
        (folder / "scripts").mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04d}\ndescription: Skill number {i}.\n---\nDo step {i}.\n"
        )
        (folder / "scripts" / "run.sh").write_text("true\n")
    inventory = list_skills(tmp_path)
    assert len(inventory.skills) == 1000
    assert inventory.skipped == ()
    assert inventory.skills[0].name == "skill-0000"
    assert inventory.skills[-1].body == "Do step 999."


# --- sibling files --------------------------------------------------------------------------


def test_sample_caps_the_file_list_in_path_order(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "many", "name: many", body="B")
    for i in range(12):
        (folder / f"file-{i:02d}.txt").write_text("x")
    (folder / "a").mkdir()
    (folder / "a" / "z.txt").write_text("x")
    (folder / "a" / "b.txt").write_text("x")
    (folder / "zz").mkdir()
    (folder / "zz" / "last.txt").write_text("x")
    everything = sorted(
        (p for p in folder.rglob("*") if p.is_file() and p.name != "SKILL.md"),
        key=lambda p: p.parts,
    )
    assert len(everything) == 15

    default = load(tn.build(skills=tmp_path, builtins=False), "many")
    assert default.output == expected_block("many", "B", folder, everything[:10])
    assert everything[:2] == [folder / "a" / "b.txt", folder / "a" / "z.txt"]

    three = load(tn.build(skills=tmp_path, builtins=False, skill_files=3), "many").output
    assert three == expected_block("many", "B", folder, everything[:3])
    all_of_them = load(tn.build(skills=tmp_path, builtins=False, skill_files=100), "many")
    assert all_of_them.output == expected_block("many", "B", folder, everything)


def test_sample_minus_one_omits_the_block(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "s", "name: s", body="B")
    (folder / "x.txt").write_text("x")
    output = load(tn.build(skills=tmp_path, builtins=False, skill_files=-1), "s").output
    assert output == expected_block("s", "B", folder, None)
    assert "Note:" not in output and "<skill_files>" not in output


@pytest.mark.parametrize("sample", [0, 10])
def test_no_listed_files_keeps_an_empty_block(tmp_path: Path, sample: int) -> None:
    folder = write_skill(tmp_path, "alone", "name: alone", body="B")
    if sample == 0:
        (folder / "hidden-by-zero.txt").write_text("x")
    output = load(tn.build(skills=tmp_path, builtins=False, skill_files=sample), "alone").output
    assert output == expected_block("alone", "B", folder, [])
    assert "<skill_files>\n\n</skill_files>" in output


def test_files_are_listed_when_called_not_when_built(tmp_path: Path) -> None:
    folder = write_skill(tmp_path, "live", "name: live", body="B")
    tk = tn.build(skills=tmp_path, builtins=False)
    (folder / "new.txt").write_text("x")
    assert f"<file>{folder / 'new.txt'}</file>" in load(tk, "live").output


def test_sample_below_minus_one_is_rejected() -> None:
    with pytest.raises(tn.ConfigError, match="sample must be -1"):
        skill_tool([], sample=-2)


# --- skills_prompt --------------------------------------------------------------------------


def test_skills_prompt_format_and_order(tmp_path: Path) -> None:
    write_skill(tmp_path, "1", "name: zeta\ndescription: Last one.")
    write_skill(tmp_path, "2", "name: alpha\ndescription: First one.")
    write_skill(tmp_path, "3", "name: mid")
    write_skill(tmp_path, "4", "name: Beta\ndescription: Capital B sorts before a.")
    tk = tn.build(skills=tmp_path, builtins=False)
    expected = (
        CATALOG_HEADER
        + "- **Beta**: Capital B sorts before a.\n"
        + "- **alpha**: First one.\n"
        + "- **zeta**: Last one."
    )
    assert tn.skills_prompt(tk) == expected
    assert skills_prompt(list(tk.skills)) == expected
    assert skills_prompt(reversed(tk.skills)) == expected


def test_skills_prompt_of_the_example_and_of_nothing() -> None:
    tk = tn.build(skills=EXAMPLES)
    prompt = tn.skills_prompt(tk)
    assert prompt.startswith(CATALOG_HEADER + "- **hello-world**: Greets someone")
    assert "\n" not in prompt[len(CATALOG_HEADER) :]
    assert tn.skills_prompt(tn.build(builtins=False)) == ""
    assert skills_prompt([]) == ""
    undescribed = Skill("x", None, Path("/x"), Path("/x/SKILL.md"), "")
    assert skills_prompt([undescribed]) == ""


def test_bom_is_skipped_and_a_bad_byte_is_located_in_the_file(tmp_path: Path) -> None:
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "SKILL.md").write_bytes(b"\xef\xbb\xbf---\nname: bom\n---\nBody.")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "SKILL.md").write_bytes(b"\xef\xbb\xbf---\nname: caf\xe9\n---\n")
    inventory = list_skills(tmp_path)
    assert [(s.name, s.body) for s in inventory.skills] == [("bom", "Body.")]
    [skipped] = inventory.skipped
    assert skipped.detail == "not UTF-8 text (byte 0xe9 at offset 16)"


def test_skill_tool_serves_the_first_of_two_same_named_skills() -> None:
    first = Skill("twin", "one", Path("/a/twin"), Path("/a/twin/SKILL.md"), "First body.")
    second = Skill("twin", "two", Path("/b/twin"), Path("/b/twin/SKILL.md"), "Second body.")
    tool = skill_tool([first, second], sample=-1)
    result = tn.execute(tn.toolkit([tool]), "skill", {"name": "twin"})
    assert result.output == expected_block("twin", "First body.", Path("/a/twin"), None)
    assert "twin" not in tool.description
