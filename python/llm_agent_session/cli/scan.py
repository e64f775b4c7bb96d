"""``scan``: which histories hold secrets, and where (docs/secrets.md).

Every finding says its rule, its file, its line and envelope and where in it, and a
fingerprint to tell findings apart: never the secret. Exit 0 when nothing is found, 8
when something is, 1 when a file could not be read (what was found in the others is
still printed).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any, Callable, Dict, List

from .exit_codes import FAILED, NOT_A_TRANSCRIPT, OK, USAGE
from .output import CliError, Out, count, human_bytes

DESCRIPTION = """Find secrets in transcripts, Claude Code and Codex session files (.jsonl.zst
too) and a transcript's artifacts: cloud, model-provider, source-host, payment and
messaging keys and tokens, private keys, JWTs, URLs with passwords, and key=/password=
assignments that look random. Inside JSON strings, base64, tool arguments and text
split between a message's parts too. A PATH that is a directory is searched for
*.jsonl, *.jsonl.zst and <stem>.artifacts/. Each finding names the rule, the file, the
line, the envelope and where in it, and a fingerprint (HMAC under a key of this
account) that tells findings apart: the secret itself is never printed."""

# As search (and grep): 1 is an answer, "found" (nothing else fails with 1 here), and a
# file that could not be read is 3, which wins over 0 and 1 (the findings elsewhere are
# printed all the same).
EXIT_CODES = {OK: "nothing found (and every file could be scanned)",
              FAILED: "at least one secret was found",
              NOT_A_TRANSCRIPT: "a PATH is missing, or a file under one could not be read (the others were "
                                "scanned; their findings are printed)"}


def add_parser(add: Callable[..., argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    p = add("scan", EXIT_CODES, parents=[common], help="find secrets in histories (transcripts, Claude Code, Codex)",
            description=DESCRIPTION)
    p.add_argument("paths", nargs="*", metavar="PATH", help="a file, or a directory of histories (one at least)")
    p.add_argument("--json", action="store_true", help="one JSON object per file scanned, its findings in it")
    p.add_argument("--config", metavar="FILE",
                   help="rules and allowed values (default: secrets.json in the configuration directory, "
                        "docs/secrets.md)")
    p.add_argument("--rules", action="store_true", help="list the rules and exit")


def finding_json(located: Any) -> Dict[str, Any]:
    f = located.finding
    return {"rule": f.rule, "line": located.line, "offset": located.offset, "envelope": located.envelope,
            "type": located.type, "where": f.where(), "path": list(f.path), "start": f.start, "end": f.end,
            "parts": f.parts, "base64": f.base64, "fingerprint": f.fingerprint}


def _rules(args: argparse.Namespace) -> Any:
    from ..secrets import ConfigError, load_rules

    try:
        return load_rules(args.config)
    except ConfigError as e:
        raise CliError(str(e), USAGE) from None


def _print_rules(out: Out, rules: Any) -> None:
    for rule in rules.rules:
        out.line((f"{rule.name:28}", "key"), f" {rule.family:15} ", ", ".join(rule.keywords)[:80])


def _print_file(out: Out, result: Any) -> None:
    if result.error is not None:
        out.line((f"{result.path}", "error"), f": cannot read it ({result.error})")
    if not result.findings:
        return
    out.line((result.path, "key"), f" ({result.format}): {count(len(result.findings))} secret(s)")
    for located in result.findings:
        where = f"line {count(located.line)}"
        if located.envelope is not None:
            where += f", envelope {located.envelope} ({located.type})"
        out.line("  ", (located.finding.rule, "warn"), f"  {where}, {located.finding.where()}",
                 (f"  fingerprint {located.finding.fingerprint}", "dim"))


def run(args: argparse.Namespace, out: Out) -> int:
    from ..secrets import Fingerprints, histories, scan_file
    from .progress import Progress

    rules = _rules(args)
    if args.rules:
        _print_rules(out, rules)
        return OK
    if not args.paths:
        raise CliError("name at least one PATH to scan", USAGE)
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise CliError(f"{missing[0]}: no such file or directory", NOT_A_TRANSCRIPT)
    fingerprints = Fingerprints.default()
    errors: List[str] = []
    files = found = with_secrets = size = 0

    def unreadable(path: str, reason: str) -> None:
        errors.append(path)
        if args.json:
            out.stream.write(json.dumps({"path": path, "error": reason}, ensure_ascii=True) + "\n")
        else:
            out.line((path, "error"), f": cannot read it ({reason})")

    with Progress("scanning for secrets") as bar:
        for path, fmt in histories(args.paths, on_error=unreadable):
            result = scan_file(path, rules, fingerprints, fmt)
            files += 1
            size += result.bytes
            found += len(result.findings)
            with_secrets += bool(result.findings)
            if result.error is not None:
                errors.append(path)
            bar.update(files, None, f"scanning for secrets: {files} file(s), {human_bytes(size)}")
            if args.json:
                out.stream.write(json.dumps({
                    "path": result.path, "format": result.format, "bytes": result.bytes, "lines": result.lines,
                    "error": result.error, "findings": [finding_json(x) for x in result.findings],
                }, ensure_ascii=True) + "\n")
            else:
                _print_file(out, result)
    if not args.json:
        summary = f"{count(files)} file(s), {human_bytes(size)} scanned: "
        summary += f"{count(found)} secret(s) in {count(with_secrets)} file(s)" if found else "no secret found"
        if errors:
            summary += f"; {count(len(errors))} could not be read"
        out.line((summary, "warn" if found or errors else "ok"))
    if errors:
        return NOT_A_TRANSCRIPT
    return FAILED if found else OK
