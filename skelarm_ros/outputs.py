# Copyright (C) 2026 skelarm_ros contributors
# SPDX-License-Identifier: GPL-3.0-only

"""How every tool writes what it makes: never over an existing output unless asked, never half.

One rule for every tool that writes a file or a folder (``bag_to_log``, ``log_to_bag``,
``plot``, ``identify``, ``compare``, ``demo``): an output that exists already is
refused with one sentence, and ``--force`` replaces it. What is written goes into a
temporary file (or folder) beside the output and is renamed over it at the end, so an
error or a signal on the way leaves the old output (or none), never half of a new one.
Every tool's ``main`` checks its outputs by this rule in one place, before its work
starts (:func:`skelarm_ros.tool.run_main`). An output gets the permissions ``open()`` and
``mkdir`` would give a new file or folder under the process's umask (``0644`` and ``0755``
under ``umask 022``), not the owner-only ones of the temporary it was written through.

This module imports neither rclpy nor numpy.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from matplotlib.figure import Figure


NEW_FILE_MODE = 0o666
"""The mode ``open()`` asks for a new file; the umask takes bits away from it."""
NEW_FOLDER_MODE = 0o777
"""The mode ``mkdir`` asks for a new folder; the umask takes bits away from it."""


def process_umask() -> int:
    """Return the process's umask without changing it (Linux's ``/proc/self/status``; else set and put back).

    ``os.umask`` can only be read by setting it, which for a moment changes it for every
    thread; the kernel reports it in ``/proc/self/status`` (Linux 4.7 and later).
    """
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class OutputExists(ValueError):
    """An output that exists already, written without ``--force``."""


def add_force_option(parser: argparse.ArgumentParser) -> None:
    """Give a tool's parser the ``--force`` option of this rule."""
    parser.add_argument("--force", action="store_true", help="replace an output that exists already")


def check_new(path: str | Path, force: bool = False) -> Path:
    """Return ``path`` after checking it may be written: it does not exist (or ``force``), its folder does.

    Raises
    ------
    OutputExists
        ``"'<path>' exists already; choose another path, or pass --force to replace it"``.
    ValueError
        When the folder it would go into does not exist.
    """
    path = Path(path)
    if path.exists() and not force:
        msg = f"'{path}' exists already; choose another path, or pass --force to replace it"
        raise OutputExists(msg)
    folder = path.resolve().parent
    if not folder.is_dir():
        msg = f"the folder '{folder}' of '{path}' does not exist; create it or choose another path"
        raise ValueError(msg)
    return path


def named_after(source: Path, ending: str, strip: tuple[str, ...] = (), folder: Path | None = None) -> Path:
    """Return the default output of a tool reading ``source``: its name without one of ``strip``, plus ``ending``.

    Parameters
    ----------
    source : Path
        The input (``run.sklog.npz``).
    ending : str
        What the output's name ends with (``.png``, ``_compare.png``).
    strip : tuple[str, ...], optional
        Endings of ``source`` to drop first, the first that matches (``.sklog.npz``, ``.npz``).
    folder : Path | None, optional
        Where the output goes; ``source``'s folder when ``None``.
    """
    name = source.name
    for suffix in strip:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return (source.parent if folder is None else folder) / f"{name}{ending}"


def write_atomically(path: Path, write: Callable[[Path], object], *, durable: bool = False) -> None:
    """Write ``path`` through a temporary file in its folder, renamed over it once ``write`` finished.

    Parameters
    ----------
    path : Path
        The output.
    write : Callable[[Path], object]
        Writes the whole output to the path it is given (the temporary file, which has
        ``path``'s suffix, so writers that go by the suffix write the right format).
    durable : bool, optional
        Flush the file to disk before the rename (what survives a power cut).
    """
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.resolve().parent)
    os.close(handle)
    temporary = Path(name)
    try:
        write(temporary)
        temporary.chmod(NEW_FILE_MODE & ~process_umask())  # mkstemp's 0600 is the temporary's, not the output's
        if durable:
            with temporary.open("rb+") as stream:
                os.fsync(stream.fileno())
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)


def write_folder_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """Write the folder ``path`` as a temporary folder beside it, moved into its place once ``write`` finished.

    An existing folder at ``path`` (``--force``) is moved aside first and removed only
    once the new one is in place. The folder gets the permissions ``mkdir`` gives under
    the process's umask, whatever ``write`` made it with; what ``write`` put in it keeps
    the permissions it was created with.
    """
    parent = path.resolve().parent
    work = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=parent))
    fresh = work / path.name
    old = work / f"{path.name}.old"
    try:
        write(fresh)
        if fresh.is_dir():
            fresh.chmod(NEW_FOLDER_MODE & ~process_umask())
        if path.exists():
            path.replace(old)
        fresh.replace(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def agg_figure(width: float, height: float) -> Figure:
    """Return a constrained-layout matplotlib figure on the Agg canvas, for ``plot``, ``compare`` and ``identify``.

    Agg draws into memory: no display, no GUI toolkit and no GUI library is needed,
    whatever ``MPLBACKEND`` or a matplotlibrc says (a robot's computer has none).

    Parameters
    ----------
    width, height : float
        The figure's size in inches.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure
