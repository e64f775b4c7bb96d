"""Seeded secrets for the scanner's tests and benchmark (``benches/scan_speed.py``).

Every secret is made at run time from a random generator, in the shape its issuer gives
it (prefix, alphabet, length): fake but valid-looking, so no key-shaped literal is kept
in the repository for a host's push protection to flag. :func:`seeds` gives one per
rule of every family; :func:`placed` puts each where agents leave them: in a tool's
output, in a dispatched call's arguments (and the assistant's ``tool_calls`` string), in
JSON printed by a tool (escaped once more), split between two text parts of a message,
and base64-encoded in a command.

``python benches/secret_corpus.py OUT.jsonl [--seed N]`` writes the seeded transcript and
prints, per seed, its rule and line.
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
import sys
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM = UPPER + LOWER + DIGITS
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


class Seed(NamedTuple):
    """A secret, the rule that must name it, its family, and a line of text that holds it
    as people write it."""

    rule: str
    family: str
    secret: str
    text: str


def _run(rng: random.Random, alphabet: str, n: int, need: str = DIGITS) -> str:
    """`n` characters of `alphabet`, at least one of `need` among them."""
    while True:
        out = "".join(rng.choice(alphabet) for _ in range(n))
        if not need or any(c in need for c in out):
            return out


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _password(rng: random.Random, symbols: str = "!#%^") -> str:
    return _run(rng, ALNUM, 4, UPPER) + _run(rng, ALNUM, 8) + rng.choice(symbols) + _run(rng, DIGITS, 2)


def seeds(rng: random.Random) -> List[Seed]:
    """One seed for every built-in rule (built from parts: nothing here is a real key)."""
    pem_body = "\n".join(_run(rng, ALNUM + "+/", 64) for _ in range(8))
    pem_label = "RSA " + "PRIVATE" + " KEY"
    pem = f"-----BEGIN {pem_label}-----\n{pem_body}\n-----END {pem_label}-----"
    aws_id = "AK" + "IA" + _run(rng, UPPER + "234567", 16, "234567")
    aws_secret = _run(rng, ALNUM + "+/", 40)
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = _b64(json.dumps({"sub": str(rng.randrange(10**9)), "iat": 1760000000 + rng.randrange(10**6)},
                             separators=(",", ":")).encode())
    jwt = f"{header}.{claims}.{_run(rng, B64URL, 43)}"
    db_password, url_password = _password(rng, "-._~"), _password(rng, "-._~")  # as a URL takes them unencoded
    slack_hook = "T" + _run(rng, UPPER + DIGITS, 8) + "/B" + _run(rng, UPPER + DIGITS, 8) + "/" + _run(rng, ALNUM, 24)
    out = [
        Seed("private-key", "private-key", pem, f"$ cat ~/.ssh/deploy_key\n{pem}\n"),
        Seed("aws-access-key-id", "cloud", aws_id, f"export AWS_ACCESS_KEY_ID={aws_id}"),
        Seed("aws-secret-access-key", "cloud", aws_secret, f"aws_secret_access_key = {aws_secret}"),
        Seed("gcp-api-key", "cloud", "AI" + "za" + (k := _run(rng, B64URL, 35)), ""),
        Seed("gcp-oauth-client-secret", "cloud", "GOC" + "SPX-" + _run(rng, B64URL, 28), ""),
        Seed("azure-storage-key", "cloud", (az := _run(rng, ALNUM + "+/", 86) + "=="),
             f"DefaultEndpointsProtocol=https;AccountName=acme;Account" f"Key={az};EndpointSuffix=core.windows.net"),
        Seed("anthropic-api-key", "model-provider", "sk-" + "ant-api03-" + _run(rng, B64URL, 93) + "AA", ""),
        Seed("openrouter-api-key", "model-provider", "sk-" + "or-v1-" + _run(rng, HEX, 64), ""),
        Seed("openai-api-key", "model-provider", "sk-" + "proj-" + _run(rng, B64URL, 156), ""),
        Seed("sk-api-key", "model-provider", "sk-" + _run(rng, ALNUM, 48), ""),
        Seed("groq-api-key", "model-provider", "gs" + "k_" + _run(rng, ALNUM, 52), ""),
        Seed("xai-api-key", "model-provider", "xa" + "i-" + _run(rng, ALNUM, 80), ""),
        Seed("huggingface-token", "model-provider", "h" + "f_" + _run(rng, UPPER + LOWER, 34, UPPER), ""),
        Seed("replicate-api-token", "model-provider", "r" + "8_" + _run(rng, ALNUM, 37), ""),
        Seed("perplexity-api-key", "model-provider", "pp" + "lx-" + _run(rng, ALNUM, 48), ""),
        Seed("github-token", "source-host", "gh" + "p_" + _run(rng, ALNUM, 36), ""),
        Seed("github-fine-grained-token", "source-host",
             "github" + "_pat_" + _run(rng, ALNUM, 22) + "_" + _run(rng, ALNUM, 59), ""),
        Seed("gitlab-token", "source-host", "gl" + "pat-" + _run(rng, B64URL, 20), ""),
        Seed("bitbucket-app-password", "source-host", "AT" + "BB" + _run(rng, ALNUM, 32), ""),
        Seed("npm-token", "source-host", "np" + "m_" + _run(rng, ALNUM, 36), ""),
        Seed("pypi-token", "source-host", "pypi-" + "AgEIcHlwaS5vcmc" + _run(rng, B64URL, 70), ""),
        Seed("stripe-secret-key", "payment", "sk" + "_live_" + _run(rng, ALNUM, 24), ""),
        Seed("square-token", "payment", "sq0" + "atp-" + _run(rng, B64URL, 22), ""),
        Seed("shopify-token", "payment", "shp" + "at_" + _run(rng, HEX, 32), ""),
        Seed("slack-token", "messaging",
             "xo" + "xb-" + _run(rng, DIGITS, 11) + "-" + _run(rng, DIGITS, 13) + "-" + _run(rng, ALNUM, 24), ""),
        Seed("slack-webhook", "messaging", slack_hook, f"https://hooks.slack.com/services/{slack_hook}"),
        Seed("discord-webhook", "messaging", (dh := _run(rng, DIGITS, 18) + "/" + _run(rng, B64URL, 68)),
             f"https://discord.com/api/webhooks/{dh}"),
        Seed("telegram-bot-token", "messaging", _run(rng, DIGITS, 10) + ":A" + "A" + _run(rng, B64URL, 33), ""),
        Seed("sendgrid-api-key", "messaging", "S" + "G." + _run(rng, B64URL, 22) + "." + _run(rng, B64URL, 43), ""),
        Seed("mailgun-api-key", "messaging", "ke" + "y-" + _run(rng, HEX, 32), ""),
        Seed("jwt", "jwt", jwt, f"session cookie: {jwt}"),
        Seed("bearer-token", "generic", (bt := _run(rng, ALNUM, 40)), f"Authorization: Bearer {bt}"),
        Seed("database-url-password", "database-url", db_password,
             f"DATABASE_URL=postgres://app:{db_password}@db.internal:5432/prod"),
        Seed("url-password", "generic", url_password, f"git remote add origin https://deploy:{url_password}@git.example.com/x.git"),
        Seed("password-assignment", "generic", (pw := _password(rng)), f"DB_PASSWORD={pw}"),
        Seed("secret-assignment", "generic", (sa := _run(rng, ALNUM, 32)), f"SERVICE_API_KEY={sa}"),
    ]
    del k
    return [s if s.text else s._replace(text=f"export {s.rule.upper().replace('-', '_')}={s.secret}") for s in out]


# -- where agents leave them ---------------------------------------------------------------------

FORMS = ("tool-output", "arguments", "escaped", "split", "base64")


class Placement(NamedTuple):
    """A seed placed in a form; ``kind`` is what it became in the transcript."""

    seed: Seed
    form: str


def placed(rng: random.Random, forms: Tuple[str, ...] = FORMS) -> List[Placement]:
    """Every seed in every form."""
    return [Placement(s, f) for s in seeds(rng) for f in forms]


def _split_point(seed: Seed) -> int:
    """Where a split form cuts the text: inside the secret, after its first third."""
    at = seed.text.index(seed.secret)
    return at + max(1, len(seed.secret) // 3)


def write_seeded(path: str, rng: random.Random, filler: int = 2, policy: Any = None,
                 forms: Tuple[str, ...] = FORMS) -> List[Tuple[Placement, str]]:
    """A transcript at `path` holding every placement, each in envelopes of its own
    among `filler` clean turns; returns each placement with the id of the envelope it is
    in. `policy`: the write-time redaction policy to write it under."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from llm_agent_session import Session

    out: List[Tuple[Placement, str]] = []
    with Session.create(path, {"agent": "seeded", "title": "a run that read secrets"}, redaction=policy) as s:
        call = 0
        for p in placed(rng, forms):
            for _ in range(filler):
                s.append_message({"role": "user", "content": "Run the tests again, please " + _run(rng, LOWER, 12, "")})
                s.append_message({"role": "assistant", "content": "All 41 tests passed in 2.3 s."})
            seed = p.seed
            if p.form == "split":
                cut = _split_point(seed)
                parts = [{"type": "text", "text": "I found this in the logs:\n" + seed.text[:cut]},
                         {"type": "text", "text": seed.text[cut:] + "\nshould I rotate it?"}]
                out.append((p, s.append_message({"role": "assistant", "content": parts})))
                continue
            call += 1
            cid = f"call_{call:04d}"
            if p.form == "arguments":
                args: Dict[str, Any] = {"cmd": f"printf '%s\\n' '{seed.text}' >> .env", "timeout": 30}
                result = "ok"
            elif p.form == "escaped":
                args = {"cmd": "cat config.json"}
                result = json.dumps({"service": "api", "settings": {"env": seed.text}}, indent=2)
            elif p.form == "base64":
                encoded = base64.b64encode(seed.text.encode()).decode()
                args = {"cmd": f"echo {encoded} | base64 -d > .env.restored"}
                result = ""
            else:
                args = {"cmd": "cat .env"}
                result = f"# generated\n{seed.text}\nLOG_LEVEL=info\n"
            tool_call = {"id": cid, "type": "function", "function": {"name": "bash", "arguments": json.dumps(args)}}
            ids = [s.append_message({"role": "assistant", "content": None, "tool_calls": [tool_call]})]
            ids.append(s.append_tool_dispatched(cid, "bash", args))
            ids.append(s.append_message({"role": "tool", "tool_call_id": cid, "content": result}))
            s.append_tool_settled(ids[1], "completed")
            where = ids[1] if p.form in ("arguments", "base64") else ids[2]
            out.append((p, where))
    return out


