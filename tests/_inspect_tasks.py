"""Inspect AI tasks that tests/test_inspect.py runs with the real ``inspect eval`` command.

Every model turn comes from Inspect's ``mockllm`` model, scripted with ``custom_outputs``: the
agent calls its ``add`` tool (which fails on negative numbers, as a real tool error), then
answers. ``arithmetic`` is scored by Inspect's ``includes``; ``judged`` adds a third sample and
``mast_scorer`` pointed at the fake provider whose URL is passed as ``-T api_base=...`` (the key
comes from ``OPENAI_API_KEY`` in the command's environment).
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessage, ModelOutput, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import ToolError, tool

MODEL = "mockllm/model"
SAMPLES = [
    Sample(id="sum", input="What is 2+2? Use the add tool.", target="4"),
    Sample(id="negative", input="What is -3+5? Use the add tool.", target="2"),
]
PRODUCT = Sample(id="product", input="What is 3*4?", target="12")
"""Answered without a tool; test_inspect's fake judge fails on it, so mast_scorer leaves it unscored."""


@tool
def add():  # type: ignore[no-untyped-def]  # Inspect reads the signature and docstring as the tool schema
    async def execute(x: int, y: int) -> int:
        """Add two whole numbers.

        Args:
            x: The first number.
            y: The second number.
        """
        if x < 0 or y < 0:
            raise ToolError("add only takes numbers that are not negative")
        return x + y

    return execute


def _turn(messages: list[ChatMessage], tools: object, tool_choice: object, config: object) -> ModelOutput:
    """The agent's next turn, decided by the conversation so far (samples may run in any order).

    First a call of ``add`` with the question's numbers; after the tool answered, the final answer
    (the negative sample's tool call fails, and the agent then guesses a wrong answer).
    """
    last = messages[-1]
    question = next(m.text for m in messages if m.role == "user")
    if "3*4" in question:
        return ModelOutput.from_content(model=MODEL, content="3 * 4 = 12.")
    if last.role == "user":
        numbers = (2, 2) if "2+2" in question else (-3, 5)
        return ModelOutput.for_tool_call(
            model=MODEL, tool_name="add", tool_arguments={"x": numbers[0], "y": numbers[1]}
        )
    if "2+2" in question:
        return ModelOutput.from_content(model=MODEL, content="2 + 2 = 4, so the answer is 4.")
    return ModelOutput.from_content(model=MODEL, content="The tool failed, so I guess the answer is 3.")


@task
def arithmetic(epochs: int = 1) -> Task:
    return Task(
        dataset=SAMPLES,
        solver=[use_tools(add()), generate()],
        scorer=includes(),
        model=get_model(MODEL, custom_outputs=_turn),
        epochs=epochs,
    )


@task
def judged(api_base: str = "", model: str = "openai/fake-judge") -> Task:
    from mast.integrations.inspect import mast_scorer

    return Task(
        dataset=[*SAMPLES, PRODUCT],
        solver=[use_tools(add()), generate()],
        scorer=[includes(), mast_scorer(model=model, api_base=api_base, max_retries=0, cache=False)],
        model=get_model(MODEL, custom_outputs=_turn),
    )


@task
def arithmetic_and_product() -> Task:
    """The arithmetic samples and the product one (tests/test_scout.py's fake judge fails on it)."""
    return Task(
        dataset=[*SAMPLES, PRODUCT],
        solver=[use_tools(add()), generate()],
        scorer=includes(),
        model=get_model(MODEL, custom_outputs=_turn),
    )
