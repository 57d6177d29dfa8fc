"""Command-line parsing only: it reads arguments, calls the engine, and picks a reporter.

Exit codes: 0 no findings, 1 findings, 2 usage or configuration error. No traceback
reaches the user: anything unexpected becomes one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from rlguard import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout, with the terminal width read as shutil would (COLUMNS, then the
    terminal, else 80): argparse makes a formatter for every option it declares, and would import
    shutil, with its compression modules, for the width."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_terminal_width() - 2)


def _terminal_width() -> int:
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80 if sys.__stdout__ else 80
    except (AttributeError, ValueError, OSError):  # not a terminal, or a stream without a descriptor
        return 80


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # argparse exits 2 too; keep one line, no usage dump
        raise UsageError(f"{self.prog}: {message}")


class UsageError(Exception):
    pass


def _codes(value: str) -> list[str]:
    return [code.strip().upper() for code in value.split(",") if code.strip()]


def _lint_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("paths", nargs="*", help="files or folders (default: the current folder); `-` reads stdin")
    sub.add_argument("--stdin-filename", metavar="PATH",
                     help="with `-`: the file the text on stdin is (for its configuration and in reports)")
    sub.add_argument("--force-exclude", action="store_true",
                     help="apply `exclude` also to files named explicitly (as pre-commit names them)")
    sub.add_argument("--config", metavar="PATH",
                     help="read [tool.rlguard] from this TOML file for every file, instead of each file's nearest pyproject.toml")
    sub.add_argument("--select", type=_codes, help="only these rule codes (comma-separated; prefixes allowed)")
    sub.add_argument("--extend-select", type=_codes, default=[], metavar="CODES",
                     help="rule codes to add to the selection (from --select or the configuration)")
    sub.add_argument("--ignore", type=_codes, default=[], help="skip these rule codes")
    sub.add_argument("--target-torchrl", metavar="VERSION", help="judge against this torchrl version")
    sub.add_argument("--jobs", "-j", type=int, help="worker processes (default: all cores; 1 runs in-process)")
    sub.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    sub.add_argument("--cache-dir", help="where the cache lives (default: .rlguard_cache at the project root)")
    sub.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                     help="colour the text output (auto: on a terminal, unless NO_COLOR is set)")
    sub.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    sub.add_argument("--unsafe-fixes", action="store_true", help="also apply fixes marked unsafe")
    sub.add_argument("--show-unused-noqa", action="store_true",
                     help="also report suppressions that silence nothing (RLG100); with fix, take their unused codes out")
    sub.add_argument("--diff", action="store_true", help="print the fixes as a diff and write nothing")
    sub.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings (for fix: that remain)")


def _check_options(check: argparse.ArgumentParser) -> None:
    _lint_options(check)
    check.add_argument("--output-format", "--format", dest="output_format", default="text",
                       choices=["text", "concise", "full", "json", "github", "sarif"],
                       help="text: message and remedy on two lines; concise: one line; full: one long line")
    check.add_argument("--output-file", "-o", metavar="PATH", help="write the report to PATH instead of stdout")
    check.add_argument("--statistics", action="store_true",
                       help="print only a table of counts per rule (to stderr beside json, github and sarif)")
    check.add_argument("--fix", action="store_true", help="apply safe fixes (like `rlguard fix`)")
    check.add_argument("--watch", action="store_true",
                       help="check again whenever a file or configuration changes, until Ctrl-C (needs watchdog: the `watch` extra)")
    check.add_argument("--add-noqa", action="store_true",
                       help="add `# noqa: CODE` to each line with a finding (merged into a noqa already there), and write the files")


def _doctor_options(doctor: argparse.ArgumentParser) -> None:
    doctor.add_argument("--format", choices=["text", "json"], default="text")
    doctor.add_argument("--project", metavar="PATH", help="also say which findings in PATH depend on the torchrl version")
    doctor.add_argument("--target-torchrl", metavar="VERSION", help="as for check")
    doctor.add_argument("--extension-path", metavar="SO", help="probe this torchrl extension build instead of the installed one")


def _explain_options(explain: argparse.ArgumentParser) -> None:
    explain.add_argument("code")


def _no_options(_: argparse.ArgumentParser) -> None:
    pass


# Each command: its help line, and what declares its arguments.
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "check": ("report findings", _check_options),
    "fix": ("apply fixes and write the files", _lint_options),
    "doctor": ("check whether this TorchRL install can do what the code asks", _doctor_options),
    "server": ("run the language server on stdio (needs the `lsp` extra: pygls)", _no_options),
    "rules": ("list the rules", _no_options),
    "explain": ("print one rule's documentation", _explain_options),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``command`` that command alone: declaring every option of
    every command costs about as much as a warm one-file check itself."""
    parser = _Parser(prog="rlguard", description="Lint and fix TorchRL/tensordict code.")
    parser.add_argument("--version", "-V", action="version", version=f"rlguard {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (summary, declare) in _COMMANDS.items():
        if command in (None, name):
            declare(commands.add_parser(name, help=summary))
    return parser


def _command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option (rlguard's own options take
    no value). None when there is none, or it is not a command: then the whole parser answers."""
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in _COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `rlguard explain X | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FINDINGS
    except Exception as error:  # last resort: one line, never a traceback
        print(f"rlguard: internal error: {type(error).__name__}: {error} (please report it)", file=sys.stderr)
        return EXIT_USAGE


def _main(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command(words)).parse_args(words)
    if args.command is None:
        build_parser().print_help()
        return EXIT_USAGE
    if args.command == "rules":
        from rlguard.docs import rules_table

        print(rules_table())
        return EXIT_CLEAN
    if args.command == "explain":
        from rlguard.docs import explain

        text = explain(args.code)
        if text is None:
            raise UsageError(f"unknown rule code {args.code!r}; `rlguard rules` lists them")
        print(text)
        return EXIT_CLEAN
    if args.command == "server":
        return _server()
    from rlguard.commands import run_doctor, run_lint

    return run_doctor(args) if args.command == "doctor" else run_lint(args)


def _server() -> int:
    try:
        from rlguard.server import main as serve
    except ImportError as error:
        raise UsageError(f"`rlguard server` needs `rlguard[lsp]` (pygls, lsprotocol): {error}") from None
    return serve()