def _cc_line(rec: Dict[str, Any]) -> str:
    return json.dumps(rec, ensure_ascii=False) + "\n"


def claude_code_seeded(rng: random.Random, forms: Tuple[str, ...] = FORMS) -> Tuple[bytes, List[Tuple[Placement, int]]]:
    """A Claude Code session file holding every placement (its own line shapes: a
    ``tool_use`` block's ``input``, a ``tool_result``'s content, a user message of two text
    blocks); each placement with the 1-based line it is on."""
    common = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/project", "sessionId": "seeded",
              "version": "2.0.14", "gitBranch": "main"}
    lines: List[str] = []
    out: List[Tuple[Placement, int]] = []
    parent: Optional[str] = None
    for n, p in enumerate(placed(rng, forms)):
        ts = f"2025-10-01T10:{(n // 60) % 60:02d}:{n % 60:02d}.000Z"
        seed = p.seed
        uid, aid, rid, tid = f"u-{n}", f"a-{n}", f"r-{n}", f"toolu_{n:04d}"
        if p.form == "split":
            cut = _split_point(seed)
            content: Any = [{"type": "text", "text": "here is the log:\n" + seed.text[:cut]},
                            {"type": "text", "text": seed.text[cut:]}]
            out.append((p, len(lines) + 1))
            lines.append(_cc_line({"parentUuid": parent, **common, "type": "user", "uuid": uid, "timestamp": ts,
                                   "message": {"role": "user", "content": content}}))
            parent = uid
            continue
        lines.append(_cc_line({"parentUuid": parent, **common, "type": "user", "uuid": uid, "timestamp": ts,
                               "message": {"role": "user", "content": "set up the service " + _run(rng, LOWER, 8, "")}}))
        if p.form == "arguments":
            command, result = f"printf '%s\\n' '{seed.text}' >> .env", "ok"
        elif p.form == "base64":
            command, result = f"echo {base64.b64encode(seed.text.encode()).decode()} | base64 -d", ""
        elif p.form == "escaped":
            command = "cat config.json"
            result = json.dumps({"settings": {"env": seed.text}}, indent=2)
        else:
            command, result = "cat .env", f"{seed.text}\nLOG_LEVEL=info\n"
        lines.append(_cc_line({"parentUuid": uid, **common, "type": "assistant", "uuid": aid, "timestamp": ts,
                               "message": {"id": f"msg_{n}", "type": "message", "role": "assistant",
                                           "model": "claude-sonnet-4-5", "stop_reason": "tool_use",
                                           "content": [{"type": "tool_use", "id": tid, "name": "Bash",
                                                        "input": {"command": command}}]}}))
        if p.form in ("arguments", "base64"):
            out.append((p, len(lines)))
        lines.append(_cc_line({"parentUuid": aid, **common, "type": "user", "uuid": rid, "timestamp": ts,
                               "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                                        "content": result, "is_error": False}]},
                               "toolUseResult": {"stdout": result, "stderr": "", "interrupted": False}}))
        if p.form not in ("arguments", "base64"):
            out.append((p, len(lines)))
        parent = rid
    return "".join(lines).encode(), out


