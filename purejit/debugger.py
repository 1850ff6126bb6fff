"""`purejit.debug.breakpoint`: stop inside (jitted) code and look at its values.

At the call, the user's frames (purejit's own, the standard library's and installed
packages' left out) are captured: their array locals (tracers under jit, arrays outside)
become the operands of one `debug.callback`, the other locals are kept as they are. When
the program runs, the callback gets the values on the host and opens a small command-line
debugger on `sys.stdin` / `sys.stdout` (JAX's "cli" debugger):

    p EXPR / pp EXPR   evaluate in the frame (arrays as NumPy arrays)
    u / d              the frame above / below
    l / ll             source lines around the breakpoint / the whole function
    w                  the captured frames, the current one marked
    c                  continue the program
    q                  stop it: raises `bdb.BdbQuit` out of the program's call
"""

from __future__ import annotations

import bdb
import cmd
import linecache
import os
import pprint
import sys
import sysconfig
import traceback
from dataclasses import dataclass, field

import numpy as np

_PUREJIT = os.path.dirname(os.path.abspath(__file__))
_IR = os.path.join(os.path.dirname(_PUREJIT), "ir")
_PASSES = os.path.join(os.path.dirname(_PUREJIT), "passes")
_LIBRARY = tuple(
    os.path.abspath(p)
    for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]}
    if p
)


@dataclass
class Frame:
    """One captured frame: where it is, and its locals (arrays filled in when it runs)."""

    filename: str
    function: str
    lineno: int
    first_line: int
    globals: dict
    static: dict
    array_names: list = field(default_factory=list)


def _library_file(filename: str) -> bool:
    path = os.path.abspath(filename)
    ours = path.startswith((_PUREJIT + os.sep, _IR + os.sep, _PASSES + os.sep))
    return ours or path.startswith(_LIBRARY) or filename.startswith("<frozen")


def capture(frame, *, filter_frames: bool, num_frames: int | None, is_array):
    """The frames from `frame` outwards (the user's only, if `filter_frames`; at most
    `num_frames`), and their array locals in order, for the callback's operands."""
    frames, arrays = [], []
    f = frame
    while f is not None and (num_frames is None or len(frames) < num_frames):
        code = f.f_code
        if not (filter_frames and _library_file(code.co_filename)):
            fr = Frame(code.co_filename, code.co_name, f.f_lineno, code.co_firstlineno,
                       f.f_globals, {})  # fmt: skip
            for name, value in f.f_locals.items():
                if is_array(value) and not isinstance(value, (int, float, complex, bool)):
                    fr.array_names.append(name)
                    arrays.append(value)
                else:
                    fr.static[name] = value
            frames.append(fr)
        f = f.f_back
    return frames, arrays


class Debugger(cmd.Cmd):
    """The command-line debugger over captured frames whose arrays now have values."""

    prompt = "(purejit-db) "

    def __init__(self, frames: list[Frame], values: list[dict], stdin=None, stdout=None):
        super().__init__(stdin=stdin or sys.stdin, stdout=stdout or sys.stdout)
        self.use_rawinput = False
        self.frames, self.values, self.index = frames, values, 0

    def _say(self, text: str) -> None:
        self.stdout.write(text + "\n")

    def _scope(self) -> tuple[dict, dict]:
        fr = self.frames[self.index]
        return fr.globals, {**fr.static, **self.values[self.index]}

    def _where(self, i: int) -> str:
        fr = self.frames[i]
        return f"{fr.filename}:{fr.lineno} in {fr.function}"

    def preloop(self) -> None:
        self._say(f"Entering purejit debugger at {self._where(0)}")
        self.do_l("")

    def _eval(self, expr: str, show) -> None:
        try:
            show(eval(expr, *self._scope()))
        except Exception:
            self._say("".join(traceback.format_exception_only(*sys.exc_info()[:2])).strip())

    def do_p(self, arg: str) -> None:
        """p EXPR: print the value of EXPR in the current frame."""
        self._eval(arg, lambda v: self._say(repr(v)))

    def do_pp(self, arg: str) -> None:
        """pp EXPR: pretty-print the value of EXPR in the current frame."""
        self._eval(arg, lambda v: self._say(pprint.pformat(v)))

    def do_u(self, arg: str) -> None:
        """u: move to the frame above (the caller)."""
        if self.index + 1 >= len(self.frames):
            self._say("At topmost frame.")
            return
        self.index += 1
        self._say(self._where(self.index))

    def do_d(self, arg: str) -> None:
        """d: move to the frame below."""
        if self.index == 0:
            self._say("At bottommost frame.")
            return
        self.index -= 1
        self._say(self._where(self.index))

    def _lines(self, start: int, stop: int) -> None:
        fr = self.frames[self.index]
        for n in range(max(1, start), stop + 1):
            line = linecache.getline(fr.filename, n)
            if not line:
                break
            mark = "->" if n == fr.lineno else "  "
            self._say(f"{n:4d} {mark} {line.rstrip()}")

    def do_l(self, arg: str) -> None:
        """l: the source lines around the current line."""
        line = self.frames[self.index].lineno
        self._lines(line - 5, line + 5)

    def do_ll(self, arg: str) -> None:
        """ll: the whole function of the current frame."""
        fr = self.frames[self.index]
        lines = linecache.getlines(fr.filename)
        stop = fr.lineno
        while stop < len(lines) and lines[stop].strip():
            stop += 1
        self._lines(fr.first_line, stop)

    def do_w(self, arg: str) -> None:
        """w: the captured frames, innermost first; the current one marked."""
        for i in range(len(self.frames)):
            self._say(("> " if i == self.index else "  ") + self._where(i))

    def do_c(self, arg: str) -> bool:
        """c: continue running the program."""
        return True

    do_continue = do_c

    def do_q(self, arg: str) -> bool:
        """q: stop the program (raises bdb.BdbQuit)."""
        raise bdb.BdbQuit

    do_quit = do_q

    def do_EOF(self, arg: str) -> bool:
        return True

    def default(self, line: str) -> None:
        self._eval(line, lambda v: self._say(repr(v)))


def run(frames: list[Frame], host_arrays: list) -> None:
    """The debugger over `frames` whose array locals are `host_arrays` (in capture order)."""
    values, it = [], iter(host_arrays)
    for fr in frames:
        values.append({name: np.asarray(next(it)) for name in fr.array_names})
    Debugger(frames, values).cmdloop()
