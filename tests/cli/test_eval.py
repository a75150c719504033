"""``toolnexus-agent eval``: six cases offline, two failing on purpose, three samples each."""

from __future__ import annotations

import json
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.cli.conftest import Cli

EVALS = r"""
defaults:
  max_turns: 4
judge:
  scenario:
    turns:
      - text: "PASS: it names the city."
cases:
  - id: weather
    prompt: Weather in Paris?
    scenario: weather.yaml
    expect:
      text_contains: [Paris]
      text_matches: '\d+ C'
      tools:
        in_order:
          - name: get_weather
            args: {city: {$regex: "^Par"}}
      rubric: The answer names the city.
  - id: exact
    prompt: Weather in Rome?
    scenario:
      - calls: [{name: get_weather, args: {city: Rome}}]
      - text: Rome is sunny.
    expect:
      tools:
        exact: [get_weather]
  - id: both
    prompt: Weather in Oslo and Lima?
    scenario:
      - calls:
          - {name: get_weather, args: {city: Lima}}
          - {name: get_weather, args: {city: Oslo}}
      - text: Both sunny.
    expect:
      tools:  # a list: exact, and the parallel calls of one turn in any order
        - {name: get_weather, args: {city: Oslo}}
        - {name: get_weather, args: {city: Lima}}
  - id: files
    prompt: What is the secret in notes.txt?
    files: {notes.txt: "the secret is 7"}
    allow: [read]
    scenario:
      - calls: [{name: read, args: {path: notes.txt}}]
      - capture:
          secret: {function_response: read, pattern: 'secret is (\d+)'}
        text: "The secret is {secret}."
    expect:
      text_contains: "The secret is 7."
  - id: wrong-city
    prompt: Weather in Berlin?
    scenario:
      - text: It is sunny in Paris.
    expect:
      text_contains: [Berlin]
  - id: blocked
    prompt: Something bad
    scenario:
      - blocked: SAFETY
    expect:
      status: completed
"""

WEATHER = """\
turns:
  - calls: [{name: get_weather, args: {city: Paris}}]
  - text: It is sunny in Paris, 21 C.
"""

ARGS = ("--tools", "clitools:TOOLS", "--disable", "bash", "--offline", "--concurrency", "4")


def _write(workdir: Path) -> None:
    (workdir / "evals.yaml").write_text(EVALS, encoding="utf-8")
    (workdir / "weather.yaml").write_text(WEATHER, encoding="utf-8")