def codex_seeded(rng: random.Random, forms: Tuple[str, ...] = FORMS) -> Tuple[bytes, List[Tuple[Placement, int]]]:
    """A Codex rollout holding every placement (``function_call`` arguments, its output,
    a user message of two ``input_text`` parts); each with the 1-based line it is on."""
    lines = [json.dumps({"timestamp": "2025-10-01T10:00:00.000Z", "type": "session_meta",
                         "payload": {"id": "seeded", "cwd": "/home/dev/project", "originator": "codex_cli_rs",
                                     "cli_version": "0.46.0", "instructions": "be careful"}}) + "\n"]
    out: List[Tuple[Placement, int]] = []

    def emit(kind: str, payload: Dict[str, Any]) -> int:
        lines.append(json.dumps({"timestamp": "2025-10-01T10:00:01.000Z", "type": kind, "payload": payload}) + "\n")
        return len(lines)

    for n, p in enumerate(placed(rng, forms)):
        seed = p.seed
        if p.form == "split":
            cut = _split_point(seed)
            out.append((p, emit("response_item", {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": seed.text[:cut]}, {"type": "input_text", "text": seed.text[cut:]}]})))
            continue
        emit("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": "set up the service"}]})
        if p.form == "arguments":
            command, result = f"printf '%s\\n' '{seed.text}' >> .env", "ok"
        elif p.form == "base64":
            command, result = f"echo {base64.b64encode(seed.text.encode()).decode()} | base64 -d", ""
        elif p.form == "escaped":
            command, result = "cat config.json", json.dumps({"settings": {"env": seed.text}}, indent=2)
        else:
            command, result = "cat .env", f"{seed.text}\nLOG_LEVEL=info\n"
        call = f"call_{n:04d}"
        at = emit("response_item", {"type": "function_call", "name": "shell", "call_id": call,
                                    "arguments": json.dumps({"command": ["bash", "-lc", command]})})
        at2 = emit("response_item", {"type": "function_call_output", "call_id": call,
                                     "output": json.dumps({"output": result, "metadata": {"exit_code": 0}})})
        out.append((p, at if p.form in ("arguments", "base64") else at2))
    return "".join(lines).encode(), out


def main(argv: Optional[List[str]] = None) -> int:
    import argparse

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    for p, id_ in write_seeded(args.out, random.Random(args.seed)):
        print(p.seed.rule, p.form, id_)
    return 0


if __name__ == "__main__":
    sys.exit(main())
