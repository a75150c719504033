"""``toolnexus-agent web``: the demo end to end over real HTTP, and the command's usage errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.conftest import Cli
from tests.web._server import web_process
from tests.web._support import parse_sse


def events(client: httpx.Client, run: str, after: int = 0) -> list[tuple[int, str, dict[str, Any]]]:
    response = client.get(f"/api/runs/{run}/events", params={"after": after}, timeout=120)
    assert response.status_code == 200
    return parse_sse(response.text)


def approve_pending(client: httpx.Client, run: str) -> dict[str, Any]:
    state = client.get(f"/api/runs/{run}").json()
    assert state["status"] == "pending", state
    request: dict[str, Any] = state["pending"]
    decided = client.post(
        f"/api/runs/{run}/decision", json={"request_id": request["id"], "action": "approve"}
    )
    assert decided.status_code == 202, decided.text
    return request


def test_the_demo_runs_offline_with_approvals_a_trace_a_replay_and_a_fork(tmp_path: Path) -> None:
    with web_process("--demo", cwd=tmp_path) as page:
        headers = {"Authorization": f"Bearer {page.token}"}
        with httpx.Client(base_url=page.base, headers=headers, timeout=60) as client:
            info = client.get("/api/info").json()
            assert info["demo"] is True and "reviewer" in info["tools"]
            run = client.post("/api/runs", json={"text": info["prompt"]}).json()["id"]
            log = events(client, run)
            bash = approve_pending(client, run)
            log += events(client, run, after=len(log))
            write = approve_pending(client, run)
            log += events(client, run, after=len(log))
            replay = client.post(f"/api/runs/{run}/replay").json()
            trace = client.get(f"/api/runs/{run}/trace").json()
            fork = client.post(f"/api/runs/{run}/fork", json={"turn": 1}).json()
            fork_log = events(client, fork["id"])
            original = client.get(f"/api/runs/{run}").json()["contents"]
            forked = client.get(f"/api/runs/{fork['id']}").json()
            foreign = httpx.get(f"{page.base}/", headers={"Host": "attacker.example"})
            no_token = httpx.get(f"{page.base}/api/runs")
    assert (bash["data"]["tool"], write["data"]["tool"]) == ("bash", "write")
    agent = [data for _, kind, data in log if kind == "agent"]
    done = agent[-1]["result"]
    assert done["status"] == "completed"
    assert done["output"]["greeting"].startswith("Hello, Ada!")
    sub = [e for e in agent if e["type"] == "SubAgentEvent"]
    assert sub and sub[0]["agent"] == "reviewer"
    assert replay["identical"] is True and replay["turns"][0]["calls"] == ["skill"]
    names = [run["name"] for run in trace["runs"]]
    assert names == ["invoke_agent", "invoke_agent", "invoke_agent"]  # the run, two resumes
    last = trace["runs"][-1]
    helper = [
        c for t in last["children"] for c in t["children"] if c["name"] == "execute_tool reviewer"
    ]
    assert helper[0]["children"][0]["name"] == "invoke_agent reviewer"
    # The fork keeps the prompt and turn 1 byte for byte, then plays the scenario from turn 2.
    assert forked["contents"][:3] == original[:3]
    fork_agent = [data for _, kind, data in fork_log if kind == "agent"]
    assert fork_agent[-1]["result"]["status"] == "pending"
    assert forked["pending"]["data"]["tool"] == "bash"
    assert foreign.status_code == 403 and no_token.status_code == 401


def test_demo_refuses_the_flags_it_would_ignore(cli: Cli) -> None:
    code, out, err = cli("web", "--demo", "--skills", "skills", "--fake", "x.yaml")
    assert (code, out) == (2, "")
    assert err == "web --demo plays its own workspace and scenario; leave out --skills, --fake\n"


def test_web_needs_a_key_or_a_scenario(cli: Cli) -> None:
    code, out, err = cli("web", "--port", "0")
    assert (code, out) == (2, "")
    assert err.startswith("toolnexus-agent: no Gemini API key.")
    code, out, err = cli("web", "--port", "0", "--fake", "missing.yaml")
    assert (code, out) == (2, "")
    assert err.startswith("--fake: cannot read missing.yaml")


def test_web_without_the_web_extra_says_how_to_install_it(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(sys.modules):
        if name.split(".")[0] == "starlette":
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "starlette", None)
    code, out, err = cli("web", "--demo")
    assert (code, out) == (2, "")
    assert err.startswith("toolnexus-agent web: needs the `web` extra (starlette")
    assert err.count("\n") == 1


def test_a_bad_port_is_a_usage_error(cli: Cli) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli("web", "--port", "70000")
    assert exit_info.value.code == 2


def test_the_report_of_eval_carries_the_expected_and_the_made_calls(
    tmp_path: Path, cli: Cli
) -> None:
    evals = tmp_path / "evals.yaml"
    evals.write_text(
        "cases:\n"
        "  - id: lists\n"
        "    prompt: List the files\n"
        "    scenario: [{calls: [{name: glob, args: {pattern: '*'}}]}, {text: none}]\n"
        "    expect: {tools: [grep]}\n",
        encoding="utf-8",
    )
    report = tmp_path / "report.json"
    code, _, _ = cli(
        "eval", str(evals), "--offline", "--out", str(tmp_path / "r.jsonl"), "--json", str(report)
    )
    assert code == 1
    (case,) = json.loads(report.read_text())["cases"]
    assert case["expected_tools"] == {"mode": "exact", "calls": ["grep"]}
    assert case["failures"][0]["tool_calls"] == [{"name": "glob", "args": {"pattern": "*"}}]
