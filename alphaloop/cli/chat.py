"""``alphaloop chat``: questions about the journal, answered by the LLM through tools."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.markup import escape

from alphaloop.cli._app import JsonFlag, console, err_console, fail, guarded
from alphaloop.settings import get_settings

NO_ENDPOINT = (
    "no LLM endpoint configured: set ALPHALOOP_LLM_BASE_URL (the server's OpenAI-compatible URL, "
    "e.g. http://localhost:8000/v1) and ALPHALOOP_LLM_MODEL (a model id it serves). Without an "
    "LLM, review sessions with `alphaloop sessions` and `alphaloop journal SESSION_ID`."
)


def _chat_trace(trace: Any) -> None:
    args = " ".join(trace.arguments.split())
    args = args if len(args) <= 100 else args[:97] + "..."
    outcome = "ok" if trace.ok else f"error: {json.loads(trace.result).get('error', '')[:120]}"
    line = escape(f"  tool {trace.name}({args}) -> {outcome}")
    err_console.print(f"[dim]{line}[/dim]", highlight=False)


def _note_cut(answer: Any, settings: Any) -> None:
    if answer.cut:
        err_console.print(
            f"[dim](cut at {settings.llm_chat_max_tokens} tokens, "
            "ALPHALOOP_LLM_CHAT_MAX_TOKENS)[/dim]",
            highlight=False,
        )


def _chat_loop(settings, max_steps: int, yes: bool) -> None:
    from rich.markdown import Markdown
    from rich.prompt import Confirm

    from alphaloop.chat import Chat
    from alphaloop.exceptions import LLMError

    def confirm(action: str) -> bool:
        return Confirm.ask(f"[yellow]run[/yellow] {action}?", console=console, default=False)

    agent = Chat(
        settings,
        confirm=None if yes else confirm,
        on_tool=_chat_trace,
        on_progress=lambda text: err_console.print(f"[dim]    {escape(text)}[/dim]"),
        max_steps=max_steps,
    )
    console.print(
        f"alphaloop chat with [bold]{settings.llm_model}[/bold] at "
        f"{settings.llm_base_url}. Ask about sessions, trials and knobs; "
        "'exit' or Ctrl-D leaves."
    )
    while True:
        try:
            question = console.input("[bold cyan]you>[/bold cyan] ").strip()
        except (EOFError, KeyboardInterrupt):
            console.print()
            return
        if question.lower() in ("exit", "quit", ":q"):
            return
        if not question:
            continue
        try:
            answer = agent.ask(question)
        except LLMError as err:
            err_console.print(f"[red]error:[/red] {escape(str(err))}")
            continue
        except KeyboardInterrupt:
            err_console.print("[yellow]interrupted[/yellow]")
            continue
        console.print(Markdown(answer.text))
        _note_cut(answer, settings)


def chat(
    ask: str = typer.Option(None, "--ask", help="ask one question, print the answer, exit"),
    max_steps: int = typer.Option(8, help="model calls allowed per question (tool rounds)"),
    yes: bool = typer.Option(
        False,
        "--yes",
        "-y",
        help="let tools that change something (run a trial, start or stop a session, "
        "validate) act without asking; with --ask they only say what they would do without it",
    ),
    as_json: JsonFlag = False,
) -> None:
    """Chat with the research agent about sessions, trials and knobs (needs an LLM endpoint).

    It answers through tools over the journal, and can run a trial or a small session: it
    asks before anything that changes something; with --ask (nobody to ask) such tools only say
    what they would do unless --yes is given. Reading never asks.
    --json (with --ask) prints the answer and its tool calls as JSON.

    Example: alphaloop chat --ask "what helped most in my last session?"
    """
    settings = get_settings()
    if not settings.llm_configured:
        raise fail(NO_ENDPOINT, 2)
    if max_steps < 1:
        raise fail(f"--max-steps must be at least 1, got {max_steps}", 2)
    if ask is None:
        if as_json:
            raise fail("--json needs --ask", 2)
        _chat_loop(settings, max_steps, yes)
        return
    from alphaloop.chat import Chat

    agent = Chat(
        settings,
        on_tool=None if as_json else _chat_trace,
        max_steps=max_steps,
        describe_only=not yes,
    )
    answer = guarded(agent.ask, ask)
    if as_json:
        typer.echo(json.dumps({**answer.model_dump(mode="json"), "tokens": agent.tokens_used}))
        return
    typer.echo(answer.text)
    _note_cut(answer, settings)
