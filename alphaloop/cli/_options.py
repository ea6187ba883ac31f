"""Command options generated from a request model (:mod:`alphaloop.ops.requests`).

A command declared with :func:`request_command` takes one option per field of its request model,
named after the field, with the field's help text and default; the command's function receives
the validated request. Values are checked by the model, not by the option parser, so the command
line refuses exactly what the API and the chat tools refuse (exit 2, naming the flag, the rule
and the value given). :class:`Cli` says how a field reads on the command line when that is not
``--field-name VALUE``: a positional argument, a flag of another name, a list written as text.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from alphaloop.cli._app import fail, flag_error

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Cli:
    """How one request field reads on the command line.

    Attributes:
        flag: the option's name when it is not ``--`` plus the field's (``--time-budget``).
        argument: a positional argument instead of an option.
        type: the type the command line reads (``str`` for a list written as ``A,B``).
        parse: turns what was read into the field's value (None stays None).
        default: what the command line reads when the option is not given (default: the
            field's default).
        metavar: how ``--help`` shows the value.
        help: the help text, when the field's own would mislead on the command line.
    """

    flag: str | None = None
    argument: bool = False
    type: Any = None
    parse: Callable[[Any], Any] | None = None
    default: Any = inspect.Parameter.empty
    metavar: str | None = None
    help: str | None = None


def _base(annotation: Any) -> tuple[Any, bool]:
    """The type under ``X | None`` and whether None is allowed."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return annotation, False


def _read_as(annotation: Any) -> tuple[Any, str | None]:
    """The type an option reads for a field of ``annotation``, and its metavar for choices."""
    base, _ = _base(annotation)
    if get_origin(base) is Annotated:
        base = get_args(base)[0]
    if get_origin(base) is Literal:
        return str, "[" + "|".join(str(a) for a in get_args(base)) + "]"
    if base in (int, float, bool, str):
        return base, None
    return str, None  # dates and the like: pydantic reads the text


def _parameter(name: str, info: FieldInfo, cli: Cli | None) -> inspect.Parameter:
    cli = cli or Cli()
    read, metavar = _read_as(info.annotation)
    read = cli.type or read
    if cli.default is not inspect.Parameter.empty:
        default = cli.default
    elif info.is_required():
        default = ...
    else:
        default = info.get_default(call_default_factory=True)
        if isinstance(default, dict | list):  # read as text by a Cli entry
            default = None
    if default is None and read is not list:
        read = read | None
    help_text = cli.help or info.description
    extra: dict[str, Any] = {"help": help_text}
    if cli.metavar or (metavar and not cli.argument):
        extra["metavar"] = cli.metavar or metavar
    if cli.argument:
        marker = typer.Argument(**extra)
    else:
        names = (cli.flag,) if cli.flag else ()
        marker = typer.Option(*names, **extra)
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        annotation=Annotated[read, marker],
        default=inspect.Parameter.empty if default is ... else default,
    )


_CTX = "_alphaloop_ctx"  # the click context typer hands a command (the parameters' sources)


def _defaulted(ctx: Any, field: str, cli: Cli | None) -> bool:
    """Whether ``field``'s option was left at the model's own default (not given, and no
    default of the command line's own): the request then leaves it unset, so a goal may set
    it (:func:`alphaloop.ops.goal.understand_goal`) and a flag given always wins."""
    if cli is not None and cli.default is not inspect.Parameter.empty:
        return False
    # by name: typer may carry a click of its own, whose enum is not the one imported here
    return getattr(ctx.get_parameter_source(field), "name", None) == "DEFAULT"


def _is_argument(param: inspect.Parameter) -> bool:
    marks = [param.default, *get_args(param.annotation)[1:]]
    return any(isinstance(m, typer.models.ArgumentInfo) for m in marks)


def build_request(model: type[M], values: dict[str, Any], context: dict[str, Any] | None) -> M:
    """``model`` validated from a command's values, or exit 2 naming the flag at fault."""
    try:
        return model.model_validate(values, context=context)
    except ValidationError as err:
        raise flag_error(err) from None


def request_command(
    model: type[BaseModel],
    *,
    cli: dict[str, Cli] | None = None,
    exclude: frozenset[str] | set[str] = frozenset(),
    context: dict[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Makes ``fn(request, **rest)`` a command whose options are ``model``'s fields (less
    ``exclude``) followed by ``fn``'s own parameters (``--json``...).

    The generated function validates the request (with ``context``: the command line may name
    price files) before ``fn`` runs.
    """
    cli = cli or {}
    unknown = set(cli) - set(model.model_fields)
    if unknown:
        raise ValueError(f"Cli entries for fields {model.__name__} lacks: {sorted(unknown)}")

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        hints = get_type_hints(fn, include_extras=True)
        own = list(inspect.signature(fn).parameters.values())[1:]
        fields = [f for f in model.model_fields if f not in exclude]
        mine = [p.replace(annotation=hints[p.name], kind=p.KEYWORD_ONLY) for p in own]
        # The command's own positional arguments come first (``pm decide ID VERDICT``).
        params = [p for p in mine if _is_argument(p)]
        params += [_parameter(f, model.model_fields[f], cli.get(f)) for f in fields]
        params += [p for p in mine if not _is_argument(p)]
        params.append(
            inspect.Parameter(_CTX, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)
        )

        def command(**kwargs: Any) -> Any:
            ctx = kwargs.pop(_CTX)
            values = {}
            for field in fields:
                raw = kwargs.pop(field)
                if _defaulted(ctx, field, cli.get(field)):
                    continue  # left to the model: its fields_set names the options given
                parse = cli[field].parse if field in cli else None
                if raw is not None and parse is not None:
                    raw = parse(raw)
                if raw is not None or not model.model_fields[field].is_required():
                    values[field] = raw
            values = {
                k: v
                for k, v in values.items()
                if v is not None or model.model_fields[k].default is None
            }
            return fn(build_request(model, values, context), **kwargs)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        command.__name__ = fn.__name__
        command.__qualname__ = fn.__qualname__
        command.__doc__ = fn.__doc__
        command.__module__ = fn.__module__
        return command

    return wrap


def pairs(flag: str, value_of: Callable[[str, str], Any] = lambda _k, v: v) -> Callable[..., Any]:
    """A parser of repeated ``NAME=VALUE`` options (``--set``, ``--gate``) into a dict."""

    def parse(items: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for item in items:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise fail(f"{flag} takes NAME=VALUE, got {item!r}", 2)
            found[key.strip()] = value_of(key.strip(), value.strip())
        return found

    return parse


__all__ = ["Cli", "build_request", "pairs", "request_command"]
