"""The command line's one error handler, shared by ``diag`` and every sub-app mounted on it.

Each Typer app is created with ``cls=DiagGroup``: a :class:`~diag_service.errors.DiagError` raised by
any command is printed as one line on stderr and ends the process with its kind's exit code
(:data:`diag_service.errors.EXIT_CODES`). Commands raise; they do not choose exit codes.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from diag_service.errors import LABELS, DiagError, exit_code, missing_extra

try:  # typer >= 0.29 carries its own click and no longer depends on click: its classes are the ones it runs
    from typer import _click as click  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older typer runs on click itself
    import click  # type: ignore[no-redef]

err = Console(stderr=True)
#: The extra a command's optional packages come with (pyproject.toml), named when one of them is missing.
COMMAND_EXTRAS = {"serve": "service", "watch": "watch", "label": "label", "lab": "lab", "mcp": "mcp", "kb": "kb"}


def _handled(invoke: Callable[[click.Context], Any], ctx: click.Context) -> Any:
    # a group hands its remaining arguments to the sub-command and clears them: keep them for _wants_json
    rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
    try:
        try:
            return invoke(ctx)
        except ModuleNotFoundError as exc:  # a package of an optional extra, imported when the command ran
            if (exc.name or "").startswith("diag_service"):
                raise
            name = ctx.info_name or ""
            raise missing_extra(exc, f"diag {name}".strip(), COMMAND_EXTRAS.get(name)) from exc
    except DiagError as exc:
        _fail(exc, json_out=_wants_json(ctx, rest))


def _wants_json(ctx: click.Context, rest: list[str]) -> bool:
    """Whether the command that failed was asked for ``--json``: a parsed option of the command's own
    context, or (for a command of a group, whose context the error has already left) ``--json`` among the
    arguments the group passed on, before any ``--``."""
    for p in ctx.command.params:
        if "--json" in getattr(p, "opts", ()) and ctx.params.get(p.name or ""):
            return True
    return "--json" in (rest[:rest.index("--")] if "--" in rest else rest)


def _fail(exc: DiagError, json_out: bool = False) -> NoReturn:
    """Print ``exc`` as one line on stderr and end with its kind's exit code. With ``json_out`` the same
    error is also printed on stdout as one JSON object, ``{"detail", "kind", "exit_code"}`` (the HTTP API's
    error body plus the exit code), so a script reading ``--json`` output always gets JSON."""
    err.print(f"[red]{LABELS[exc.kind]}:[/red] {escape(str(exc))}", soft_wrap=True)
    if json_out:
        sys.stdout.write(json.dumps({"detail": str(exc), "kind": exc.kind.value, "exit_code": exit_code(exc)}) + "\n")
    raise typer.Exit(exit_code(exc)) from exc


class DiagGroup(TyperGroup):
    """A Typer group whose :meth:`invoke` turns a :class:`DiagError` into a message and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        return _handled(super().invoke, ctx)


class LazyDiagGroup(DiagGroup):
    """:class:`DiagGroup` whose sub-commands named in :attr:`lazy` are imported only when run.

    ``lazy`` maps a command name to ``(module, attribute, help)``: the attribute is a Typer app (mounted as
    a group) or a command function. ``diag --help`` lists them from ``help`` without importing anything, so
    a command that needs no model, service or lab does not pay for importing them (issue 21). A module
    that cannot be imported (an optional extra not installed) is a clear usage error naming the extra.
    """

    lazy: dict[str, tuple[str, str, str]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = list(super().list_commands(ctx))
        return names + [n for n in self.lazy if n not in names]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is None and cmd_name in self.lazy:
            help_ = self.lazy[cmd_name][2]
            return TyperCommand(cmd_name, help=help_, short_help=help_)  # for the listing only
        return cmd

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else None
        if name in self.lazy and name not in self.commands:
            try:
                self.add_command(self._load(name), name)
            except DiagError as exc:
                _fail(exc)
        return super().resolve_command(ctx, args)

    def _load(self, name: str) -> click.Command:
        import importlib

        module, attr, help_ = self.lazy[name]
        try:
            obj = getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:
            if (exc.name or "").startswith("diag_service"):
                raise
            raise missing_extra(exc, f"diag {name}", COMMAND_EXTRAS.get(name)) from exc
        if isinstance(obj, typer.Typer):
            if obj.info.help is None:
                obj.info.help = help_
            cb = obj.registered_callback
            if not obj.registered_commands and not obj.registered_groups and cb is not None and cb.callback:
                # a callback-only app (diag slow / diag etpr) is one command: shown as such, without
                # the "COMMAND [ARGS]" of a group that has no sub-commands
                one = typer.Typer(add_completion=False)  # completion is the top-level diag's option
                one.command(name, help=obj.info.help, cls=DiagCommand,
                            context_settings=obj.info.context_settings)(cb.callback)
                return typer.main.get_command(one)
            # mounted as a sub-group, so it does not carry a top-level app's --install-completion
            outer = typer.Typer(add_completion=False)  # completion is the top-level diag's option
            outer.add_typer(obj, name=name)
            return typer.main.get_command(outer).commands[name]  # type: ignore[attr-defined]
        one = typer.Typer(add_completion=False)  # completion is the top-level diag's option
        # a function may carry click's context settings (diag watch takes the command after "--")
        # its docstring is its full help (usage forms, examples); the registry's line is the listing's
        one.command(name, help=inspect.getdoc(obj) or help_, cls=DiagCommand,
                    context_settings=getattr(obj, "context_settings", None))(obj)
        return typer.main.get_command(one)


class DiagCommand(TyperCommand):
    """The same for an app of one command (Typer makes it a command, not a group):
    ``app.command(cls=DiagCommand)``."""

    def invoke(self, ctx: click.Context) -> Any:
        return _handled(super().invoke, ctx)


__all__ = ["DiagCommand", "DiagGroup", "LazyDiagGroup"]
