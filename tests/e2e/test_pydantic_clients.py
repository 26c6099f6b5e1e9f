"""The clients people use with pydantic models, against the real server
(issue 38): the official openai SDK's chat.completions.parse with a
response_format model and openai.pydantic_function_tool (nested models:
`$defs` at the root of a tool's parameters), and instructor (PyPI) in
JSON_SCHEMA and TOOLS modes. The models hold nested models, enums,
Optionals, lists and Field(ge=0.0, le=1.0) floats; every output is parsed
by the client and validated again with jsonschema (format checker on)
against the schema the client sent."""

import enum
import json
from typing import List, Optional

import instructor
import jsonschema
import openai
import pydantic
import pytest
from openai.lib._pydantic import to_strict_json_schema


class Level(str, enum.Enum):
    low = "low"
    mid = "mid"
    high = "high"


class Address(pydantic.BaseModel):
    city: str = pydantic.Field(max_length=20)
    zip_code: str = pydantic.Field(pattern=r"^[0-9]{5}$")


class Review(pydantic.BaseModel):
    title: str = pydantic.Field(max_length=24)
    score: float = pydantic.Field(ge=0.0, le=1.0)
    stars: int = pydantic.Field(ge=1, le=5)
    level: Level
    nickname: Optional[str] = pydantic.Field(max_length=12)
    tags: List[str] = pydantic.Field(max_length=3)
    address: Address
    offset: float = pydantic.Field(ge=-3.5, le=12)


PROMPT = [{"role": "user", "content": "Review a small cafe as JSON."}]


@pytest.fixture(scope="module")
def server(start_server):
    return start_server("-c", "4096", "-t", "2")


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.base_url, api_key="unused",
                         max_retries=0, timeout=300)


def check(instance, schema):
    cls = jsonschema.validators.validator_for(schema)
    cls(schema, format_checker=cls.FORMAT_CHECKER).validate(instance)


@pytest.mark.parametrize("seed", [1, 2])
def test_parse_with_a_nested_model(client, seed):
    r = client.chat.completions.parse(
        model="m", messages=PROMPT, response_format=Review, max_tokens=400,
        temperature=1, seed=seed)
    choice = r.choices[0]
    assert choice.finish_reason == "stop", choice
    review = choice.message.parsed
    assert isinstance(review, Review)
    assert 0.0 <= review.score <= 1.0 and -3.5 <= review.offset <= 12
    check(json.loads(choice.message.content), to_strict_json_schema(Review))


def test_pydantic_function_tool_with_defs(client):
    tool = openai.pydantic_function_tool(Review)
    assert "$defs" in tool["function"]["parameters"]  # what used to fail
    r = client.chat.completions.create(
        model="m", messages=PROMPT, tools=[tool], max_tokens=400,
        temperature=0, tool_choice={"type": "function",
                                    "function": {"name": "Review"}})
    calls = r.choices[0].message.tool_calls
    assert calls and calls[0].function.name == "Review", r
    args = json.loads(calls[0].function.arguments)
    check(args, tool["function"]["parameters"])
    Review.model_validate(args)


@pytest.mark.parametrize("mode", [instructor.Mode.JSON_SCHEMA,
                                  instructor.Mode.TOOLS])
def test_instructor(client, mode):
    ic = instructor.from_openai(client, mode=mode)
    review = ic.chat.completions.create(
        model="m", messages=PROMPT, response_model=Review, max_retries=0,
        max_tokens=400, temperature=0)
    assert isinstance(review, Review)
    check(json.loads(review.model_dump_json()), Review.model_json_schema())
