"""Run a command as on a robot's computer: the GUI libraries hidden in a mount namespace of its own.

OpenGL, EGL, GLX, X11, xcb, xkbcommon and fontconfig read as empty files (``/dev/null``
bound over each) inside a private mount namespace (``unshare -m``), so whatever loads
them fails as it would where they are not installed; nothing outside the command sees a
change. Making a mount namespace needs root or the capability to; where it cannot be
made, :func:`problem` says why and the tests that need it skip.
"""

from __future__ import annotations

import functools
import shlex
import shutil
import subprocess
import sys

HIDDEN = (
    "libGL.so.1",
    "libEGL.so.1",
    "libGLX.so.0",
    "libOpenGL.so.0",
    "libX11.so.6",
    "libxcb.so.1",
    "libxkbcommon.so.0",
    "libxkbcommon-x11.so.0",
    "libfontconfig.so.1",
)


def library_paths() -> list[str]:
    """Where the dynamic linker finds each of :data:`HIDDEN` on this machine (``ldconfig -p``)."""
    listed = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    found = set()
    for line in listed.splitlines():
        name, _, path = line.strip().partition(" => ")
        if name.split(" ", 1)[0] in HIDDEN and path:
            found.add(path.strip())
    return sorted(found)


def prefix() -> list[str]:
    """Words to put before a command so that it runs with the GUI libraries hidden."""
    binds = " && ".join(f"mount --bind /dev/null {shlex.quote(path)}" for path in library_paths())
    return ["unshare", "-m", "bash", "-c", f'{binds} && exec "$@"', "without-gui"]


@functools.cache
def problem() -> str | None:
    """Why commands cannot run with the GUI libraries hidden here, or ``None`` when they can."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed"
    if not library_paths():
        return "none of the GUI libraries is installed here, so there is nothing to hide (run the test as is)"
    done = subprocess.run(
        [*prefix(), sys.executable, "-c", "import ctypes; ctypes.CDLL('libGL.so.1')"],
        capture_output=True,
        text=True,
        check=False,
    )
    if "file too short" in done.stderr or "cannot open shared object" in done.stderr:
        return None
    return f"a mount namespace with the GUI libraries hidden cannot be made here ({done.stderr.strip()[-200:]})"
