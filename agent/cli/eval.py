"""``toolnexus-agent eval``: score an agent on a file of cases, N samples each.

Each sample of each case is one task of the batch machinery: run concurrently, appended to
``--out`` as one JSON line as soon as it finishes, and skipped when the command runs again
(so an interrupted eval resumes). When every sample is recorded, the pass rate of each case
and of the whole file is reported on stderr, and written as JSON (``--json``) and JUnit XML
(``--junit``). The exit code is non-zero when the overall pass rate is under ``--min-pass``.
With ``--offline`` every sample plays its case's ``scenario`` (a FakeGemini scenario) instead
of calling Gemini, so the same file runs in CI without a key.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli._approval import add_approval_flag, cli_policy
from agent.cli._exits import EXIT_FAILED, EXIT_OK, CliError
from agent.cli._gemini_batch import add_gemini_batch_flags, check_gemini_batch_flags
from agent.cli._logs import agent_log
from agent.cli._model import (
    AgentFactory,
    add_subagents,
    flag_cache,
    flag_settings,
    make_agent,
    open_factory,
)
from agent.cli._options import _positive, add_agent_flags, add_toolkit_flags, read_system
from agent.cli._rate import add_rate_flags, rate_of, rate_spec
from agent.cli._toolkit import build_toolkit, check_tool_mix_flags, check_toolkit_flags
from agent.cli.batch import (
    DepsFactory,
    _maybe,
    _Output,
    _Progress,
    load_deps_factory,
    read_finished,
    run_all,
)
from agent.cli.run import load_output_type
from agent.errors import ConfigurationError, RunError

if TYPE_CHECKING:
    import httpx

    from agent import Agent, RunResult
    from agent.evals import Check, EvalCase, EvalFile
    from agent.steps import Steps
    from toolnexus import Tool, Toolkit

__all__ = ["add_parser", "command"]

_EPILOG = """\
eval file (YAML or JSON):

  defaults: {max_turns: 6, expect: {status: completed}}
  judge: {model: gemini-2.5-flash, scenario: judge.yaml}   # for rubrics (optional)
  cases:
    - id: weather
      prompt: What is the weather in Paris?
      files: {notes.txt: "Paris: sunny"}       # a fresh workspace per sample (optional)
      scenario: scenarios/weather.yaml          # the scripted model of --offline
      expect:
        status: completed                       # the default
        text_contains: [Paris]
        text_matches: "\\\\d+ ?C"
        output_equals: {city: Paris}            # typed output (RunResult.output)
        output_satisfies: {temp: {$any: true}}
        tools:                                  # exact | in_order | any_order
          in_order:
            - name: read
              args: {path: {$regex: "notes"}}
          ignore_args: [request_id]             # never compared (optional)
        rubric: The answer names the city.      # judged by a model

trajectories: turns keep their order, the parallel calls of one turn do not; duplicate
calls count. Each sample also gets a trajectory score (precision, recall, F1).

matchers: a mapping matches when its keys match; {$regex: ...}, {$contains: ...},
{$oneof: [...]}, {$any: true} match one value.

examples:
  toolnexus-agent eval evals.yaml --out runs.jsonl --samples 3 --junit report.xml
  toolnexus-agent eval evals.yaml --out runs.jsonl --offline --min-pass 0.8 --json report.json