def test_six_cases_three_samples_pass_rates_reports_and_exit_code(cli: Cli, workdir: Path) -> None:
    _write(workdir)
    more = ("--samples", "3", "--json", "report.json", "--junit", "report.xml")
    code, _, err = cli("eval", "evals.yaml", "--out", "runs.jsonl", *ARGS, *more)
    assert code == 1, err
    report = json.loads((workdir / "report.json").read_text())
    rates = {case["id"]: case["pass_rate"] for case in report["cases"]}
    assert rates == {
        "weather": 1.0,
        "exact": 1.0,
        "both": 1.0,
        "files": 1.0,
        "wrong-city": 0.0,
        "blocked": 0.0,
    }
    assert (report["samples"], report["passed_samples"], report["passed"]) == (18, 12, False)
    assert report["pass_rate"] == 0.6667
    wrong = next(case for case in report["cases"] if case["id"] == "wrong-city")
    assert wrong["failures"][0]["failed"][0]["name"] == "text_contains 'Berlin'"
    assert "weather: 3/3 passed (100%)" in err
    assert "blocked: 0/3 passed (0%)" in err
    assert "  sample 1: status completed: status was blocked (SAFETY)" in err
    assert "12/18 samples passed (67%; needed 100%): FAILED" in err

    suite = ET.parse(workdir / "report.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("6", "2")
    failed = {
        case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None
    }
    assert failed == {"wrong-city", "blocked"}
    scores = {case["id"]: case["score"] for case in report["cases"] if "score" in case}
    assert scores == {
        "weather": {"precision": 1.0, "recall": 1.0, "f1": 1.0},
        "exact": {"precision": 1.0, "recall": 1.0, "f1": 1.0},
        "both": {"precision": 1.0, "recall": 1.0, "f1": 1.0},
    }
    properties = {
        (case.get("name"), prop.get("name")): prop.get("value")
        for case in suite.iter("testcase")
        for prop in case.iter("property")
    }
    assert properties[("both", "tools_f1")] == "1.0"
    assert ("files", "tools_f1") not in properties

    runs = [json.loads(line) for line in (workdir / "runs.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in runs) == sorted(
        f"{case}#{k}"
        for case in ("weather", "exact", "both", "files", "wrong-city", "blocked")
        for k in (1, 2, 3)
    )
    weather = next(r for r in runs if r["id"] == "weather#1")
    assert [c["name"] for c in weather["checks"]][-1] == "rubric"
    assert weather["tool_calls"] == [{"name": "get_weather", "args": {"city": "Paris"}}]
    assert weather["score"] == {
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
        "matched": 1,
        "expected": 1,
        "made": 1,
    }

    # Run again: every sample is recorded, nothing runs, the verdict is the same; and a
    # lower --min-pass passes.
    code, _, err = cli("eval", "evals.yaml", "--out", "runs.jsonl", *ARGS, "--samples", "3")
    assert code == 1
    assert "18 of 18 samples are already in runs.jsonl" in err
    code, _, err = cli(
        "eval", "evals.yaml", "--out", "runs.jsonl", *ARGS, "--samples", "3", "--min-pass", "0.6"
    )
    assert code == 0, err
    assert "needed 60%): passed" in err


def test_an_interrupted_eval_resumes_where_it_stopped(cli: Cli, workdir: Path) -> None:
    _write(workdir)
    code, _, _ = cli("eval", "evals.yaml", "--out", "runs.jsonl", *ARGS)
    lines = (workdir / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 6
    kept = [line for line in lines if not line.startswith('{"id": "files#1"')]
    (workdir / "runs.jsonl").write_text("\n".join(kept) + "\n")
    code, _, err = cli("eval", "evals.yaml", "--out", "runs.jsonl", *ARGS)
    assert "5 of 6 samples are already in runs.jsonl" in err
    assert "[1/1] files#1 completed" in err
    assert code == 1


def test_usage_errors(cli: Cli, workdir: Path) -> None:
    (workdir / "bad.yaml").write_text("cases: [{id: a, prompt: hi, expect: {colour: red}}]")
    code, _, err = cli("eval", "bad.yaml", "--out", "r.jsonl", "--offline")
    assert code == 2 and "colour" in err
    (workdir / "noscenario.yaml").write_text("cases: [{id: a, prompt: hi}]")
    code, _, err = cli("eval", "noscenario.yaml", "--out", "r.jsonl", "--offline")
    assert code == 2 and "needs a `scenario` in case(s) a" in err


@pytest.mark.parametrize("name", ["../escaped.txt", "../../escaped.txt", "ABSOLUTE", "~/x.txt"])
def test_case_files_outside_the_workspace_are_refused_before_anything_is_written(
    cli: Cli, workdir: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    samples = workdir / "samples"
    samples.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(samples))  # where sample workspaces go
    target = str(workdir / "escaped.txt") if name == "ABSOLUTE" else name
    cases = [
        {"id": "fine", "prompt": "hi", "files": {"ok.txt": "x"}, "scenario": ["hello"]},
        {"id": "escape", "prompt": "hi", "files": {target: "pwned"}, "scenario": ["hello"]},
    ]
    (workdir / "evals.yaml").write_text(yaml.safe_dump({"cases": cases}), encoding="utf-8")
    code, out, err = cli("eval", "evals.yaml", "--out", "runs.jsonl", "--offline")
    assert (code, out) == (2, ""), err
    assert len(err.splitlines()) == 1, err
    assert "case 2 (escape): files:" in err and "workspace" in err
    assert not (workdir / "escaped.txt").exists()
    assert list(samples.iterdir()) == []
    assert not (workdir / "runs.jsonl").exists()


DEPS = '''\
from toolnexus import ToolContext, define_tool


def for_case(case):
    return {"user": "user-" + case.id}


@define_tool
def whoami(context: ToolContext) -> str:
    """Who is asking."""
    return context.deps["user"]
'''


def test_deps_factory_gives_each_case_its_run_data(cli: Cli, workdir: Path) -> None:
    (workdir / "evaldeps.py").write_text(DEPS, encoding="utf-8")
    (workdir / "e.yaml").write_text(
        """
cases:
  - id: ada
    prompt: who?
    scenario:
      - calls: [{name: whoami, args: {}}]
      - capture: {user: {function_response: whoami, pattern: '(.+)'}}
        text: "you are {user}"
    expect: {text_contains: [user-ada]}
""",
        encoding="utf-8",
    )
    more = ("--no-builtins", "--tools", "evaldeps:whoami", "--deps", "evaldeps:for_case")
    code, _, err = cli("eval", "e.yaml", "--out", "r.jsonl", "--offline", *more)
    sys.modules.pop("evaldeps", None)
    assert code == 0, err
    assert "1/1 samples passed" in err


def test_output_schema_gives_cases_a_typed_output_to_check(cli: Cli, workdir: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temp": {"type": "integer"}},
        "required": ["city", "temp"],
    }
    (workdir / "weather.json").write_text(json.dumps(schema), encoding="utf-8")
    (workdir / "typed.yaml").write_text(
        """
defaults: {model: gemini-3-flash-preview}
cases:
  - id: right
    prompt: Weather in Paris?
    scenario: ['{"city": "Paris", "temp": 21}']
    expect: {output_equals: {city: Paris, temp: 21}}
  - id: pattern
    prompt: Weather in Oslo?
    scenario: ['{"city": "Oslo", "temp": 3}']
    expect: {output_satisfies: {city: {$regex: "^Os"}, temp: {$any: true}}}
  - id: wrong
    prompt: Weather in Rome?
    scenario: ['{"city": "Rome", "temp": 30}']
    expect: {output_equals: {city: Rome, temp: 31}}
""",
        encoding="utf-8",
    )
    more = ("--offline", "--no-builtins", "--output-schema", "weather.json", "--json", "r.json")
    code, _, err = cli("eval", "typed.yaml", "--out", "runs.jsonl", *more)
    assert code == 1, err
    assert "2/3 samples passed" in err
    report = json.loads((workdir / "r.json").read_text("utf-8"))
    text = json.dumps(report)
    assert 'output was {\\"city\\": \\"Rome\\", \\"temp\\": 30}' in text
    code, _, err = cli("eval", "typed.yaml", "--out", "runs2.jsonl", "--offline", "--no-builtins")
    assert code == 1 and "0/3 samples passed" in err  # without the schema there is no output


def _bomb(levels: int) -> str:
    """YAML anchors that each repeat the one before nine times (9**levels values)."""
    lines = ['      - &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        lines.append(f"      - &l{level} [" + ", ".join([f"*l{level - 1}"] * 9) + "]")
    return "\n".join(lines)


def test_hostile_eval_files_get_one_line_errors(cli: Cli, workdir: Path) -> None:
    files = {
        # 9**7 (4.8 million) values that str() would spell out in the text_contains check
        "bomb.yaml": "cases:\n  - id: boom\n    prompt: hi\n    scenario: [hello]\n"
        "    expect:\n      text_contains:\n" + _bomb(7) + "\n",
        "deep.yaml": "cases: " + "[" * 20_000 + "]" * 20_000 + "\n",
        "ctrl.yaml": 'cases:\n  - id: "a\\x1b[31mb"\n    prompt: hi\n    scenario: [hello]\n',
    }
    expected = {
        "bomb.yaml": "expands to more than 1,000,000 values",
        "deep.yaml": "nested too deeply",
        "ctrl.yaml": "case 1: `id` 'a\\x1b[31mb' holds a control character",
    }
    for name, text in files.items():
        (workdir / name).write_text(text, encoding="utf-8")
        code, out, err = cli(
            "eval", name, "--out", "r.jsonl", "--offline", "--no-builtins", "--junit", "j.xml"
        )
        assert (code, out) == (2, ""), (name, err)
        assert len(err.splitlines()) == 1 and expected[name] in err, (name, err)
        assert "\x1b" not in err
    assert not (workdir / "r.jsonl").exists()


def test_a_failing_judge_or_deps_fails_the_sample_and_junit_stays_valid(
    cli: Cli, workdir: Path
) -> None:
    (workdir / "raising.py").write_text(
        "def for_case(case):\n    raise ValueError('no data for ' + case.id)\n", encoding="utf-8"
    )
    (workdir / "judged.yaml").write_text(
        """
judge:
  scenario: [{error: {code: 400, message: judge is broken}}]
cases:
  - id: judged
    prompt: hi
    scenario: [hello]
    expect: {rubric: It greets.}
""",
        encoding="utf-8",
    )
    (workdir / "rude.yaml").write_text(
        """
judge:
  scenario: ["FAIL \\u001b[31mno greeting\\u0007"]
cases:
  - id: rude
    prompt: hi
    scenario: [hello]
    expect: {rubric: It greets.}
""",
        encoding="utf-8",
    )
    flags = ("--offline", "--no-builtins", "--junit", "j.xml", "--json", "r.json")
    code, _, err = cli("eval", "judged.yaml", "--out", "a.jsonl", *flags)
    assert code == 1, err
    [sample] = json.loads((workdir / "r.json").read_text("utf-8"))["cases"][0]["failures"]
    assert sample["failed"][0]["name"] == "rubric"
    assert sample["failed"][0]["detail"].startswith("the judge failed: Gemini call failed")
    assert "judge is broken" in sample["failed"][0]["detail"]

    code, _, err = cli(
        "eval", "judged.yaml", "--out", "b.jsonl", *flags, "--deps", "raising:for_case"
    )
    sys.modules.pop("raising", None)
    assert code == 1, err
    [record] = [json.loads(line) for line in (workdir / "b.jsonl").read_text().splitlines()]
    assert record["passed"] is False and record["status"] == "failed"
    assert record["error"] == "--deps failed for case judged: ValueError: no data for judged"

    code, _, err = cli("eval", "rude.yaml", "--out", "c.jsonl", *flags)
    assert code == 1, err
    failure = ET.parse(workdir / "j.xml").getroot().find("testsuite/testcase/failure")
    assert failure is not None and failure.text is not None
    assert "FAIL \\x1b[31mno greeting\\x07" in failure.text


def test_agents_flag_gives_each_case_its_sub_agents(cli: Cli, workdir: Path) -> None:
    # --agents is honoured by eval as by run: the case's model can hand work to the helper.
    (workdir / "agents").mkdir()
    (workdir / "agents" / "helper.md").write_text(
        "---\nname: helper\ndescription: Helps.\n---\nYou help.\n", encoding="utf-8"
    )
    (workdir / "e.yaml").write_text(
        """
cases:
  - id: delegated
    prompt: get help
    scenario:
      - calls: [{name: helper, args: {task: please}}]
      - text: helped
      - text: the helper said helped
    expect:
      text_contains: [helper said helped]
      tools: [helper]
""",
        encoding="utf-8",
    )
    flags = ("--offline", "--no-builtins", "--agents", "agents")
    code, _, err = cli("eval", "e.yaml", "--out", "r.jsonl", *flags)
    assert code == 0, err
    assert "1/1 samples passed" in err
