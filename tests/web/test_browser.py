"""The page in a real browser: headless Chromium driven through Selenium.

``toolnexus-agent web --demo`` runs as a process of its own; the test starts a demo run,
sees the tool calls appear, approves the gated calls with the button, sees the typed
answer, opens the trace and checks its nodes, replays the run and forks it at turn 1.

It needs Debian's ``chromium`` and ``chromium-driver`` packages (``.ci/run`` installs them);
without them it is skipped, saying so. The screenshot of the finished run with its trace
is saved in the test's temporary folder, and also at ``$TOOLNEXUS_WEB_SCREENSHOT`` when
that is set: ``docs/images/web.png`` is made so::

    TOOLNEXUS_WEB_SCREENSHOT=docs/images/web.png .venv/bin/python -m pytest \
        tests/web/test_browser.py
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web._server import web_process

CHROMIUM = ("chromium", "chromium-browser", "/usr/bin/chromium", "/usr/lib/chromium/chromium")
DRIVER = ("chromedriver", "/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1440,1000",
    "--force-device-scale-factor=1",
)
EVALS = """\
cases:
  - id: greets
    prompt: Say hi
    scenario: [{text: "hi there"}]
    expect: {text_contains: [hi]}
  - id: reads
    prompt: Read the notes
    files: {notes.txt: "hello"}
    scenario:
      - calls: [{name: read, args: {path: notes.txt}}]
      - text: It says hello.
    expect:
      tools:
        in_order: [{name: read, args: {path: notes.txt}}, glob]
"""
WAIT = 90.0
"""Seconds to wait for the page to show something (the machine may be busy)."""


def _found(names: tuple[str, ...]) -> str | None:
    for name in names:
        path = shutil.which(name) or (name if os.path.isfile(name) else None)
        if path is not None:
            return path
    return None


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    """A headless Chromium under chromedriver, with a fresh profile; quit afterwards."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    binary, driver = _found(CHROMIUM), _found(DRIVER)
    if binary is None or driver is None:
        pytest.skip("no browser: install Debian's chromium and chromium-driver packages")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    chrome = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield chrome
    finally:
        chrome.quit()


def test_a_demo_run_approved_traced_replayed_and_forked_in_the_browser(
    browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as shown
    from selenium.webdriver.support.ui import Select, WebDriverWait

    wait = WebDriverWait(browser, WAIT)

    def find(css: str) -> Any:
        return wait.until(shown.presence_of_element_located((By.CSS_SELECTOR, css)))

    def click(css: str) -> None:
        wait.until(shown.element_to_be_clickable((By.CSS_SELECTOR, css))).click()

    def approve_next() -> None:
        click(".ask:not(.decided) [data-action=approve]")
        wait.until(
            lambda _: (
                not browser.find_elements(By.CSS_SELECTOR, ".ask:not(.decided) button:disabled")
            )
        )

    with web_process("--demo", cwd=tmp_path) as page:
        browser.get(page.url)
        prompt = find("#prompt")
        wait.until(lambda _: "Greet Ada" in prompt.get_attribute("value"))
        click("#send")
        # The first tool call appears as it happens, then the run waits for approval.
        find(".tool[data-tool=skill].ok")
        card = find(".ask[data-kind=approval]:not(.decided)")
        assert "bash" in card.text and "greet.sh Ada" in card.text
        find(".tool[data-tool=bash].waiting")
        approve_next()
        find(".tool[data-tool=bash].ok")
        find(".ask[data-kind=approval]:not(.decided) .badge")
        assert "write" in find(".ask:not(.decided)").text
        approve_next()
        # The answer: the reviewer's nested run, the typed output and the final line.
        find(".done[data-status=completed]")
        assert "Hello, Ada!" in find(".output-card").text
        assert "Fit to send" in find(".tool[data-tool=reviewer] .subagent").get_attribute(
            "textContent"
        )
        assert len(browser.find_elements(By.CSS_SELECTOR, ".ask.decided")) == 2
        assert find("#conv-status").text.lower() == "completed"

        # The trace: the three runs (the start, two resumes) down to each call.
        click("#show-trace")
        find(".trace-row[data-name='invoke_agent reviewer']")
        browser.execute_script("document.getElementById('messages').scrollTop = 0")
        _screenshot(browser, tmp_path)
        kinds = {
            row.get_attribute("data-kind")
            for row in browser.find_elements(By.CSS_SELECTOR, ".trace-row")
        }
        assert kinds == {"run", "turn", "model_call", "tool_call"}
        names = [
            row.get_attribute("data-name")
            for row in browser.find_elements(By.CSS_SELECTOR, ".trace-row")
        ]
        assert names.count("invoke_agent") == 3
        for tool in ("skill", "bash", "write", "reviewer", "read"):
            assert f"execute_tool {tool}" in names
        click(".trace-row[data-kind=model_call]")
        detail = find(".trace-detail pre")
        wait.until(lambda _: '"candidates"' in detail.text)
        click(".trace-detail [data-which=request]")
        wait.until(lambda _: '"contents"' in detail.text)

        # Replay through the fake: the same trajectory.
        click("#replay")
        summary = find(".replay-summary")
        assert summary.get_attribute("data-identical") == "true", summary.text
        assert len(browser.find_elements(By.CSS_SELECTOR, ".replay-turns li")) == 5

        # Fork at turn 1: the new conversation keeps it and goes on from there.
        click("#fork")
        Select(find("#fork-turn")).select_by_value("1")
        click("#fork-submit")
        wait.until(lambda _: "Forked from" in find("#messages").text)
        find(".tool[data-tool=skill].ok")
        find(".ask[data-kind=approval]:not(.decided)")
        assert "fork" in find("#conv-sub").text
        # The list is drawn again as the runs change: read it in one script, so no item goes
        # stale between finding it and reading it.
        titles = "return [...document.querySelectorAll('#run-list li')].map(li => li.textContent)"
        wait.until(lambda _: len(browser.execute_script(titles)) == 2)

        # Evals: an eval file run offline, its pass rates and a failing sample's calls.
        evals = tmp_path / "evals.yaml"
        evals.write_text(EVALS, encoding="utf-8")
        click("[data-view=evals]")
        find("#eval-path").send_keys(str(evals))
        click("#eval-run button")
        click("tr.case[data-case=reads]")
        rows = wait.until(
            lambda _: browser.find_elements(By.CSS_SELECTOR, "table.trajectory tbody tr")
        )
        assert [row.get_attribute("class") for row in rows] == ["same", "diff"]
        assert "glob" in rows[1].text
        assert "50%" in find(".eval-head").text
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []


def _screenshot(browser: Any, folder: Path) -> None:
    """Save the page as the docs show it (and where $TOOLNEXUS_WEB_SCREENSHOT says)."""
    path = folder / "web.png"
    assert browser.save_screenshot(str(path))
    target = os.environ.get("TOOLNEXUS_WEB_SCREENSHOT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