exit code: 0 when the pass rate over all samples reaches --min-pass (default 1.0), 1 when
it does not, 2 for a usage error, 130 when interrupted (run again to resume)."""

_JUDGE_SYSTEM = (
    "You grade an AI agent's answer against a rubric. Reply with PASS or FAIL on the first "
    "line, then one sentence saying why."
)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``eval`` and its flags."""
    parser = commands.add_parser(
        "eval",
        help="score the agent on a YAML file of cases (pass rates, JSON, JUnit)",
        description=(
            "Run every case of EVALS (a YAML or JSON file) --samples times, check each run\n"
            "against the case's expectations, and report the pass rate per case."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("evals", metavar="EVALS", help="the eval file (.yaml, .yml or .json)")
    parser.add_argument(
        "--out", required=True, metavar="RUNS.jsonl", help="where sample results are appended"
    )
    parser.add_argument(
        "--samples", type=_positive, default=1, metavar="N", help="runs per case (default: 1)"
    )
    parser.add_argument(
        "--concurrency", type=_positive, default=4, metavar="N", help="samples at once (default: 4)"
    )
    parser.add_argument(
        "--min-pass",
        type=_fraction,
        default=1.0,
        metavar="RATE",
        help="the pass rate over all samples needed to exit 0, from 0 to 1 (default: 1)",
    )
    parser.add_argument("--json", dest="json_report", metavar="PATH", help="write a JSON report")
    parser.add_argument("--junit", metavar="PATH", help="write a JUnit XML report")
    parser.add_argument(
        "--offline",
        action="store_true",
        help="play each case's `scenario` (and the judge's) instead of calling Gemini",
    )
    parser.add_argument("--judge-model", metavar="NAME", help="the model that judges rubrics")
    parser.add_argument(
        "--deps", metavar="MODULE:ATTR", help="a function of the case that returns its run data"
    )
    parser.add_argument(
        "--output-schema",
        metavar="FILE|MODULE:MODEL",
        help="ask every case for a typed answer (as `run --output-schema`), checked by "
        "`output_equals` / `output_satisfies`",
    )
    add_toolkit_flags(parser)
    add_agent_flags(parser)
    add_rate_flags(parser)
    add_approval_flag(parser, batch=True)
    add_gemini_batch_flags(parser, engine_flag=True)
    parser.set_defaults(command=command, unattended=True)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {value}")
    return value


@dataclass(frozen=True, slots=True)
class _Job:
    case: EvalCase
    sample: int

    @property
    def id(self) -> str:
        return f"{self.case.id}#{self.sample}"


def command(args: argparse.Namespace) -> int:
    """Run ``eval`` and return its exit code."""
    from agent.evals import load_evals

    _check_flags(args)
    args.output_type = load_output_type(args.output_schema)
    try:
        evals = load_evals(args.evals)
    except ConfigurationError as exc:
        raise CliError(f"eval: {exc}") from None
    if args.offline:
        missing = [case.id for case in evals.cases if case.scenario is None]
        if missing:
            raise CliError(f"eval: --offline needs a `scenario` in case(s) {', '.join(missing)}")
    err = sys.stderr
    flag_cache(args)  # a wrong --cache-mode stops the command, not each sample
    own = check_toolkit_flags(args)
    system = read_system(args.system)
    deps_for = load_deps_factory(args.deps)
    jobs = [_Job(case, k) for case in evals.cases for k in range(1, args.samples + 1)]
    finished = read_finished(args.out, err)
    todo = [job for job in jobs if job.id not in finished]
    if len(todo) < len(jobs):
        err.write(f"{len(jobs) - len(todo)} of {len(jobs)} samples are already in {args.out}\n")
    output = _Output(args.out)
    progress = _Progress(len(todo), err, err.isatty())
    try:
        if todo:
            with agent_log(args.verbose):
                runner = _Runner(args, evals, own, system, deps_for)
                asyncio.run(runner.run(todo, output, progress))
    except KeyboardInterrupt:
        progress.close()
        err.write(f"interrupted: {progress.done} samples recorded; run again to resume\n")
        raise
    finally:
        output.close()
    progress.close()
    report = _report(evals, jobs, _records(Path(args.out)), args.min_pass)
    _summary(report, err)
    if args.json_report:
        Path(args.json_report).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.junit:
        _junit(report, Path(args.junit))
    return EXIT_OK if report["passed"] else EXIT_FAILED


def _check_flags(args: argparse.Namespace) -> None:
    """Refuse flags that do not fit the command (or the engine).

    Raises:
        CliError: One was given.
    """
    if args.fake is not None:
        raise CliError("eval: --fake plays one script for every call; use --offline instead")
    if args.engine == "gemini-batch":
        check_gemini_batch_flags(args, "eval")


class _Runner:
    """Runs samples: a workspace, an agent, the run, the checks and the rubric."""

    def __init__(
        self,
        args: argparse.Namespace,
        evals: EvalFile,
        own: list[Tool],
        system: str | None,
        deps_for: DepsFactory,
    ) -> None:
        self.args = args
        self.evals = evals
        self.own = own
        self.system = system
        self.deps_for = deps_for
        self.factory: AgentFactory | None = None
        self.toolkit: Toolkit | None = None
        self.rate = rate_of(rate_spec(args))
        """``--tpm``/``--rpm``: one limit over every case's calls and the judge's."""

    async def run(self, todo: Sequence[_Job], output: _Output, progress: _Progress) -> None:
        async with contextlib.AsyncExitStack() as stack:
            if not self.args.offline:
                self.factory = await stack.enter_async_context(open_factory(self.args))
            self.toolkit = await stack.enter_async_context(await build_toolkit(self.args, self.own))
            if self.factory is not None:  # offline, each case's agent refuses it when made
                models = [self._model(job.case) for job in todo]
                check_tool_mix_flags(self.factory, models, self.toolkit)

            if self.args.engine == "gemini-batch":
                await self._in_jobs(todo, output, progress)
                return

            async def one(job: _Job) -> None:
                progress.started()
                record = await self.sample(job)
                output.append(record)
                progress.finished(record)

            await run_all(todo, self.args.concurrency, one)

    async def _in_jobs(self, todo: Sequence[_Job], output: _Output, progress: _Progress) -> None:
        """Run every sample at once, the model calls (the judge's too) in batch jobs."""
        from agent.cli._gemini_batch import engine, job_printer, state_path

        batch = engine(self.args, sys.stderr, job_printer(sys.stderr, progress.note))

        def sample(job: _Job) -> Callable[[Steps], Awaitable[dict[str, Any]]]:
            return lambda steps: self.sample(job, steps)

        def done(_: str, record: dict[str, Any]) -> None:
            output.append(record)
            progress.finished(record)

        for _ in todo:
            progress.started()
        await batch.run_tasks({job.id: sample(job) for job in todo}, on_done=done)
        state_path(self.args.out).unlink(missing_ok=True)

    async def sample(self, job: _Job, steps: Steps | None = None) -> dict[str, Any]:
        """Run one sample and check it; ``steps`` are the batch engine's, if it runs them."""
        from agent.evals import Check, check, score

        case = job.case
        start = time.monotonic()
        record: dict[str, Any] = {"id": job.id, "case": case.id, "sample": job.sample}
        result: RunResult | None = None
        try:
            async with self._agent(case) as agent:
                deps = await self._deps(case)
                try:
                    result = await agent.plan(case.prompt, deps=deps, steps=steps).result()
                except RunError as exc:
                    result, record["error"] = exc.result, str(exc)
            checks = check(case.expect, result)
            if case.expect.rubric:
                checks.append(await self._judge(case, result.text, steps))
        except (CliError, ConfigurationError, OSError) as exc:
            record["error"] = str(exc)
            checks = [Check("run", False, str(exc))]
        record.update(
            status=result.status if result is not None else "failed",
            passed=all(c.passed for c in checks) and "error" not in record,
            checks=[c.to_dict() for c in checks],
            text=result.text if result is not None else "",
            tool_calls=[{"name": c.name, "args": c.args} for c in result.tool_calls]
            if result is not None
            else [],
            usage=result.usage.to_dict() if result is not None else None,
            service_tier=result.service_tier if result is not None else None,
            duration=round(time.monotonic() - start, 3),
        )
        trajectory = score(case.expect, result)
        if trajectory is not None:
            record["score"] = trajectory.to_dict()
        return record

    async def _deps(self, case: EvalCase) -> Any:
        """Return the case's run data from ``--deps`` (``None`` without it).

        Raises:
            CliError: The user's function raised: this sample fails with the reason.
        """
        if self.deps_for is None:
            return None
        try:
            return await _maybe(self.deps_for(case))
        except Exception as exc:  # the user's code: any error fails this sample only
            raise CliError(
                f"--deps failed for case {case.id}: {type(exc).__name__}: {exc}"
            ) from None

    def _model(self, case: EvalCase) -> str:
        from agent import DEFAULT_MODEL

        return str(case.model or self.args.model or DEFAULT_MODEL)

    @contextlib.asynccontextmanager
    async def _agent(self, case: EvalCase) -> AsyncIterator[Agent]:
        """Yield the agent of one sample: its workspace, tools and model client."""
        async with contextlib.AsyncExitStack() as stack:
            toolkit = self.toolkit
            if case.files:
                root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="eval-")))
                for name, text in case.files.items():
                    target = root / name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
                scoped = argparse.Namespace(**{**vars(self.args), "root": str(root)})
                toolkit = await stack.enter_async_context(await build_toolkit(scoped, self.own))
            assert toolkit is not None
            http, key = await self._client(stack, case.scenario)
            model = self._model(case)
            policy = cli_policy(self.args.approval, toolkit, allow=case.allow, unattended=True)
            # One cache for the run's agents; offline, each case has a model of its own.
            cache = self.factory.cache if self.factory is not None else flag_cache(self.args)
            toolkit = await add_subagents(
                self.args,
                toolkit,
                model=model,
                api_key=key,
                http=http,
                approval=policy,
                cache=cache,
            )
            yield self._make(
                toolkit,
                http,
                key,
                model=model,
                system=case.system if case.system is not None else self.system,
                max_turns=case.max_turns or self.args.max_turns,
                approval=policy,
                output_type=self.args.output_type,
                builtin_tools=tuple(self.args.builtin_tools),
                cache=cache,
            )

    async def _client(
        self, stack: contextlib.AsyncExitStack, scenario: Any
    ) -> tuple[httpx.AsyncClient, str | None]:
        """Return the HTTP client and key of one agent: the shared ones, or a fresh fake's."""
        if self.factory is not None:
            return self.factory.http, self.factory.api_key
        from agent.testing import ScenarioError, read_scenario

        source = scenario
        if isinstance(source, str) and "\n" not in source:
            source = self.evals.path.parent / source
        try:
            fake = read_scenario(source).fake()
        except (OSError, ScenarioError, ValueError) as exc:
            raise CliError(f"scenario {scenario!r}: {exc}") from None
        http = await stack.enter_async_context(fake.http_client())
        return http, "offline-eval-not-a-secret"

    def _make(
        self,
        toolkit: Toolkit,
        http: httpx.AsyncClient,
        key: str | None,
        **settings: Any,
    ) -> Agent:
        from agent import DEFAULT_MODEL

        model = settings.pop("model") or DEFAULT_MODEL
        chain = tuple(getattr(self.args, "models", None) or ())
        if chain and model == chain[0]:
            model = chain  # the --model chain: its first model falls back to the others
        settings.setdefault("settings", flag_settings(self.args))
        settings.setdefault("rate", self.rate)
        return make_agent(
            toolkit, http=http, api_key=key, scripted=key is not None, model=model, **settings
        )

    async def _judge(self, case: EvalCase, text: str, steps: Steps | None = None) -> Check:
        """Ask the judge model whether ``text`` meets the rubric (in a job, given steps)."""
        from agent.evals import Check
        from toolnexus import Toolkit

        name = "rubric"
        if self.args.offline and self.evals.judge_scenario is None:
            return Check(name, False, "--offline needs `judge: {scenario: ...}` for rubrics")
        prompt = (
            f"The task given to the agent:\n{case.prompt}\n\nThe rubric:\n{case.expect.rubric}"
            f"\n\nThe agent's answer:\n{text}"
        )
        model = self.args.judge_model or self.evals.judge_model or case.model or self.args.model
        try:
            async with contextlib.AsyncExitStack() as stack:
                http, key = await self._client(stack, self.evals.judge_scenario)
                judge = self._make(
                    Toolkit(), http, key, model=model, system=_JUDGE_SYSTEM, max_turns=1
                )
                verdict = (await judge.plan(prompt, steps=steps).result()).text.strip()
        except (RunError, ConfigurationError, OSError) as exc:
            # The judge's failure fails this sample's rubric; the other samples go on.
            return Check(name, False, f"the judge failed: {exc}")
        passed = verdict.upper().startswith("PASS")
        return Check(name, passed, "" if passed else verdict or "the judge gave no verdict")


