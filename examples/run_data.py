"""Run data: one agent serves two customers, each run with its own ``deps``.

Run it from the repository root (offline: a scripted fake Gemini plays the model)::

    python examples/run_data.py
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import toolnexus as tn
from agent import Agent, ClientSettings
from agent.testing import FakeGemini, function_call
from toolnexus import ToolContext


@dataclass
class Customer:
    name: str
    orders: list[str]


@tn.define_tool
def my_orders(context: ToolContext) -> list[str]:
    """The orders of the customer being served."""
    customer: Customer = context.deps
    return customer.orders


def instructions(customer: Customer) -> str:
    return f"You help {customer.name}. Be brief."


def model(body: dict) -> object:
    """Plays the model: look the orders up, then repeat them."""
    last = body["contents"][-1]["parts"][0]
    if "functionResponse" in last:
        return f"Your orders: {last['functionResponse']['response']['output']}"
    return function_call("my_orders", {})


async def main() -> None:
    fake = FakeGemini(model)
    agent = Agent(
        toolkit=tn.toolkit([my_orders]),
        system_prompt=instructions,
        client=ClientSettings(api_key="offline", http_client=fake.http_client()),
    )
    customers = [Customer("Ada", ["kettle"]), Customer("Bob", ["lamp", "rug"])]
    results = await asyncio.gather(
        *(agent.run("What did I order?", deps=customer) for customer in customers)
    )
    for customer, result in zip(customers, results, strict=True):
        print(f"{customer.name}: {result.text}")
    print("the model never saw a 'context' parameter:", my_orders.input_schema)


if __name__ == "__main__":
    asyncio.run(main())
