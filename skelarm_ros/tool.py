# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How every one-shot tool reads its command line and ends: one form for what it says, one set of exit codes.

Every tool's ``main`` (``bag_to_log``, ``log_to_bag``, ``identify``, ``skelarm-ros plot``,
``compare`` and ``demo``) is :func:`run_main` with the tool's parser, its work, its
outputs and its errors:

- the command line is read with the tool's parser; a bad argument ends it as argparse
  does (usage and ``<prog>: error: <sentence>``, exit code :data:`USAGE`);
- every output the tool will write is checked by the output rule
  (:func:`skelarm_ros.outputs.check_new`) before any work: one that exists already is
  refused unless ``--force`` is given, so the rule is applied in this one place;
- an error the tool expects (a bad file, a bad value) is one line
  ``<prog>: error: <sentence>`` on standard error and exit code :data:`FAILED`; nothing
  else is printed then, but for a result the tool refuses once it has it
  (:class:`Refused`: a twin no better than its prior): its report, which holds the figures
  the refusal rests on, and its notes come first;
- what a user should know besides the result is printed as ``<prog>: note: <sentence>``
  lines on standard error, each once: the tool's own warnings (``UserWarning``) raised
  during the work, then the notes its work returns. Other warnings (a library's
  deprecations) are not the user's concern and are not shown;
- the tool's report goes to standard output, and the exit code is :data:`DONE`.

A signal ends a tool through :func:`skelarm_ros.startup.run_tool` (``<prog>: stopped by
a signal before it finished``, exit code 130), which runs every tool's ``main``.

This module imports neither rclpy nor numpy.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skelarm_ros.outputs import add_force_option, check_new

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from pathlib import Path

DONE = 0
"""Exit code of a tool that did its work."""
FAILED = 1
"""Exit code of a tool that refused its input or its outputs (one ``<prog>: error:`` line)."""
USAGE = 2
"""Exit code of a command line the tool's parser does not accept (argparse's)."""


@dataclass(frozen=True)
class Done:
    """What a tool's work says once it is done.

    Attributes
    ----------
    report : Sequence[str]
        Lines for standard output (what was written, a summary).
    notes : Sequence[str]
        Sentences for standard error, each printed as ``<prog>: note: <sentence>``.
    """

    report: Sequence[str] = ()
    notes: Sequence[str] = ()


class Refused(Exception):
    """A result the tool refuses once it has it: one sentence, and the report with the figures behind it.

    Parameters
    ----------
    sentence : str
        The refusal, naming the figures and the fix.
    report : Sequence[str]
        The report lines, printed on standard output before the error.
    notes : Sequence[str], optional
        What the work says besides (as :attr:`Done.notes`), printed before the report.
    """

    def __init__(self, sentence: str, report: Sequence[str], notes: Sequence[str] = ()) -> None:
        """Keep the sentence, the report and the notes."""
        super().__init__(sentence)
        self.report = tuple(report)
        self.notes = tuple(notes)


def parser(prog: str, description: str, *, writes: bool = True) -> argparse.ArgumentParser:
    """Return a tool's argument parser, with the output rule's ``--force`` when the tool writes.

    Parameters
    ----------
    prog : str
        The tool's name as a user types it (``bag_to_log``, ``skelarm-ros plot``); it
        starts every line the tool prints on standard error.
    description : str
        What the tool does, for ``--help``.
    writes : bool, optional
        Whether the tool writes outputs (``bag_info`` only reads: no ``--force``).
    """
    made = argparse.ArgumentParser(prog=prog, description=description)
    if writes:
        add_force_option(made)
    else:
        made.set_defaults(force=False)
    return made


def run_main(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    work: Callable[[argparse.Namespace], Done],
    *,
    outputs: Callable[[argparse.Namespace], Iterable[str | Path]] | None = None,
    errors: tuple[type[Exception], ...] = (),
) -> int:
    """Run a tool's ``main``: read ``argv``, check its outputs, do ``work``, say what happened; return the exit code.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The tool's parser (:func:`parser`); its ``prog`` starts every line on standard error.
    argv : Sequence[str] | None
        The arguments, without the program name; ``sys.argv[1:]`` when ``None``.
    work : Callable[[argparse.Namespace], Done]
        Does the tool's work from the parsed arguments.
    outputs : Callable[[argparse.Namespace], Iterable[str | Path]] | None, optional
        Every file or folder the work will write, from the parsed arguments; each is
        checked before the work starts, with the parser's ``--force``.
    errors : tuple[type[Exception], ...], optional
        The errors the work raises on input a user can fix, whose message is one sentence.

    Returns
    -------
    int
        :data:`DONE`, :data:`FAILED`, or the parser's own code (:data:`USAGE`; 0 after ``--help``).
    """
    prog = parser.prog
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as stop:  # argparse has said why (or printed the help)
        return stop.code if isinstance(stop.code, int) else USAGE
    try:
        for path in outputs(args) if outputs is not None else ():
            check_new(path, args.force)
    except ValueError as error:  # check_new's sentences: the output exists, or its folder does not
        return _failed(prog, error)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            done = work(args)
    except Refused as refused:
        _say(prog, caught, Done(report=refused.report, notes=refused.notes))
        return _failed(prog, refused)
    except errors as error:
        return _failed(prog, error)
    _say(prog, caught, done)
    return DONE


def _say(prog: str, caught: Sequence[warnings.WarningMessage], done: Done) -> None:
    """Print the work's own warnings and notes (each once) on standard error, its report on standard output."""
    own = [str(item.message) for item in caught if issubclass(item.category, UserWarning)]
    for note in dict.fromkeys([*own, *done.notes]):
        print(f"{prog}: note: {note}", file=sys.stderr)
    for line in done.report:
        print(line)


def _failed(prog: str, error: Exception) -> int:
    """Say ``error`` as the one line ``<prog>: error: <sentence>`` on standard error; return :data:`FAILED`."""
    print(f"{prog}: error: {error}", file=sys.stderr)
    return FAILED