# --------------------------------------------------------------------------- report


_SCORE_KEYS = ("precision", "recall", "f1")
"""The trajectory scores averaged over a case's samples."""


def _records(path: Path) -> dict[str, dict[str, Any]]:
    records: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "id" in record:
            records[str(record["id"])] = record
    return records


def _report(
    evals: EvalFile, jobs: Sequence[_Job], records: dict[str, dict[str, Any]], min_pass: float
) -> dict[str, Any]:
    cases = []
    for case in evals.cases:
        samples = [records.get(job.id) for job in jobs if job.case is case]
        passed = sum(1 for record in samples if record and record.get("passed"))
        failures = [
            {
                "sample": record["sample"],
                "failed": [c for c in record.get("checks", []) if not c["passed"]],
                "error": record.get("error"),
                "tool_calls": record.get("tool_calls", []),
            }
            for record in samples
            if record and not record.get("passed")
        ]
        entry = {
            "id": case.id,
            "samples": len(samples),
            "passed": passed,
            "pass_rate": round(passed / len(samples), 4),
            "duration": round(sum(r.get("duration", 0) for r in samples if r), 3),
            "failures": failures,
        }
        if case.expect.tools is not None:  # what a failing sample's calls are set against
            mode, calls = case.expect.tools
            entry["expected_tools"] = {"mode": mode, "calls": list(calls)}
        scores = [r["score"] for r in samples if r and isinstance(r.get("score"), dict)]
        if scores:
            entry["score"] = {
                key: round(sum(float(s.get(key, 0)) for s in scores) / len(scores), 4)
                for key in _SCORE_KEYS
            }
        cases.append(entry)
    total = sum(case["samples"] for case in cases)
    passed = sum(case["passed"] for case in cases)
    rate = passed / total if total else 0.0
    return {
        "file": str(evals.path),
        "samples": total,
        "passed_samples": passed,
        "pass_rate": round(rate, 4),
        "min_pass": min_pass,
        "passed": rate >= min_pass,
        "cases": cases,
    }


