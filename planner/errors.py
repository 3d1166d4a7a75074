"""The PlannerError tree: every user-facing failure, each knowing its exit code."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class PlannerError(Exception):
    """Base of every error a user may see; `exit_code` is what the CLI returns."""

    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(PlannerError):
    """A file, key or value the user gave is wrong (exit 2)."""

    exit_code = 2


class CatalogError(InputError):
    """A catalog file is malformed, duplicated or unsourced (exit 2)."""


class InfeasibleError(PlannerError):
    """No plan meets the scenario's constraints; the message says which binds (exit 1)."""

    exit_code = 1

    def __init__(self, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.details = details or {}


class SolverError(PlannerError):
    """The solver failed or timed out without any solution (exit 3)."""

    exit_code = 3


def close_match(name: str, choices: Iterable[str]) -> str | None:
    """The closest known name to a misspelt one, or None."""
    found = difflib.get_close_matches(str(name), list(choices), n=1, cutoff=0.5)
    return found[0] if found else None


def unknown_name_message(kind: str, name: str, choices: Iterable[str]) -> str:
    """One sentence for an unknown id: what was given, a close match, what is allowed."""
    choices = sorted(choices)
    hint = close_match(name, choices)
    msg = f"unknown {kind} '{name}'"
    if hint:
        msg += f" (did you mean '{hint}'?)"
    shown = ", ".join(choices[:40]) + (" ..." if len(choices) > 40 else "")
    return f"{msg}; known: {shown}"
