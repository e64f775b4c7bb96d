"""Write realistic, valid llm-agent-session transcripts of a requested size.

The shape is a long coding-agent run: a sticky system prompt and a sticky task
statement, one run-context line per run whose sections repeat (carried as text the first
time their digest appears, as ``rendered-in`` afterwards), user and assistant turns,
assistant turns with OpenAI-shaped tool calls, and around every tool result the
``tool-dispatched`` / ``tool-settled`` pair (in the order docs/FORMAT.md gives: dispatched, tool message,
settled). Tool results have a skewed size (median about 2 KB, a tail to 200 KB) and hold
code, JSON, escapes (quotes, backslashes, tabs, control characters, U+2028/U+2029) and
non-ASCII text. Grants snapshots change now and then, old tool results are elided, and
the conversation is compacted when it grows past a token budget.

The generator keeps a model of the live conversation (what ``Session.load`` replays to),
so every ``replaces-through-id``, elision id, ``op-id`` and ``rendered-in`` names a live
id, and it reports the expected ``messages`` / ``message_ids`` of the file.

Lines are serialised here, independently of the library, with the line format's rules
(docs/FORMAT.md, "How a writer serialises"): keys sorted, separators ``,``/``:``, UTF-8 as itself except U+2028/U+2029.

Three corpora (``--corpus``): ``realistic`` (the default: mostly ASCII code and logs,
some prose in other scripts), ``nonascii`` (over 40% of the file's bytes in multi-byte
UTF-8: CJK, Korean, Cyrillic, Greek, Arabic, accented Latin, emoji) and ``escapes``
(code-like tool output dense in ``\\n``, ``\\"``, ``\\\\``, ``\\t`` and ``\\u00XX``). The
statistics give the share of multi-byte and backslash bytes.

Output is a pure function of ``(size, seed, torn, corpus)``.

    python benches/generate.py OUT --size 16MB --seed 1 [--torn] [--corpus nonascii] [--verify]
    python benches/generate.py DIR --fleet 10000 --size 2GB --seed 1    # a fleet (fleet())

``--verify`` loads the result with ``Session.load`` (a copy when ``--torn``, since the
load repairs it) and checks the replayed messages against the generator's model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

# Bump when the output for a given (size, seed) changes, so caches are invalidated.
GEN_VERSION = 2

_encoder = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":")
)
_encode = _encoder.encode

BASE_MS = 1_786_280_000_000  # 2026-08-09T...Z, a fixed start so output is reproducible


def dumps(value: Any) -> str:
    text = _encode(value)
    if "\u2028" in text or "\u2029" in text:
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def parse_size(text: str) -> int:
    """``1MB``, ``256MB``, ``1GB``, ``500KB``, ``12345`` (bytes); binary multiples."""
    t = text.strip().upper().replace("IB", "B")
    for suffix, mult in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10), ("G", 1 << 30),
                         ("M", 1 << 20), ("K", 1 << 10), ("B", 1)):
        if t.endswith(suffix):
            return int(float(t[: -len(suffix)]) * mult)
    return int(t)


def size_label(n: int) -> str:
    if n >= 1 << 30 and n % (1 << 30) == 0:
        return f"{n >> 30}GB"
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}MB"
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return f"{n >> 10}KB"
    return f"{n}B"


# --------------------------------------------------------------------------- corpus

_CODE = [
    '''def load_config(path: str) -> dict:
    """Read the project's configuration, falling back to defaults."""
    try:
        with open(path, "r", encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        data = {}
    return {**DEFAULTS, **data}
''',
    '''impl<'a> Parser<'a> {
    pub fn next_line(&mut self) -> Option<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        let end = memchr(b'\\n', rest)?;
        self.pos += end + 1;
        Some(&rest[..end])
    }
}
''',
    '''    if (!strcmp(argv[i], "--path")) {
\t\tprintf("path=\\"%s\\"\\n", argv[++i]);
\t} else if (argv[i][0] == '\\\\') {
\t\tfputs("windows style path: C:\\\\Users\\\\dev\\\\proj\\n", stderr);
\t}
''',
    '''const re = /^(?<key>[a-z_]+)\\s*=\\s*"(?<value>(?:[^"\\\\]|\\\\.)*)"$/u;
export function parseLine(line) {
  const m = re.exec(line);
  return m ? { [m.groups.key]: JSON.parse(`"${m.groups.value}"`) } : null;
}
''',
    '''@@ -41,7 +41,9 @@ class TranscriptReader:
-        for line in fh:
-            yield json.loads(line)
+        for lineno, line in enumerate(fh, 1):
+            if not line.strip():
+                continue
+            yield lineno, json.loads(line)
''',
    '''SELECT u.id, u.name, count(o.id) AS orders
