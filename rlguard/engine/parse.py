"""Read, decode and parse one file; any failure becomes one RLG000 line, never a traceback."""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from collections.abc import Iterator
from typing import NamedTuple

from rlguard.engine.lazy import cst


class Source(NamedTuple):
    text: str
    encoding: str  # as detected; "utf-8-sig" when the file starts with a BOM


class ParseError(NamedTuple):
    line: int
    column: int
    message: str


def decode(data: bytes) -> Source | ParseError:
    """Decode as Python would: BOM, then coding cookie, then UTF-8."""
    try:
        encoding = _encoding(data)
    except SyntaxError as error:
        return ParseError(getattr(error, "lineno", None) or 1, 1, str(error).split(" (")[0])
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        return ParseError(line, column, f"cannot decode byte 0x{data[error.start]:02x} as {encoding}; declare the file's encoding with a coding cookie")
    except LookupError:
        return ParseError(1, 1, f"unknown encoding {encoding!r}")
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        return ParseError(line, nul - (text.rfind("\n", 0, nul) + 1) + 1, "source contains a NUL byte")
    return Source(text, encoding)


def parse(source: Source) -> cst.Module | ParseError:
    try:
        with _unvalidated_nodes():
            return cst.parse_module(source.text)
    except cst.ParserSyntaxError as error:
        return _compile_error(source.text) or ParseError(error.raw_line, error.raw_column + 1, error.message)
    except (RecursionError, MemoryError) as error:
        return ParseError(1, 1, f"too deeply nested or too large to parse ({type(error).__name__})")
    except Exception as error:  # libcst's native parser raises a few other types on odd input
        return _compile_error(source.text) or ParseError(1, 1, f"cannot parse: {error}")


@contextlib.contextmanager
def _unvalidated_nodes() -> Iterator[None]:
    """libcst validates each node as it is built (``CSTNode._validate``), which only catches nodes a
    program builds wrongly: the parser's never are, and checking them costs several percent of a parse
    (libcst's own comment on ``__post_init__`` says as much). Nodes built for fixes are still validated."""
    node = cst.CSTNode
    validating = node.__dict__["__post_init__"]
    if validating is _no_validation:  # a parse in another thread is under way: it puts it back
        yield
        return
    node.__post_init__ = _no_validation  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        node.__post_init__ = validating  # type: ignore[method-assign]


def _no_validation(_node: object) -> None:
    return None


def _encoding(data: bytes) -> str:
    """A file whose first two lines cannot hold a coding cookie (PEP 263: ``coding[:=]`` in a comment) and
    that has no BOM is UTF-8; any other goes through tokenize's reading, whose import a one-file run
    otherwise does without."""
    first = data.find(b"\n")
    second = data.find(b"\n", first + 1) if first >= 0 else -1
    if not data.startswith(b"\xef\xbb\xbf") and b"coding" not in (data if second < 0 else data[:second]):
        return "utf-8"
    import tokenize

    return tokenize.detect_encoding(io.BytesIO(data).readline)[0]


def syntax_error(text: str) -> ParseError | None:
    """The syntax check for files no rule needs: whatever libcst's grammar accepts is valid.

    Python's own ``compile()`` is an order of magnitude cheaper than libcst, so it goes first. It
    only knows the running interpreter's grammar, though: on 3.11 it rejects 3.12's ``type X = ...``
    and f-strings that reuse their quote, which libcst parses. So its "no" is checked with libcst.
    """
    error = _compile_error(text, flags=0)
    if error is None or not isinstance(parse(Source(text, "utf-8")), ParseError):
        return None
    return error


# Compiling to bytecode skips building Python's ``ast`` objects, which costs more than the rest of the
# compile: it is the quicker check. Its later stages also reject what the grammar accepts ("'return' outside
# function"), which libcst then accepts, and warn ("is" with a literal): warnings from it are not the user's.
_CHECKED_NAME = "<rlguard syntax check>"
_ONLY_AST = 0x400  # ast.PyCF_ONLY_AST: importing ast for it costs more than the syntax check of a small file
warnings.filterwarnings("ignore", module=re.escape(_CHECKED_NAME))


def _compile_error(text: str, flags: int = _ONLY_AST) -> ParseError | None:
    """Python's own diagnosis, which names the offending line more precisely than libcst; ``flags`` 0 also
    runs the compiler's later stages (see ``_CHECKED_NAME``)."""
    try:
        compile(text, _CHECKED_NAME if not flags else "<rlguard>", "exec", flags, dont_inherit=True)
    except SyntaxError as error:
        return ParseError(error.lineno or 1, error.offset or 1, error.msg)
    except (RecursionError, MemoryError, ValueError):
        return None
    return None
