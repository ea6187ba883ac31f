"""The error table: every alphaloop error class carries its exit code and HTTP status, and the
command line, the REST API and the chat tools answer a raised instance with exactly those."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel, ValidationError
from typer.testing import CliRunner

import alphaloop
from alphaloop.cli._app import guarded
from alphaloop.exceptions import (
    EXIT_CODES,
    EXIT_FAILURE,
    EXIT_USAGE,
    HTTP_STATUSES,
    AlphaloopError,
    NoJournal,
    exit_code_of,
    http_status_of,
)
from alphaloop.server import create_app
from alphaloop.settings import Settings
from alphaloop.tools import Tool, ToolContext, call_tool

# Values for the constructor arguments an error class requires, by parameter name.
SAMPLE_ARGS: dict[str, Any] = {
    "message": "boom",
    "reason": "boom",
    "text": "not json",
    "path": Path("nowhere"),
    "exit_code": None,  # a worker killed by a signal
    "pid": None,
    "capability": "tools",
}


class _Args(BaseModel):
    n: int


def _validation_error() -> ValidationError:
    try:
        _Args(n="many")  # type: ignore[arg-type]
    except ValidationError as err:
        return err
    raise AssertionError("pydantic accepted 'many' as an int")


def _subclasses(cls: type[AlphaloopError]) -> set[type[AlphaloopError]]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


@pytest.fixture(scope="module")
def error_classes() -> list[type[AlphaloopError]]:
    """Every alphaloop error class: each module is imported, so classes defined outside
    ``alphaloop.exceptions`` (the loop, the server, the operations, the tools) are found too.
    Classes the tests define (a marker error some of them raise) are not the package's."""
    for module in pkgutil.walk_packages(alphaloop.__path__, "alphaloop."):
        if module.name != "alphaloop.__main__":  # running it is the command line itself
            importlib.import_module(module.name)
    found = _subclasses(AlphaloopError) | {AlphaloopError}
    return sorted((c for c in found if c.__module__.startswith("alphaloop.")), key=_name)


def _instance(cls: type[AlphaloopError]) -> AlphaloopError:
    required = [
        p.name
        for p in list(inspect.signature(cls.__init__).parameters.values())[1:]  # after self
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    missing = [name for name in required if name not in SAMPLE_ARGS]
    assert not missing, f"add sample values for {missing} of {_name(cls)} to SAMPLE_ARGS"
    if not required:
        return cls("boom")
    return cls(**{name: SAMPLE_ARGS[name] for name in required})


def test_the_error_table_is_one_module_of_about_a_dozen_classes(
    error_classes: list[type[AlphaloopError]],
) -> None:
    """Every module was imported, and every alphaloop error class is the table's: a class exists
    when a caller handles it differently, and it is declared there, once."""
    elsewhere = [_name(cls) for cls in error_classes if cls.__module__ != "alphaloop.exceptions"]
    assert elsewhere == []
    assert 10 <= len(error_classes) <= 18


def test_every_error_class_carries_codes_from_the_table(
    error_classes: list[type[AlphaloopError]],
) -> None:
    wrong = []
    for cls in error_classes:
        code, status = cls.exit_code, cls.http_status
        if code not in EXIT_CODES or status not in HTTP_STATUSES:
            wrong.append(f"{_name(cls)}: exit {code}, HTTP {status} not in the table")
        elif code == EXIT_USAGE and not 400 <= status < 500:
            wrong.append(f"{_name(cls)}: bad usage answered {status}, not a client error")
        elif status >= 500 and code != EXIT_FAILURE:
            wrong.append(f"{_name(cls)}: a server-side {status} must exit {EXIT_FAILURE}")
        # What a class says it is must agree with its codes.
        elif issubclass(cls, LookupError) and (code, status) != (EXIT_USAGE, 404):
            wrong.append(f"{_name(cls)} is a LookupError: exit 2, HTTP 404 expected")
        elif issubclass(cls, ValueError) and (code, status) != (EXIT_USAGE, 422):
            wrong.append(f"{_name(cls)} is a ValueError: exit 2, HTTP 422 expected")
    assert not wrong, "\n".join(wrong)


def test_errors_of_other_kinds() -> None:
    invalid = _validation_error()
    assert (exit_code_of(invalid), http_status_of(invalid)) == (2, 422)
    assert (exit_code_of(ValueError("bad")), http_status_of(ValueError("bad"))) == (2, 422)
    assert (exit_code_of(RuntimeError()), http_status_of(RuntimeError())) == (1, 500)


def _cli_exit_code(err: BaseException) -> int:
    app = typer.Typer()

    @app.command()
    def fails() -> None:
        def raise_it() -> None:
            raise err

        guarded(raise_it)

    return CliRunner().invoke(app, []).exit_code


def _server(settings: Settings) -> Callable[[BaseException], tuple[int, dict[str, Any]]]:
    """The real application with one more route, raising the error it is given."""
    app = create_app(settings)
    raised: list[BaseException] = []

    def raise_it() -> None:
        raise raised[-1]

    # First: the page is mounted at "/" and would answer anything routed after it.
    app.router.routes.insert(0, APIRoute("/api/raise-it", raise_it, methods=["GET"]))
    # loopback by name: the server answers no other Host (alphaloop.server.guard)
    client = TestClient(app, base_url="http://localhost", raise_server_exceptions=False)

    def answer(err: BaseException) -> tuple[int, dict[str, Any]]:
        raised.append(err)
        response = client.get("/api/raise-it")
        return response.status_code, response.json()

    return answer


def _tool_status(settings: Settings, err: BaseException) -> int:
    class NoArgs(BaseModel):
        pass

    def raise_it(args: NoArgs, ctx: ToolContext) -> dict[str, Any]:
        raise err

    tools = {"raise_it": Tool("raise_it", "raises", NoArgs, raise_it)}
    result = call_tool(tools, "raise_it", "{}", ToolContext(settings=settings))
    assert not result.ok
    return int(result.data["status"])


def test_cli_server_and_tools_answer_each_error_with_its_codes(
    error_classes: list[type[AlphaloopError]], settings: Settings
) -> None:
    server, wrong = _server(settings), []
    for cls in error_classes:
        err = _instance(cls)
        expected = (cls.exit_code, cls.http_status)
        status, body = server(err)
        got = (_cli_exit_code(err), status)
        detail = body.get("detail", "")
        # The API words a missing journal without its path: error bodies hold no file paths.
        said = "no journal yet in this home" if cls is NoJournal else str(err)
        told = body.get("error") == cls.__name__ and said in detail
        if got != expected or not told:
            wrong.append(f"{_name(cls)}: expected {expected}, CLI and server gave {got} {body}")
        if _tool_status(settings, err) != cls.http_status:
            wrong.append(f"{_name(cls)}: a chat tool reported another status")
    assert not wrong, "\n".join(wrong)


def test_a_pydantic_error_is_bad_usage_on_every_front_end(settings: Settings) -> None:
    err = _validation_error()
    assert _cli_exit_code(err) == EXIT_USAGE
    assert _server(settings)(err)[0] == 422
    assert _tool_status(settings, err) == 422
