"""Line numbers for TOML keys and errors, which ``tomllib`` does not give.

A suite-file error must name the line to fix. ``key_lines`` scans the text once
and maps every table header and key to the line it is on, as a path of the same
shape as the parsed data: ``("check", 2, "expect", "weak-isr")`` is the
``weak-isr`` key of the ``expect`` table of the third ``[[check]]``. It follows
table headers, arrays of tables, dotted keys, inline tables and multi-line
strings and arrays; it is only ever asked about text that ``tomllib`` accepted.
``parse_toml`` is ``tomllib`` with its errors given a line, nesting bounded included.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from isrcheck.files import depth

Path = tuple[str | int, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def key_lines(text: str) -> dict[Path, int]:
    """Every table header and key of a valid TOML document, with its 1-based line."""
    return _Scanner().scan(text)


class TomlProblem(ValueError):
    """Text that is not TOML, or TOML nested too deeply; ``line`` is where (1 when unknown)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


def parse_toml(text: str, max_depth: int) -> dict[str, Any]:
    """The TOML document, its arrays and inline tables nested at most ``max_depth`` deep
    (``tomllib`` recurses on each level: thousands would end in RecursionError)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column \d+\)", str(e))
        raise TomlProblem(int(m.group(1)) if m else 1,
                          f"invalid TOML: {re.sub(r' [(]at .*[)]$', '', str(e))}") from None
    except RecursionError:
        data = None
    except ValueError:  # tomllib's int() on a number of more than 4300 digits
        raise TomlProblem(1, "invalid TOML: a number has more than 4300 digits") from None
    if data is None or depth(data, max_depth) > max_depth:
        scanner = _Scanner(max_depth)
        scanner.scan(text)
        raise TomlProblem(scanner.too_deep or 1, f"values nested more than {max_depth} levels deep; "
                                                 f"an option takes a value or a list of values")
    return data


def line_of(lines: dict[Path, int], path: Path) -> int:
    """The line of ``path``, else of its nearest enclosing table or key, else 1."""
    path = tuple(path)
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return 1


class _Scanner:
    def __init__(self, max_depth: int = 0) -> None:
        self.max_depth = max_depth  # when > 0: note the first line nested deeper
        self.too_deep = 0
        self.lines: dict[Path, int] = {}
        self.arrays: dict[Path, int] = {}  # path of an array of tables -> index of its last table
        self.table: Path = ()
        self.stack: list[Path | None] = []  # open inline tables (their path) and arrays (None)
        self.string_end = ""  # closing delimiter of an open multi-line string
        self.expect_key = True  # at the start of a key/value pair
        self.current_key: Path = ()

    def scan(self, text: str) -> dict[Path, int]:
        for number, line in enumerate(text.splitlines(), start=1):
            self._line(line, number)
        return self.lines

    def _record(self, path: Path, number: int) -> None:
        self.lines.setdefault(path, number)

    def _line(self, line: str, number: int) -> None:
        pos = 0
        if self.string_end:
            end = line.find(self.string_end)
            if end < 0:
                return
            pos = end + 3
            self.string_end = ""
        if not self.stack and pos == 0:
            stripped = line.strip()
            if stripped.startswith("["):
                self._header(stripped, number)
                return
            self.expect_key = True
        self._tokens(line, pos, number)

    def _header(self, stripped: str, number: int) -> None:
        is_array = stripped.startswith("[[")
        inner = stripped[2:] if is_array else stripped[1:]
        parts, _ = _parse_key(inner, 0)
        path: Path = ()
        for i, part in enumerate(parts):
            path = path + (part,)
            last = i == len(parts) - 1
            if last and is_array:
                self.arrays[path] = self.arrays.get(path, -1) + 1
                self._record(path, number)
                path = path + (self.arrays[path],)
            elif path in self.arrays:
                path = path + (self.arrays[path],)
        self.table = path
        self._record(path, number)

    def _tokens(self, line: str, pos: int, number: int) -> None:
        n = len(line)
        while pos < n:
            ch = line[pos]
            if ch in " \t,":
                if ch == "," and self.stack and self.stack[-1] is not None:
                    self.expect_key = True
                pos += 1
            elif ch == "#":
                return
            elif ch in "}]":
                if self.stack:
                    self.stack.pop()
                pos += 1
            elif self.expect_key and (not self.stack or self.stack[-1] is not None):
                parts, pos = _parse_key(line, pos)
                if not parts:
                    return
                base = self.stack[-1] if self.stack else self.table
                assert base is not None
                for i in range(1, len(parts) + 1):
                    self._record(base + tuple(parts[:i]), number)
                self.current_key = base + tuple(parts)
                self.expect_key = False
                pos = line.find("=", pos) + 1 if "=" in line[pos:] else n
            elif ch in "\"'":
                pos = self._string(line, pos)
                if pos < 0:
                    return
            elif ch == "{":
                self._open(self.current_key, number)
                self.expect_key = True
                pos += 1
            elif ch == "[":
                self._open(None, number)
                pos += 1
            else:
                pos += 1

    def _open(self, key: Path | None, number: int) -> None:
        self.stack.append(key)
        if self.max_depth and not self.too_deep and len(self.stack) > self.max_depth:
            self.too_deep = number

    def _string(self, line: str, pos: int) -> int:
        """Position after the string starting at ``pos``; -1 when a multi-line string stays open."""
        quote = line[pos]
        if line.startswith(quote * 3, pos):
            end = line.find(quote * 3, pos + 3)
            if end < 0:
                self.string_end = quote * 3
                return -1
            return end + 3
        i = pos + 1
        while i < len(line):
            if quote == '"' and line[i] == "\\":
                i += 2
                continue
            if line[i] == quote:
                return i + 1
            i += 1
        return len(line)


def _parse_key(text: str, pos: int) -> tuple[list[str], int]:
    """A dotted key starting at ``pos``: its parts and the position after it."""
    parts: list[str] = []
    n = len(text)
    while pos < n:
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos >= n:
            break
        ch = text[pos]
        if ch in "\"'":
            end = pos + 1
            while end < n and text[end] != ch:
                end += 2 if ch == '"' and text[end] == "\\" else 1
            raw = text[pos + 1 : end]
            parts.append(raw.encode().decode("unicode_escape") if ch == '"' and "\\" in raw else raw)
            pos = end + 1
        else:
            m = _BARE.match(text, pos)
            if not m:
                break
            parts.append(m.group())
            pos = m.end()
        while pos < n and text[pos] in " \t":
            pos += 1
        if pos < n and text[pos] == ".":
            pos += 1
            continue
        break
    return parts, pos
