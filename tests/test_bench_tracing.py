"""The tracing probe of ``scripts/bench.py`` compares like with like.

Its floor creates by hand the spans a pair run of ``agent.Agent`` records, so that "ours
beyond the OpenTelemetry SDK" counts only our own work. Should a span of ours gain or lose an
attribute, this test fails until the floor's hand-made spans follow.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# One pair run of each side against the bench's fake Gemini, in a process of its own (the
# workers keep their HTTP clients open for the life of the process); prints each side's
# spans: name, kind, parent's name and attribute types, in the order they ended.
PROBE = """
import asyncio, json, sys, tempfile
from pathlib import Path
import bench, _bench_worker as worker
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)


def shapes():
    finished = exporter.get_finished_spans()
    exporter.clear()
    names = {span.context.span_id: span.name for span in finished}
    return [
        [
            span.name,
            span.kind.name,
            names.get(span.parent.span_id) if span.parent is not None else None,
            {key: type(value).__name__ for key, value in sorted(span.attributes.items())},
        ]
        for span in finished
    ]


async def main(url):
    with tempfile.TemporaryDirectory() as folder:
        decls = json.loads(bench.declarations("pair", url, Path(folder)).read_text())
    floor, _, _ = await worker._floor("pair", url, decls, traced=True)
    await floor()
    by_hand = shapes()
    ours, _, _ = await worker._ours("pair", url)
    await ours()
    print(json.dumps({"floor": by_hand, "ours": shapes()}))


server = bench.start_server(bench._Timing())
try:
    asyncio.run(main(server.base_url))
finally:
    server.stop()
"""


@pytest.mark.timeout(120)
def test_the_traced_floor_makes_the_spans_a_pair_run_of_ours_makes() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        cwd=ROOT / "scripts",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    sides = json.loads(done.stdout)
    assert [name for name, *_ in sides["ours"]] == [
        "generate_content gemini-3-flash-preview",
        "execute_tool add",
        "execute_tool mul",
        "generate_content gemini-3-flash-preview",
        "invoke_agent",
    ]
    assert sides["floor"] == sides["ours"]