FROM users u LEFT JOIN orders o ON o.user_id = u.id
WHERE u.created_at > '2026-01-01' AND u.email NOT LIKE '%@example.com'
GROUP BY u.id, u.name HAVING count(o.id) > 3 ORDER BY orders DESC;
''',
]

_PROSE = [
    "The build fails because the linker cannot find `libssl.so.3`; install the dev package "
    "or point OPENSSL_DIR at the vendored copy. ",
    "Die Konfiguration wird beim Start gelesen; Änderungen während der Laufzeit werden "
    "ignoriert, bis der Dienst neu gestartet wird. ",
    "Le fichier « config.toml » contient des paramètres obsolètes — voir la note de version. ",
    "ログファイルは毎日ローテーションされ、古いファイルは七日後に削除されます。",
    "测试在持续集成环境中失败，但在本地可以通过；可能与时区设置有关。",
    "Тесты проходят локально, но падают в CI из-за различий в локали. ",
    "ملف الإعدادات يحتوي على قيم افتراضية يمكن تجاوزها من سطر الأوامر. ",
    "✅ 12 passed, ❌ 1 failed, ⚠️ 3 warnings in 4.52s 🚀 ",
    "naïve café résumé coöperate jalapeño smörgåsbord Ærøskøbing ",
    "line separator\u2028inside text and a paragraph separator\u2029too. ",
    "control chars: \x01\x02\x1b[31mred\x1b[0m\x7f and a tab\there. ",
]

_OUTPUT = [
    "$ cargo test --release\n   Compiling llm-agent-session v0.1.0 (/home/dev/project)\n"
    "    Finished release [optimized] target(s) in 41.27s\n     Running unittests src/lib.rs\n",
    "test tail::tests::torn_multibyte ... ok\ntest replay::tests::compaction_composes ... ok\n"
    "test replay::tests::elision_of_removed_id ... FAILED\n",
    "Traceback (most recent call last):\n  File \"/home/dev/project/app.py\", line 88, in <module>\n"
    "    main()\n  File \"/home/dev/project/app.py\", line 71, in main\n"
    "    raise ValueError(f\"bad value: {value!r}\")\nValueError: bad value: 'a\\\\b\"c'\n",
    '{"status":"ok","items":[{"id":17,"name":"α-β","tags":["x","y"]},{"id":18,"name":"\\"q\\"",'
    '"tags":[]}],"next":null}\n',
    "drwxr-xr-x  5 dev dev  4096 Aug  9 13:10 src\n-rw-r--r--  1 dev dev 18234 Aug  9 13:09 "
    "Cargo.lock\n-rw-r--r--  1 dev dev   912 Aug  9 13:02 pyproject.toml\n",
]


# The non-ASCII-heavy corpus (issue #17): most bytes multi-byte UTF-8 (CJK, Korean,
# Cyrillic, Greek, Arabic, accented Latin, emoji including ZWJ sequences and flags),
# with some code and logs that carry it.
_NONASCII = [
    "ログファイルは毎日ローテーションされ、古いファイルは七日後に削除されます。設定は「config.toml」に"
    "あります。変更後はサービスを再起動してください。",
    "测试在持续集成环境中失败，但在本地可以通过；可能与时区设置有关。请检查环境变量和区域设置。"
    "修复后重新运行全部测试用例。",
    "설정 파일에는 명령줄에서 재정의할 수 있는 기본값이 포함되어 있습니다. 로그를 확인하세요.",
    "Тесты проходят локально, но падают в CI из-за различий в локали и часовом поясе. ",
    "Η διαμόρφωση διαβάζεται κατά την εκκίνηση· οι αλλαγές αγνοούνται μέχρι την επανεκκίνηση. ",
    "ملف الإعدادات يحتوي على قيم افتراضية يمكن تجاوزها من سطر الأوامر. ",
    "✅ 12 通过 ❌ 1 失败 ⚠️ 3 警告 🚀🔥💡🧪 👩‍💻👨‍👩‍👧 🇯🇵🇩🇪🇫🇷 — 所要時間 4.52秒 ",
    "Çalışma zamanı değişiklikleri yok sayılır; naïve café résumé jalapeño smörgåsbord "
    "Ærøskøbing Świętokrzyskie Žluťoučký kůň úpěl ďábelské ódy. ",
    "// 関数: 設定を読み込む（ファイルが無い場合は既定値）\nfn 設定を読む(パス: &str) -> 設定 {\n"
    "    読み込み(パス).unwrap_or_default() // 既定値 🙂\n}\n",
    "エラー: ファイル「src/ünïcode/名前.rs」が見つかりません（行 42、列 7）。",
]

# The escape-heavy corpus (issue #17): code-like tool output dense in what JSON must
# escape: newlines, quotes, backslashes, tabs and control characters (ANSI colours,
# written as \u001b).
_ESCAPES = [
    '{"path":"C:\\Users\\dev\\proj\\src\\main.rs","line":42,"msg":"expected `\\"`, '
    'found `\\\\`"}\n',
    '\x1b[1;31merror\x1b[0m: expected "}" at "src\\lib.rs":12:4\n\t\x1b[34m|\x1b[0m\n'
    '\t\x1b[34m|\x1b[0m\tlet s = "a\\tb\\n";\n',
    'printf("%s=\\"%s\\"\\n", k, v);\n\tif (c == \'\\\\\') { *o++ = \'\\\\\'; }\n'
    '\treturn "\\x1b[0m";\n',
    '\t\t"a":\t"\\u00e9\\u2028",\n\t\t"b":\t["\\"", "\\\\", "\\/"],\n',
    're.compile(r"^\\s*(\\w+)\\s*=\\s*\"((?:[^\"\\\\]|\\\\.)*)\"$")\n\x00\x07\x08\x0c\r\n',
    'diff --git "a/x y.txt" "b/x y.txt"\n@@ -1 +1 @@\n-\t"old"\n+\t"new\\n"\n\\ No newline\n',
]

CORPORA = ("realistic", "nonascii", "escapes")


def _build_corpus(rng: random.Random, chars: int = 600_000, kind: str = "realistic") -> str:
    pools = [_CODE, _PROSE, _OUTPUT]
    weights = [5, 3, 3]
    if kind == "nonascii":
        pools, weights = [_NONASCII, _CODE, _OUTPUT], [16, 1, 1]
    elif kind == "escapes":
        pools, weights = [_ESCAPES, _CODE, _OUTPUT], [8, 2, 1]
    elif kind != "realistic":
        raise ValueError(f"unknown corpus {kind!r}: one of {', '.join(CORPORA)}")
    parts: List[str] = []
    n = 0
    counter = 0
    while n < chars:
        pool = rng.choices(pools, weights)[0]
        piece = rng.choice(pool)
        counter += 1
        if rng.random() < 0.3:  # vary the text a little so results are not all identical
            piece = piece.replace("dev", f"dev{counter % 97}")
        parts.append(piece)
        n += len(piece)
    return "".join(parts)


# --------------------------------------------------------------------------- generator


_HIGH_BYTES = bytes(range(0x80, 0x100))


class _Writer:
    def __init__(self, fh, rng: random.Random) -> None:
        self.fh = fh
        self.rng = rng
        self.size = 0
        self.lines = 0
        self.ms = BASE_MS
        self.micro = 542_283
        self.types: Dict[str, int] = {}
        self.multibyte = 0  # bytes >= 0x80: of multi-byte UTF-8 characters
        self.backslashes = 0

    def new_id(self) -> str:
        self.ms += self.rng.randint(1, 900)
        value = ((self.ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | self.rng.getrandbits(12) << 64
                 | 0b10 << 62 | self.rng.getrandbits(62))
        h = f"{value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def ts(self) -> str:
        secs, ms = divmod(self.ms, 1000)
        t = time.gmtime(secs)
        micro = ms * 1000 + (self.micro % 1000)
        self.micro += 7
        return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{micro:06d}Z"

    def line(self, type_: str, payload: Dict[str, Any], id_: Optional[str] = None) -> str:
        if id_ is None:
            id_ = self.new_id()
        data = ('{"id":' + _encode(id_) + ',"payload":' + dumps(payload) + ',"ts":"' + self.ts()
                + '","type":' + _encode(type_) + ',"v":1}\n').encode("utf-8")
        self.fh.write(data)
        self.size += len(data)
        self.multibyte += len(data) - len(data.translate(None, _HIGH_BYTES))
        self.backslashes += data.count(b"\\")
        self.lines += 1
        self.types[type_] = self.types.get(type_, 0) + 1
        return id_

    def render(self, type_: str, payload: Dict[str, Any]) -> bytes:
        """A line as it would be written, without writing it (for the torn tail)."""
        return ('{"id":' + _encode(self.new_id()) + ',"payload":' + dumps(payload) + ',"ts":"'
                + self.ts() + '","type":' + _encode(type_) + ',"v":1}\n').encode("utf-8")


_TOOLS = ["read_file", "run_shell", "grep", "list_dir", "apply_patch", "web_fetch"]
_FILES = ["src/lib.rs", "src/replay.rs", "python/app/main.py", "tests/test_tail.py",
          "docs/format.md", "Cargo.toml", "src/ünïcode/名前.rs"]


def _tool_args(rng: random.Random, tool: str) -> Dict[str, Any]:
    if tool == "read_file":
        return {"path": rng.choice(_FILES), "start": rng.randint(1, 400), "limit": 200}
    if tool == "run_shell":
        return {"cmd": rng.choice(["cargo test --release", "pytest -x -q tests/",
                                   'grep -rn "TODO\\|FIXME" src/', "git diff --stat",
                                   "python -c 'print(\"héllo\\tworld\")'"]),
                "timeout": 120}
    if tool == "grep":
        return {"pattern": rng.choice(["fn replay", "class Session", "\\bunsafe\\b", "ß|é"]),
                "path": "src/"}
    if tool == "list_dir":
        return {"path": rng.choice(["src", "tests", "python/app", "."])}
    if tool == "apply_patch":
        return {"path": rng.choice(_FILES), "patch": _CODE[4]}
    return {"url": "https://docs.example.org/api?q=" + str(rng.randint(1, 10**6))}


def _result_size(rng: random.Random) -> int:
    """Skewed: median about 2 KB, a long tail capped at 200 KB."""
    if rng.random() < 0.03:
        return int(min(200_000, 20_000 * math.exp(rng.random() * math.log(10))))
    return int(min(200_000, max(40, rng.lognormvariate(math.log(2000), 1.0))))


_SECTION_TEXTS = {
    "tool-guide": ["Tools: read_file(path, start, limit) reads lines; run_shell(cmd, timeout) runs "
                   "a command in the sandbox; apply_patch(path, patch) applies a unified diff. "
                   "Prefer small, reversible steps. " * 8],
    "style-guide": ["Code style: black, 100 columns; Rust: rustfmt defaults, no unwrap() in "
                    "library code; commit messages in the imperative mood. " * 6,
                    "Code style (updated): ruff format, 100 columns; Rust: clippy pedantic "
                    "clean; commit messages in the imperative mood, ≤ 72 chars. " * 6],
    "environment": [f"OS: Linux 6.8 x86_64; Python 3.{v}; rustc 1.8{v}; cwd /home/dev/project; "
                    "locale en_US.UTF-8; TZ Europe/Zürich. " for v in range(9, 14)],
}


class FleetStyle:
    """How one transcript of a fleet differs from the single long run (``fleet()``): whose
    agent and model it is, when it started, a smaller compaction budget (so small runs
    compact too), no fixed tail turn, and how it ends: ``clean``, ``crash`` (a tool call
    dispatched and never answered: it may or may not have run), ``resumed`` (that, then a
    restart that answers the call as interrupted and settles it ``outcome-unknown``) or
    ``corrupt`` (a malformed line in the middle: load refuses the file). ``rewinds``: now
    and then a turn is undone (a ``rewind`` line)."""

    def __init__(self, agent: str, model: str, start_ms: int, ending: str = "clean", rewinds: bool = False,
                 compact_at: int = 60_000) -> None:
        self.agent, self.model, self.start_ms = agent, model, start_ms
        self.ending, self.rewinds, self.compact_at = ending, rewinds, compact_at


class Generator:
    def __init__(self, size: int, seed: int = 1, torn: bool = False,
                 corpus: str = "realistic", style: Optional[FleetStyle] = None,
                 corpus_text: Optional[str] = None) -> None:
        self.target = size
        self.seed = seed
        self.torn = torn
        self.style = style
        self.rng = random.Random(f"llm-agent-session-bench:{seed}")
        self.corpus = corpus_text if corpus_text is not None else _build_corpus(
            random.Random(f"corpus:{seed}"), kind=corpus)
        self.corpus_kind = corpus
        # The live conversation, as replay folds it: [id, message dict] in order.
        self.live: List[List[Any]] = []
        self.live_chars = 0
        self.elided: set = set()
        self.section_carrier: Dict[str, str] = {}  # digest -> id of the line carrying text
        self.run_no = 0
        self.call_no = 0
        self.compactions = 0
        self.elisions = 0
        self.repo_map_version = 0
        self.pending_ops = 0

    # -- content

    def _text(self, n: int) -> str:
        c = self.corpus
        start = self.rng.randrange(len(c))
        out = c[start:start + n]
        while len(out) < n:
            out += c[: n - len(out)]
        return out

    # -- lines that change the model

    def _message(self, w: _Writer, msg: Dict[str, Any], extra: Optional[Dict[str, Any]] = None
                 ) -> str:
        payload = dict(extra) if extra else {}
        payload.update(msg)
        id_ = w.line("message", payload)
        self.live.append([id_, msg])
        c = msg.get("content")
        self.live_chars += len(c) if isinstance(c, str) else 0
        return id_

    def _is_sticky(self, msg: Dict[str, Any]) -> bool:
        return bool(msg.get("sticky") or msg.get("sysprompt") or "depth" in msg)

    def _compact(self, w: _Writer) -> None:
        live = self.live
        # Cut just before a user turn, around 70% of the way through the live list.
        target = int(len(live) * 0.7)
        cut = None
        for i in range(target, 1, -1):
            if live[i][1]["role"] == "user" and not self._is_sticky(live[i][1]):
                cut = i - 1
                break
        if cut is None or cut < 2:
            return
        through = live[cut][0]
        before = self.live_chars // 4
        summary = ("Summary of the conversation so far: the agent explored the repository, ran "
                   "the test suite, fixed the torn-tail repair and the compaction fold, and is "
                   "now working on the peek offsets. Key files: src/tail.rs, src/replay.rs, "
                   "python/llm_agent_session/session.py. Open question: ü/日本 in paths. "
                   + self._text(self.rng.randint(500, 2500)))
        kept = [e for e in live[: cut + 1] if self._is_sticky(e[1])]
        rest = live[cut + 1:]
        summary_msg = {"content": summary, "role": "user"}
        id_ = w.new_id()
        new_live = kept + [[id_, summary_msg]] + rest
        chars = sum(len(e[1]["content"]) for e in new_live if isinstance(e[1].get("content"), str))
        w.line("compaction", {"summary": summary, "replaces-through-id": through,
                              "tokens-before": before, "tokens-after": chars // 4,
                              "fallback": self.rng.random() < 0.1}, id_=id_)
        self.live = new_live
        self.live_chars = chars
        self.compactions += 1

    def _elide(self, w: _Writer) -> None:
        old = self.live[: max(0, len(self.live) - 30)]
        items = []
        for e in old:
            msg = e[1]
            if msg["role"] == "tool" and e[0] not in self.elided and len(msg["content"]) > 1000:
                items.append(e)
        if not items:
            return
        stubs = []
        for e in items:
            stub = f"[elided: {len(e[1]['content'])} chars of tool output; see the transcript]"
            stubs.append({"id": e[0], "stub": stub})
            self.live_chars += len(stub) - len(e[1]["content"])
            e[1] = dict(e[1], content=stub)
            self.elided.add(e[0])
        w.line("elision", {"items": stubs})
        self.elisions += 1

    def _grants(self, w: _Writer) -> None:
        rng = self.rng
        w.line("grants", {"grants": {
            "fs.read": ["/home/dev/project/**"],
            "fs.write": ["/home/dev/project/src/**", "/home/dev/project/tests/**"][: rng.randint(1, 2)],
            "shell": {"allow": ["cargo", "pytest", "git diff", "grep"][: rng.randint(2, 4)],
                      "network": rng.random() < 0.3},
            "granted-by": "policy:default", "revision": self.run_no}})

    def _run_context(self, w: _Writer) -> None:
        rng = self.rng
        if rng.random() < 0.15:
            self.repo_map_version += 1
        texts = {
            "tool-guide": _SECTION_TEXTS["tool-guide"][0],
            "style-guide": _SECTION_TEXTS["style-guide"][min(1, self.run_no // 40)],
            "environment": _SECTION_TEXTS["environment"][(self.run_no // 25) % 5],
            "repo-map": f"repo map v{self.repo_map_version}:\n" + self._text(3000),
            "open-files": "open files:\n" + self._text(rng.randint(200, 1500)),
        }
        id_ = w.new_id()
        sections = []
        for name in ("tool-guide", "style-guide", "environment", "repo-map", "open-files"):
            text = texts[name]
            d = digest(text.encode("utf-8"))
            if d in self.section_carrier:
                sections.append({"name": name, "digest": d, "rendered-in": self.section_carrier[d]})
            else:
                self.section_carrier[d] = id_
                sections.append({"name": name, "digest": d, "text": text})
        facts = [["cwd", "/home/dev/project"], ["branch", "feature/peek-offsets"],
                 ["run", self.run_no], ["budget", {"tokens": 200000, "usd": 4.5}]]
        w.line("run-context", {"sections": sections, "facts": facts}, id_=id_)

    def _tool_round(self, w: _Writer, round_no: int) -> None:
        rng = self.rng
        n_calls = rng.choices([1, 2, 3], [70, 22, 8])[0]
        calls = []
        for _ in range(n_calls):
            self.call_no += 1
            tool = rng.choice(_TOOLS)
            args = _tool_args(rng, tool)
            calls.append((f"call_{self.seed:x}{self.call_no:08d}", tool, args))
        tool_calls = [{"id": cid, "type": "function",
                       "function": {"name": tool, "arguments": json.dumps(args)}}
                      for cid, tool, args in calls]
        text = None if rng.random() < 0.6 else "Let me look at that. " + self._text(rng.randint(20, 300))
        self._message(w, {"role": "assistant", "content": text, "tool_calls": tool_calls},
                      extra={"finish-reason": "tool_calls",
                             "model": self.style.model if self.style else "gpt-bench-1"})
        for cid, tool, args in calls:
            op = w.line("tool-dispatched", {
                "call-id": cid, "tool": tool, "arguments": args,
                "arguments-digest": digest(dumps(args).encode("utf-8")),
                "idempotency": None if tool != "apply_patch" else f"patch-{cid}",
                "run-id": f"run-{self.run_no:06d}", "round": round_no})
            result = self._text(_result_size(rng))
            self._message(w, {"role": "tool", "tool_call_id": cid, "content": result})
            settled: Dict[str, Any] = {"op-id": op, "duration": round(rng.uniform(0.01, 30), 3)}
            r = rng.random()
            if r < 0.05:
                settled.update(outcome="failed", error="exit status 1", reason="non-zero exit")
            else:
                settled["outcome"] = "completed"
            rb = result.encode("utf-8")
            settled["result-digest"] = digest(rb)
            if len(rb) > 50_000:
                settled["artifact"] = {"file": f"{cid}.txt", "digest": digest(rb),
                                       "bytes": len(rb), "chars": len(result),
                                       "elided-chars": 0}
            w.line("tool-settled", settled)

    def _run(self, w: _Writer) -> None:
        rng = self.rng
        self.run_no += 1
        self._run_context(w)
        if self.run_no % 20 == 0:
            self._grants(w)
        self._message(w, {"role": "user", "content": "Next: " + self._text(rng.randint(40, 600))})
        for round_no in range(rng.randint(1, 8)):
            self._tool_round(w, round_no)
        self._message(w, {"role": "assistant", "content": "Done. " + self._text(rng.randint(100, 1500))},
                      extra={"finish-reason": "stop", "usage": {"input": rng.randint(1000, 90000),
                                                                "output": rng.randint(10, 4000)}})
        if self.run_no % 8 == 0:
            self._elide(w)
        if self.live_chars > (self.style.compact_at if self.style else 600_000):
            self._compact(w)
        if self.style and self.style.rewinds and rng.random() < 0.25:
            self._rewind(w)

    def _rewind(self, w: _Writer) -> None:
        """Undo the last turn: back to the live message before its user message."""
        users = [i for i, e in enumerate(self.live) if e[1]["role"] == "user" and not self._is_sticky(e[1])]
        if not users or users[-1] == 0:
            return
        keep = users[-1] - 1
        w.line("rewind", {"to-id": self.live[keep][0]})
        self.live = self.live[: keep + 1]
        self.live_chars = sum(len(e[1]["content"]) for e in self.live if isinstance(e[1].get("content"), str))

    def _crash(self, w: _Writer, resume: bool) -> None:
        """A last call dispatched and never answered (the process was killed in the tool);
        with `resume`, the restart an hour or so later answers it as interrupted and settles
        it ``outcome-unknown``, then carries on."""
        rng = self.rng
        self._message(w, {"role": "user", "content": "Next: " + self._text(rng.randint(40, 300))})
        self.call_no += 1
        cid, tool = f"call_{self.seed:x}{self.call_no:08d}", rng.choice(_TOOLS)
        args = _tool_args(rng, tool)
        self._message(w, {"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]},
            extra={"finish-reason": "tool_calls", "model": self.style.model if self.style else "gpt-bench-1"})
        op = w.line("tool-dispatched", {"call-id": cid, "tool": tool, "arguments": args,
                                        "arguments-digest": digest(dumps(args).encode("utf-8")),
                                        "idempotency": None, "run-id": f"run-{self.run_no:06d}", "round": 0})
        if not resume:
            return
        w.ms += rng.randint(60_000, 7_200_000)  # the restart, a minute to two hours later
        self._message(w, {"role": "tool", "tool_call_id": cid,
                          "content": "The call was interrupted before it returned; it may or may not have run."})
        w.line("tool-settled", {"op-id": op, "outcome": "outcome-unknown", "reason": "interrupted"})
        self._message(w, {"role": "assistant", "content": "Resuming: " + self._text(rng.randint(50, 400))},
                      extra={"finish-reason": "stop"})

    def _tail_turn(self, w: _Writer) -> None:
        """One user turn with tool rounds, at least 64 KiB, identical in length for every
        size: no run-context, elision or compaction (those depend on the history)."""
        self.rng = w.rng = random.Random(f"llm-agent-session-bench-tail:{self.seed}")
        start = w.size
        self._message(w, {"role": "user", "content": "Next: " + self._text(300)})
        round_no = 0
        while w.size - start < 65536:
            self._tool_round(w, round_no)
            round_no += 1
        self._message(w, {"role": "assistant", "content": "Done. " + self._text(800)},
                      extra={"finish-reason": "stop"})

    def write(self, fh) -> Dict[str, Any]:
        w = _Writer(fh, self.rng)
        style = self.style
        if style is None:
            w.line("session-meta", {"app": "bench-agent", "model": "gpt-bench-1", "seed": self.seed,
                                    "cwd": "/home/dev/project", "title": "Refactor the tail repair — ü"})
        else:
            w.ms = style.start_ms
            w.line("session-meta", {"agent": style.agent, "model": style.model, "seed": self.seed,
                                    "cwd": "/home/dev/project", "title": f"run {self.seed}"})
        self._message(w, {"role": "system", "sysprompt": True,
                          "content": "You are a careful coding agent. " + self._text(4000)})
        self._message(w, {"role": "user", "sticky": True,
                          "content": "Task: make the transcript loader robust. " + self._text(800)})
        self._grants(w)
        if style is not None and style.ending == "corrupt":
            bad = b'{"id":"half-written","payload":{"role":"user",\n'  # not the last line: load refuses the file
            fh.write(bad)
            w.size += len(bad)
            self._run(w)
        while w.size < self.target:
            self._run(w)
        # The last turn is the same bytes count for every size (its random choices come
        # from an RNG that depends on the seed only): what a viewer following the file
        # reads when it peeks from `tail-offset`.
        tail_offset = w.size
        if style is None:
            self._tail_turn(w)
        elif style.ending in ("crash", "resumed"):
            self._crash(w, style.ending == "resumed")
        clean_size = w.size
        torn_bytes = 0
        if self.torn:
            line = w.render("message", {"role": "tool", "tool_call_id": "call_torn",
                                        "content": "日本語のログ " + self._text(3000)})
            cut = len(line) * 2 // 3
            while cut < len(line) and (line[cut] & 0xC0) != 0x80:  # cut inside a character
                cut += 1
            if cut >= len(line) - 1:
                cut = len(line) * 2 // 3
            fh.write(line[:cut])
            torn_bytes = cut
        return {
            "gen-version": GEN_VERSION, "seed": self.seed, "target": self.target,
            "corpus": self.corpus_kind, "multibyte-share": w.multibyte / max(1, w.size),
            "backslash-share": w.backslashes / max(1, w.size),
            "size": clean_size + torn_bytes, "clean-size": clean_size, "torn-bytes": torn_bytes,
            "lines": w.lines, "types": w.types, "runs": self.run_no,
            "compactions": self.compactions, "elisions": self.elisions,
            "messages": len(self.live), "tail-offset": tail_offset,
            "message-ids": [e[0] for e in self.live],
        }

    def expected_messages(self) -> List[Dict[str, Any]]:
        return [dict(e[1]) for e in self.live]


def generate(path: str, size: int, seed: int = 1, torn: bool = False,
             corpus: str = "realistic", style: Optional[FleetStyle] = None,
             corpus_text: Optional[str] = None) -> Dict[str, Any]:
    """Write the transcript to ``path`` (replacing it) and return its statistics."""
    gen = Generator(size, seed, torn, corpus, style, corpus_text)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb", buffering=1 << 20) as fh:
        stats = gen.write(fh)
    os.replace(tmp, path)
    return stats


FLEET_MODELS = (("gpt-bench-1", 5), ("gpt-bench-2", 3), ("claude-bench", 3), ("local-bench", 1))
FLEET_AGENTS = (("bench-agent", 5), ("review-bot", 2), ("ci-fixer", 2))
DAY_MS = 86_400_000


def fleet(directory: str, count: int, total: int, seed: int = 1, corpus: str = "realistic",
          days: int = 7) -> Dict[str, Any]:
    """`count` transcripts of about `total` bytes together under `directory`, one directory
    per start date and agent: sizes skewed as a fleet's are (a log-normal: most runs small,
    a few large), mixed agents and models over `days` days; about 3% corrupt (load refuses
    them), 8% crashed in a tool call, 8% crashed and resumed, 5% with a torn last line, a
    fifth with rewinds. A pure function of the arguments, like ``generate``."""
    rng = random.Random(f"llm-agent-session-fleet:{seed}")
    weights = [rng.lognormvariate(0, 1.5) for _ in range(count)]
    scale = total / sum(weights)
    text = _build_corpus(random.Random(f"corpus:{seed}"), kind=corpus)
    stats: Dict[str, Any] = {"count": count, "bytes": 0, "largest": 0, "torn": 0, "endings": {}}
    for i, weight in enumerate(weights):
        agent = rng.choices([a for a, _ in FLEET_AGENTS], [w for _, w in FLEET_AGENTS])[0]
        model = rng.choices([m for m, _ in FLEET_MODELS], [w for _, w in FLEET_MODELS])[0]
        start = BASE_MS + rng.randrange(days) * DAY_MS + rng.randrange(DAY_MS - 3_600_000)
        r = rng.random()
        ending = "corrupt" if r < 0.03 else "crash" if r < 0.11 else "resumed" if r < 0.19 else "clean"
        torn = ending != "corrupt" and rng.random() < 0.05
        style = FleetStyle(agent, model, start, ending, rewinds=rng.random() < 0.2)
        date = time.strftime("%Y-%m-%d", time.gmtime(start // 1000))
        path = os.path.join(directory, date, agent, f"run-{i:05d}.jsonl")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        made = generate(path, max(4096, int(weight * scale)), seed=seed * 1_000_003 + i, torn=torn,
                        corpus=corpus, style=style, corpus_text=text)
        stats["bytes"] += made["size"]
        stats["largest"] = max(stats["largest"], made["size"])
        stats["torn"] += 1 if torn else 0
        stats["endings"][ending] = stats["endings"].get(ending, 0) + 1
    return stats


def cache_dir() -> str:
    d = os.environ.get("LLM_AGENT_SESSION_BENCH_CACHE") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".cache")
    os.makedirs(d, exist_ok=True)
    return d


def cached(size: int, seed: int = 1, torn: bool = False,
           corpus: str = "realistic") -> Tuple[str, Dict[str, Any]]:
    """The path and statistics of a generated transcript, generating it once per version."""
    d = cache_dir()
    kind = "" if corpus == "realistic" else f"-{corpus}"
    base = os.path.join(d, f"v{GEN_VERSION}-{size_label(size)}-s{seed}{kind}{'-torn' if torn else ''}")
    path, meta = base + ".jsonl", base + ".json"
    if os.path.exists(path) and os.path.exists(meta):
        with open(meta) as fh:
            return path, json.load(fh)
    stats = generate(path, size, seed, torn, corpus)
    with open(meta + ".tmp", "w") as fh:
        json.dump(stats, fh)
    os.replace(meta + ".tmp", meta)
    return path, stats


# --------------------------------------------------------------------------- checks


def check_structure(path: str) -> Dict[str, Any]:
    """Library-independent check: every line is a canonical envelope, ids unique, every
    reference names a live id, digests match; returns the replayed message count."""
    live: List[Tuple[str, Dict[str, Any]]] = []
    ids: set = set()
    ops: Dict[str, bool] = {}
    carriers: Dict[str, str] = {}
    torn = 0
    with open(path, "rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    if lines[-1]:
        torn = len(lines[-1])
        try:
            json.loads(lines[-1])
            raise AssertionError("the torn tail parses")
        except ValueError:
            pass
    lines = lines[:-1]
    for n, raw in enumerate(lines, 1):
        env = json.loads(raw)
        assert list(env) == ["id", "payload", "ts", "type", "v"], n
        text = raw.decode("utf-8")
        assert dumps(env) == text, f"line {n} is not canonical"
        assert "\u2028" not in text and "\u2029" not in text
        assert env["v"] == 1 and type(env["v"]) is int
        assert len(env["ts"]) == 27 and env["ts"].endswith("Z")
        id_, t, p = env["id"], env["type"], env["payload"]
        assert id_ not in ids, f"duplicate id on line {n}"
        ids.add(id_)
        if n == 1:
            assert t == "session-meta"
            continue
        if t == "message":
            msg = {k: v for k, v in p.items() if k in ("role", "content", "tool_calls",
                                                      "tool_call_id", "name", "sticky",
                                                      "sysprompt", "depth")}
            live.append((id_, msg))
        elif t == "compaction":
            idx = [e[0] for e in live].index(p["replaces-through-id"])
            sticky = [e for e in live[: idx + 1]
                      if e[1].get("sticky") or e[1].get("sysprompt") or "depth" in e[1]]
            live = sticky + [(id_, {"role": "user", "content": p["summary"]})] + live[idx + 1:]
        elif t == "elision":
            pos = {e[0]: i for i, e in enumerate(live)}
            for item in p["items"]:
                i = pos[item["id"]]
                live[i] = (live[i][0], dict(live[i][1], content=item["stub"]))
        elif t == "tool-dispatched":
            assert p["arguments-digest"] == digest(dumps(p["arguments"]).encode("utf-8"))
            ops[id_] = False
        elif t == "tool-settled":
            assert ops[p["op-id"]] is False, f"line {n}: settle of unknown/settled op"
            ops[p["op-id"]] = True
        elif t == "run-context":
            for s in p["sections"]:
                if "text" in s:
                    assert s["digest"] == digest(s["text"].encode("utf-8"))
                    assert s["digest"] not in carriers
                    carriers[s["digest"]] = id_
                else:
                    assert carriers[s["digest"]] == s["rendered-in"]
    return {"lines": len(lines), "messages": len(live), "torn-bytes": torn,
            "message-ids": [e[0] for e in live], "live": [e[1] for e in live]}


def verify_with_library(path: str, stats: Dict[str, Any], torn: bool,
                        expected: Optional[List[Dict[str, Any]]] = None) -> None:
    """Load the file with ``Session.load`` and compare with the generator's model
    (``expected``: the live message dicts, e.g. from ``check_structure``)."""
    try:
        from llm_agent_session import Session
    except ImportError:  # not installed: the source tree beside benches/
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                        "python"))
        from llm_agent_session import Session

    with tempfile.TemporaryDirectory(prefix="las-verify-") as d:
        p = path
        if torn:  # load repairs the file: work on a copy
            p = os.path.join(d, "t.jsonl")
            shutil.copyfile(path, p)
        s = Session.load(p)
        try:
            assert len(s.messages) == stats["messages"], (len(s.messages), stats["messages"])
            assert list(s.message_ids) == stats["message-ids"]
            assert len(s.warnings) == (1 if torn else 0), s.warnings
            if expected is not None:
                def norm(d: Dict[str, Any]) -> Dict[str, Any]:
                    return {k: v for k, v in d.items() if v is not None}

                got = [norm(m.to_dict()) for m in s.messages]
                want = [norm(m) for m in expected]
                assert got == want, "replayed messages differ from the generator's model"
        finally:
            s.close()


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--size", default="1MB", help="e.g. 1MB, 16MB, 256MB, 1GB (default 1MB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--torn", action="store_true", help="end in a torn line (no final newline)")
    ap.add_argument("--corpus", default="realistic", choices=CORPORA,
                    help="the text of messages and tool results: realistic (default), nonascii "
                         "(most bytes multi-byte UTF-8), escapes (dense in JSON escapes)")
    ap.add_argument("--check", action="store_true",
                    help="re-read the file and check every line and reference (stdlib only)")
    ap.add_argument("--verify", action="store_true",
                    help="also load it with Session.load and compare the replayed messages")
    ap.add_argument("--fleet", type=int, metavar="COUNT",
                    help="write COUNT transcripts of --size bytes together into the directory OUT "
                         "(a fleet: see fleet())")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    if a.fleet:
        stats = fleet(a.out, a.fleet, parse_size(a.size), a.seed, a.corpus)
        dt = time.perf_counter() - t0
        print(json.dumps(stats), f"({dt:.1f}s, {stats['bytes'] / dt / 1e6:.0f} MB/s)")
        return 0
    stats = generate(a.out, parse_size(a.size), a.seed, a.torn, a.corpus)
    dt = time.perf_counter() - t0
    shown = {k: v for k, v in stats.items() if k != "message-ids"}
    print(json.dumps(shown), f"({dt:.1f}s, {stats['size'] / dt / 1e6:.0f} MB/s)")
    if a.check or a.verify:
        got = check_structure(a.out)
        assert got["messages"] == stats["messages"] and got["message-ids"] == stats["message-ids"]
        assert got["torn-bytes"] == stats["torn-bytes"]
        print("structure: ok,", got["lines"], "lines,", got["messages"], "live messages")
    if a.verify:
        verify_with_library(a.out, stats, a.torn, got["live"])
        print("Session.load: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