def _summary(report: dict[str, Any], err: TextIO) -> None:
    for case in report["cases"]:
        scored = case.get("score")
        tools = f"; tools F1 {scored['f1']:.2f}" if scored else ""
        err.write(
            f"{case['id']}: {case['passed']}/{case['samples']} passed "
            f"({case['pass_rate']:.0%}){tools}\n"
        )
        for failure in case["failures"]:
            reasons = [f"{c['name']}: {c['detail']}" for c in failure["failed"]]
            if failure["error"] and not reasons:
                reasons = [failure["error"]]
            err.write(f"  sample {failure['sample']}: {'; '.join(reasons)}\n")
    verdict = "passed" if report["passed"] else "FAILED"
    err.write(
        f"{report['passed_samples']}/{report['samples']} samples passed "
        f"({report['pass_rate']:.0%}; needed {report['min_pass']:.0%}): {verdict}\n"
    )


# What XML 1.0 cannot hold at all, even escaped (control characters, lone surrogates).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    """Return ``text`` with the characters XML cannot hold written as escapes (ESC as x1b).

    Model text and error messages may carry them; the report must stay valid XML.
    """
    return _NOT_XML.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def _junit(report: dict[str, Any], path: Path) -> None:
    """Write one ``testcase`` per case; a case with a failed sample has a ``failure``."""
    failed = sum(1 for case in report["cases"] if case["failures"])
    suites = ET.Element("testsuites", tests=str(len(report["cases"])), failures=str(failed))
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=_xml(Path(report["file"]).stem),
        tests=str(len(report["cases"])),
        failures=str(failed),
        errors="0",
        time=f"{sum(case['duration'] for case in report['cases']):.3f}",
    )
    properties = ET.SubElement(suite, "properties")
    for key in ("pass_rate", "min_pass", "samples"):
        ET.SubElement(properties, "property", name=key, value=str(report[key]))
    for case in report["cases"]:
        element = ET.SubElement(
            suite,
            "testcase",
            classname=_xml(Path(report["file"]).stem),
            name=_xml(case["id"]),
            time=f"{case['duration']:.3f}",
        )
        case_properties = ET.SubElement(element, "properties")
        ET.SubElement(case_properties, "property", name="pass_rate", value=str(case["pass_rate"]))
        for key, value in (case.get("score") or {}).items():
            ET.SubElement(case_properties, "property", name=f"tools_{key}", value=str(value))
        if case["failures"]:
            failure = ET.SubElement(
                element,
                "failure",
                message=f"{case['passed']}/{case['samples']} samples passed",
                type="EvalFailure",
            )
            failure.text = _xml(
                "\n".join(
                    f"sample {f['sample']}: "
                    + "; ".join(f"{c['name']}: {c['detail']}" for c in f["failed"])
                    + (f" ({f['error']})" if f["error"] else "")
                    for f in case["failures"]
                )
            )
    ET.indent(suites)
    path.write_bytes(ET.tostring(suites, encoding="utf-8", xml_declaration=True) + b"\n")
