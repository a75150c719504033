"""The field checks an eval file and a tasks file share: each file keeps its wording and type."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.cli._exits import CliError
from agent.cli.batch import load_tasks
from agent.errors import ConfigurationError
from agent.evals import load_evals


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "tasks:\n  - {id: a, promt: hi}\n",
            "batch: {path}: task 1: unknown field(s) promt; allowed: allow, files, id, "
            "max_turns, model, prompt, system",
        ),
        (
            "defaults: {modle: x}\ntasks:\n  - {id: a, prompt: hi}\n",
            "batch: {path}: defaults: unknown field(s) modle; allowed: allow, files, "
            "max_turns, model, system",
        ),
        (
            "defaults: [x]\ntasks:\n  - {id: a, prompt: hi}\n",
            "batch: {path}: `defaults` must be a mapping",
        ),
        (
            "tasks:\n  - {id: a, prompt: hi}\n  - just text\n",
            "batch: {path}: task 2 is not a mapping with id and prompt",
        ),
    ],
    ids=["task-field", "defaults-field", "defaults-not-mapping", "task-not-mapping"],
)
def test_a_tasks_file_is_refused_with_a_cli_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "tasks.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CliError) as refused:
        load_tasks(path)
    assert str(refused.value) == message.format(path=path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "cases:\n  - {id: a, prompt: hi, expect: {status: completed}, promt: x}\n",
            "{path}: case 1: unknown field(s) promt; allowed: allow, expect, files, id, "
            "max_turns, model, prompt, scenario, system",
        ),
        (
            "judge: {modle: x}\ncases:\n  - {id: a, prompt: hi}\n",
            "{path}: judge: unknown field(s) modle; allowed: model, scenario",
        ),
        ("defaults: [x]\ncases:\n  - {id: a, prompt: hi}\n", "{path}: defaults must be a mapping"),
        (
            # An explicit key: YAML takes implicit keys of 1024 characters at most.
            "cases:\n  - id: a\n    prompt: hi\n    files:\n      ? " + "d/" * 2049 + "x\n"
            "      : text\n",
            "{path}: case 1 (a): files: '" + "d/" * 100 + "' is longer than 4096 characters; "
            "name a file inside the workspace, e.g. notes.txt or data/input.csv",
        ),
    ],
    ids=["case-field", "judge-field", "defaults-not-mapping", "long-file-name"],
)
def test_an_eval_file_is_refused_with_a_configuration_error(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "evals.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError) as refused:
        load_evals(path)
    assert type(refused.value) is ConfigurationError
    assert str(refused.value) == message.format(path=path)
