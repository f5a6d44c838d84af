"""The command line's one error handler, shared by ``diag`` and every sub-app mounted on it.

Each Typer app is created with ``cls=DiagGroup``: a :class:`~diag_service.errors.DiagError` raised by
any command is printed as one line on stderr and ends the process with its kind's exit code
(:data:`diag_service.errors.EXIT_CODES`). Commands raise; they do not choose exit codes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from diag_service.errors import LABELS, DiagError, exit_code

err = Console(stderr=True)


def _handled(invoke: Callable[[click.Context], Any], ctx: click.Context) -> Any:
    try:
        return invoke(ctx)
    except DiagError as exc:
        err.print(f"[red]{LABELS[exc.kind]}:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(exit_code(exc)) from exc


class DiagGroup(TyperGroup):
    """A Typer group whose :meth:`invoke` turns a :class:`DiagError` into a message and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        return _handled(super().invoke, ctx)


class DiagCommand(TyperCommand):
    """The same for an app of one command (Typer makes it a command, not a group):
    ``app.command(cls=DiagCommand)``."""

    def invoke(self, ctx: click.Context) -> Any:
        return _handled(super().invoke, ctx)


__all__ = ["DiagCommand", "DiagGroup"]
