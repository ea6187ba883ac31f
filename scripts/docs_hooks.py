"""MkDocs hooks: the reference pages written at build time from the code itself.

A page holding one of the markers below gets it replaced by Markdown generated from what the
code declares, so the docs cannot drift from it:

- ``<!-- alphaloop:commands -->``: every command and option of the command line (the Typer
  app, walked as Click sees it);
- ``<!-- alphaloop:api -->``: every route of the REST API and the schemas it uses, from the
  OpenAPI schema the server itself serves at ``/openapi.json``;

Nothing is fetched: the schema comes from the application object, not from a running server.
"""

from __future__ import annotations

import tempfile
from html import escape
from pathlib import Path
from typing import Any

MARKERS = {
    "<!-- alphaloop:commands -->": "commands",
    "<!-- alphaloop:api -->": "api",
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: fills in the generated sections of a page."""
    for marker, what in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, GENERATORS[what]())
    return markdown


def _text(text: str) -> str:
    """``text`` as Markdown prose: ``<`` and ``>`` escaped outside code spans (a help's
    ``FILE-<figure>.png`` is not an HTML tag)."""
    parts = text.split("`")
    return "`".join(escape(p, quote=False) if i % 2 == 0 else p for i, p in enumerate(parts))


def _cell(text: Any) -> str:
    """``text`` as one Markdown table cell."""
    if text in (None, ""):
        return ""
    return _text(" ".join(str(text).split())).replace("|", "\\|")


# --- the command line --------------------------------------------------------------------------


def commands_markdown() -> str:
    """Every command, group by group: its help, its usage and a table of its options."""
    import typer.main

    from alphaloop.cli import app

    root = typer.main.get_command(app)
    parts: list[str] = []
    for path, command in _walk(root, ("alphaloop",)):
        parts.append(_command_markdown(path, command))
    return "\n".join(parts)


def _walk(command: Any, path: tuple[str, ...]) -> Any:
    for name, sub in getattr(command, "commands", {}).items():
        yield (*path, name), sub
        yield from _walk(sub, (*path, name))


def _command_markdown(path: tuple[str, ...], command: Any) -> str:
    import typer

    name = " ".join(path)
    level = "#" * min(len(path) + 1, 4)
    help_text = _text((command.help or "").strip())
    ctx = typer.Context(command, info_name=name)
    usage = " ".join(command.collect_usage_pieces(ctx))
    out = [f"{level} `{name}`", "", help_text, "", "```text", f"{name} {usage}".rstrip(), "```", ""]
    rows = [_param_row(p, ctx) for p in command.get_params(ctx) if p.name != "help"]
    if rows:
        out += ["| option | takes | default | meaning |", "|---|---|---|---|", *rows, ""]
    return "\n".join(out)


def _param_row(param: Any, ctx: Any) -> str:
    names = ", ".join(f"`{n}`" for n in (*param.opts, *param.secondary_opts))
    if param.param_type_name == "argument":
        names = f"`{param.name.upper()}` (argument)"
    flag = bool(getattr(param, "is_flag", False))
    takes = "flag" if flag else (param.metavar or param.display_type(ctx)).strip("<>")
    default = param.default
    if flag:
        shown_default = "on" if default else ""
    elif callable(default) or default in (None, (), []):
        shown_default = ""
    else:
        shown_default = f"`{default}`"
    meaning = getattr(param, "help", None) or ""
    if param.required:
        meaning = f"(required) {meaning}"
    return f"| {names} | {_cell(takes)} | {shown_default} | {_cell(meaning)} |"


# --- the REST API ------------------------------------------------------------------------------


def api_markdown() -> str:
    """The routes by tag (method, path, what it does, its parameters and body), then the
    request and response schemas."""
    from alphaloop.server import create_app
    from alphaloop.settings import Settings

    with tempfile.TemporaryDirectory() as home:
        schema = create_app(Settings(ALPHALOOP_HOME=str(Path(home) / "home"))).openapi()
    by_tag: dict[str, list[str]] = {}
    for route, methods in schema.get("paths", {}).items():
        for method, op in methods.items():
            tag = (op.get("tags") or ["other"])[0]
            by_tag.setdefault(tag, []).append(_route_markdown(method.upper(), route, op))
    parts = []
    for tag in sorted(by_tag):
        parts += [f"## {tag}", "", *by_tag[tag]]
    parts += ["## Schemas", ""]
    for name, spec in sorted(schema.get("components", {}).get("schemas", {}).items()):
        parts.append(_schema_markdown(name, spec))
    return "\n".join(parts)


def _type(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    if "anyOf" in spec:
        return " or ".join(_type(s) for s in spec["anyOf"])
    if spec.get("type") == "array":
        return f"list of {_type(spec.get('items', {}))}"
    if "enum" in spec:
        return " \\| ".join(f"`{v}`" for v in spec["enum"])
    return str(spec.get("type", "any"))


def _route_markdown(method: str, route: str, op: dict[str, Any]) -> str:
    out = [f"### `{method} {route}`", "", _text(op.get("description") or op.get("summary") or "")]
    out.append("")
    params = op.get("parameters", [])
    if params:
        out += ["| parameter | in | type | meaning |", "|---|---|---|---|"]
        for p in params:
            req = " (required)" if p.get("required") else ""
            meaning = p.get("description") or p.get("schema", {}).get("description", "")
            out.append(
                f"| `{p['name']}`{req} | {p['in']} | {_cell(_type(p.get('schema', {})))} "
                f"| {_cell(meaning)} |"
            )
        out.append("")
    body = op.get("requestBody", {}).get("content", {})
    for media, content in body.items():
        out += [f"Body ({media}): {_cell(_type(content.get('schema', {})))}", ""]
    codes = ", ".join(f"{code} {r.get('description', '')}" for code, r in op["responses"].items())
    out += [f"Answers: {_cell(codes)}", ""]
    return "\n".join(out)


def _schema_markdown(name: str, spec: dict[str, Any]) -> str:
    out = [f"### {name}", "", _text(" ".join((spec.get("description") or "").split())), ""]
    props = spec.get("properties", {})
    if props:
        required = set(spec.get("required", []))
        out += ["| field | type | meaning |", "|---|---|---|"]
        for field, fs in props.items():
            req = " (required)" if field in required else ""
            meaning = fs.get("description") or fs.get("title", "")
            out.append(f"| `{field}`{req} | {_cell(_type(fs))} | {_cell(meaning)} |")
        out.append("")
    return "\n".join(out)


GENERATORS = {"commands": commands_markdown, "api": api_markdown}
