"""The project's errors.

`PoolirError` and its subclasses are *user* errors: something is wrong with a file, a model, a
feed or a command line, and the message says what, where. The CLI prints them as one line and
exits 2. Any other exception escaping poolir is a bug in poolir (an internal error), never the
user's fault, and is reported as such.

A message names, in this order, the file, the layer or node, and the problem:

    net.xml: layer 'pool1' (id 3, AvgPool): attribute 'strides' = '0,1': must be >= 1
"""

from __future__ import annotations

import os
import re

# A message is one line of reasonable length whatever a hostile file holds: a word (a run without spaces,
# such as a 2 MB attribute value) is cut at WORD_LIMIT characters, the whole message at MESSAGE_LIMIT.
WORD_LIMIT = 200
MESSAGE_LIMIT = 2000
NAME_LIMIT = 200


def printable(text, limit: int | None = NAME_LIMIT, word_limit: int | None = None) -> str:
    """The one escaping of user-controlled text (names, values, paths) before poolir prints it.

    Every character that is not printable (a newline, an ANSI escape \\x1b, \\x15) is shown escaped, so no
    file can add a line to poolir's output or drive the terminal; text longer than `limit` characters (and
    any word longer than `word_limit`) is cut with an ellipsis. Used by every printer and every error."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="backslashreplace")
    text = str(text)
    if word_limit is not None:  # first, so that the end of a message survives a huge value in its middle
        text = re.sub(r"\S{%d,}" % (word_limit + 1), lambda m: m.group(0)[:word_limit] + "…", text)
    if limit is not None and len(text) > 4 * limit:
        text = text[:4 * limit]
    escaped = text if text.isprintable() else "".join(char if char.isprintable() else repr(char)[1:-1]
                                                      for char in text)
    if limit is not None and len(escaped) > limit:
        escaped = escaped[:limit] + "…"
    return escaped


class PoolirError(Exception):
    """A user error: bad input, unsupported content or a failed precondition the user can fix."""

    def __init__(self, problem: str, *, file: str | os.PathLike | None = None, where: str | None = None):
        self.problem = problem
        self.file = os.fspath(file) if file is not None else None
        self.where = where
        super().__init__(self._format())

    def _format(self) -> str:
        parts = [p for p in (self.file, self.where) if p]
        return printable(": ".join([*parts, self.problem]), limit=MESSAGE_LIMIT, word_limit=WORD_LIMIT)

    def located(self, *, file: str | os.PathLike | None = None, where: str | None = None) -> "PoolirError":
        """Return a copy of this error with the file and/or location filled in where missing."""
        error = type(self).__new__(type(self))
        error.__dict__.update(self.__dict__)
        PoolirError.__init__(
            error,
            self.problem,
            file=self.file if self.file is not None else file,
            where=self.where if self.where is not None else where,
        )
        return error


class InvalidModelError(PoolirError):
    """A model file (IR .xml/.bin or .onnx) is malformed, inconsistent or out of range."""


class UnsupportedError(PoolirError):
    """The input is well formed but uses something poolir does not support (an op, a version, a type)."""


class ConversionError(PoolirError):
    """A conversion cannot keep the model's meaning exactly, so it is refused."""


class FeedError(PoolirError):
    """An input given to a run does not match the model (name, rank, dim or element type)."""


class UsageError(PoolirError):
    """A command-line or API argument is invalid."""


class BudgetError(PoolirError):
    """A file asks for more memory than the budget allows (ir.budget): refused before allocating."""


def as_model_error(error: PoolirError) -> PoolirError:
    """A UsageError raised while reading a model's content is the file's fault: an InvalidModelError."""
    if isinstance(error, UsageError):
        return InvalidModelError(error.problem, file=error.file, where=error.where)
    return error


def layer_label(name: str, layer_id: int | str | None = None, kind: str | None = None) -> str:
    """The one spelling of a layer or node reference in messages: `layer 'pool1' (id 3, AvgPool)`."""
    details = ", ".join(str(d) for d in (f"id {layer_id}" if layer_id is not None else None, kind) if d)
    return f"layer '{_one_line(name)}'" + (f" ({_one_line(details)})" if details else "")


def node_label(name: str, op_type: str | None = None) -> str:
    """The one spelling of an ONNX node reference in messages: `node 'pool1' (MaxPool)`."""
    return f"node '{_one_line(name)}'" + (f" ({_one_line(op_type)})" if op_type else "")


def _one_line(text: str) -> str:
    """Names come from untrusted files; a newline in one must not break the one-line message."""
    return printable(text)
