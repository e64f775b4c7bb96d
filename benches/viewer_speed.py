"""The viewer on a big transcript (issue #25), side by side in one run: the real command in a
child process, Chromium (Debian's, by path) driven by Playwright.

    python benches/viewer_speed.py realistic-1GB.jsonl                   # a 1 GB transcript
    python benches/viewer_speed.py --size 16MB                           # generated here
    python benches/viewer_speed.py FILE --shelf 10000                    # and a shelf of 10,000
    python benches/viewer_speed.py FILE --write                          # and its section of RESULTS.md
    python benches/viewer_speed.py FILE --small-lines 1000000            # and 1,000,000 one-line messages
    python benches/viewer_speed.py FILE --side-index                     # without, then with, its side index
    python benches/viewer_speed.py --fleet DIR --no-transcript           # the shelf and its search on a fleet
    python benches/viewer_speed.py FILE --shelf 0 --server-arg=--no-redact  # the view command given an option

Reports, each beside its goal: the URL printed after start; the first screen rendered after
navigation; jumps after the first open (by id, by position, by time: from the request to the
envelope rendered); the search's whole-file scan against ``grep -F -c`` on the same file, and
its first hit in the first 10% shown; the server's RSS with the transcript open (and once its
history is read); the rendered envelope elements; the page's JS heap; a shelf of small
transcripts (first rows, all rows); and with ``--small-lines``, the server's RSS on a
transcript of one-line messages, where it follows the number of lines more than the bytes;
and with ``--fleet DIR`` (``benches/generate.py --fleet``: 10,000 transcripts), the shelf on
it (first rows, all rows: each row's tokens included) and the shelf's search box: for a text
in most transcripts, one in a single transcript halfway through the walk, and one in none,
the first hit on the screen after the text is entered and the whole scan done (the count
says so), each searched twice (the second answered by the viewer's search cache), beside
``grep -r -F -c`` over the same directory (best of 3, the files read once first).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

CHROMIUM = os.environ.get("LLM_AGENT_SESSION_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# A text of the realistic corpus whose first hit is early in the file and that is on few lines.
NEEDLE = "OPENSSL_DIR"


# page.evaluate() goes through the debugger, so the page's CSP (no eval) allows it.
JUMP_BY_INPUT = """async ([input, value, done]) => {
  document.querySelectorAll('article.target').forEach(e => e.classList.remove('target'));
  const box = document.querySelector(input);
  box.value = value;
  const t0 = performance.now();
  box.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
  while (!document.querySelector(done)) {
    if (performance.now() - t0 > 30000) return -(performance.now() - t0);
    await new Promise(r => setTimeout(r, 1));
  }
  return performance.now() - t0;
}"""
# Done when the envelope scrolled to, or one beside it, is drawn. A jump not done after
# 30 s (by position or by input; e.g. the page's count of envelopes, which places them,
# moved from the one this round was given) gives the time so far, negative: the round
# says so rather than hang.
JUMP_BY_SCROLL = """async ([fraction, count]) => {
  const max = document.documentElement.scrollHeight - innerHeight;
  const t0 = performance.now();
  window.scrollTo(0, Math.round(max * fraction));
  const want = Math.min(count - 1, Math.floor((window.scrollY / max) * count));
  const near = () => [...document.querySelectorAll('article.env[data-envelope-id][data-i]')]
    .some(e => Math.abs(+e.dataset.i - want) <= 2);
  while (!near()) {
    if (performance.now() - t0 > 30000) return -(performance.now() - t0);
    await new Promise(r => setTimeout(r, 1));
  }
  return performance.now() - t0;
}"""


class Viewer:
    """``llm-agent-session view PATH --no-browser`` in a child process."""

    #: Options given to every ``view`` command started (``--server-arg``).
    extra: List[str] = []

    def __init__(self, path: str, env: Optional[Dict[str, str]] = None) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", path, "--no-browser",
                                      *self.extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        self.url_seconds = time.perf_counter() - self.t0
        if not self.url.startswith("http"):
            raise SystemExit(f"no URL: {self.proc.stderr.read() if self.proc.stderr else ''}")
        self.base = self.url.split("#")[0].split("/t/")[0].rstrip("/")

    def rss_mb(self, field: str = "VmRSS") -> float:
        """The server's resident memory (``VmHWM``: its peak), in MB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.proc.send_signal(2)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wait_until(page: Any, expression: str, timeout: float = 60.0) -> Any:
    """Poll `expression` (the page's CSP forbids the eval of wait_for_function)."""
    end = time.perf_counter() + timeout
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        if time.perf_counter() > end:
            raise TimeoutError(expression)
        time.sleep(0.005)


def wait_for_quiet(page: Any, name: str, timeout: float = 900) -> float:
    """Wait until every background pass over transcript `name` is done (its history, its
    secret count, its token count): the server is then as it stays. Returns the wait."""
    t0 = time.perf_counter()
    wait_until(page, f"{FETCH}('/api/transcript?t={name}').then(r => r.json()).then(j => j.ready.history"
                     " && j.ready.secrets && (j.tokens === null || j.tokens.ready))", timeout=timeout)
    return time.perf_counter() - t0


def byte_scan_seconds(path: str, needle: str, ignore_case: bool) -> float:
    """The core's scan alone (``search.scan``), best of three, in this process."""
    from llm_agent_session import search

    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in search.scan(path, needle, ignore_case):
            pass
        best = min(best, time.perf_counter() - t0)
    return best


# In the page from its first moment: when the first envelope element enters the DOM.
FIRST_ENVELOPE = """window.__firstEnvelope = null;
new MutationObserver((_, seen) => {
  if (document.querySelector('[data-envelope-id]')) { window.__firstEnvelope = performance.now(); seen.disconnect(); }
}).observe(document, {subtree: true, childList: true});"""


def first_screen(page: Any, url: str, timeout_ms: int) -> str:
    """The first screen as the other figures are timed: in the page (performance.now), from
    the navigation's start to the first envelope in the DOM; beside it, the time the harness
    saw (its goto and wait add Playwright's own round trips)."""
    page.add_init_script(FIRST_ENVELOPE)
    t0 = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("[data-envelope-id]", timeout=timeout_ms)
    harness = time.perf_counter() - t0
    inside = page.evaluate("window.__firstEnvelope") / 1000
    return f"{inside:.2f} s ({harness:.2f} s through the harness)"


def jump_round(page: Any, name: str, count: int, rng: random.Random, jumps: int,
               rows: List[Tuple[str, str, str]], when: str) -> None:
    """Jumps to envelopes at random places (a different one for each kind), timed in the
    page (performance.now) from the request to the envelope in the DOM."""
    times: Dict[str, List[float]] = {"by id": [], "by position": [], "by time": []}
    for _ in range(jumps):
        item = api(page, f"/api/envelope?t={name}&i={rng.randrange(count)}")
        times["by id"].append(page.evaluate(JUMP_BY_INPUT, ["#jump-id", item["id"],
                                                            f"[data-envelope-id='{item['id']}'].target"]))
        page.fill("#jump-id", "")
        times["by position"].append(page.evaluate(JUMP_BY_SCROLL, [0.02 + 0.96 * rng.random(), count]))
        item = api(page, f"/api/envelope?t={name}&i={rng.randrange(count)}")
        times["by time"].append(page.evaluate(JUMP_BY_INPUT, ["#jump-time", item["ts"], "article.target"]))
        page.fill("#jump-time", "")
    for label, got in times.items():
        lost = sum(1 for t in got if t < 0)  # not there after 30 s
        got = sorted(abs(t) for t in got)
        rows.append((f"jump {label} ({when}): median, worst of {len(got)}",
                     f"{got[len(got) // 2]:.0f} ms, {got[-1]:.0f} ms" + (f" ({lost} not there after 30 s)" if lost else ""),
                     "<= 100 ms"))


def grep_seconds(path: str, needle: str, ignore_case: bool = False) -> Tuple[float, int]:
    best = None
    count = 0
    for _ in range(3):
        t0 = time.perf_counter()
        out = subprocess.run(["grep", "-F", "-c"] + (["-i"] if ignore_case else []) + [needle, path],
                             capture_output=True, text=True)
        took = time.perf_counter() - t0
        count = int(out.stdout.strip() or 0)
        best = took if best is None else min(best, took)
    assert best is not None
    return best, count


#: A request of the data API from the page, with the token its tab keeps (as its script sends it).
FETCH = ("(u => fetch(u, {headers: {authorization: 'Bearer ' + "
         "sessionStorage.getItem('llm-agent-session-view-token')}}))")


def api(page: Any, path: str) -> Any:
    return page.evaluate(f"{FETCH}({json.dumps(path)}).then(r => r.json())")


def transcript_figures(path: str, rows: List[Tuple[str, str, str]], jumps: int) -> None:
    from playwright.sync_api import sync_playwright

    size = os.path.getsize(path)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL)  # warm the page cache, as grep gets it
    viewer = Viewer(path)
    rows.append(("URL printed after start", f"{viewer.url_seconds:.2f} s", "<= 1 s"))
    name = viewer.url.split("/t/")[1].split("#")[0]
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            rows.append(("first screen rendered after navigation", first_screen(page, viewer.url, 60000), "<= 1.5 s"))
            rows.append(("server RSS, transcript open", f"{viewer.rss_mb():.0f} MB ({viewer.rss_mb() * 2**20 / size:.2f}x)",
                         "<= 0.3x"))
            info = wait_until(page, f"{FETCH}('/api/transcript?t={name}').then(r => r.json())"
                                    ".then(j => j.ready.index && j)")
            count = info["count"]
            rng = random.Random(7)
            jump_round(page, name, count, rng, jumps, rows, "while the history is read")
            rows.append(("rendered envelope elements (most seen)",
                         str(page.evaluate("document.querySelectorAll('[data-envelope-id]').length")), "<= 500"))
            # Search: the byte scan alone, then the first hit through the page (the whole
            # search through the API is measured once the background reads are done).
            for ignore_case in (False, True):
                scan_only = byte_scan_seconds(path, NEEDLE, ignore_case)
                rows.append((f"search byte scan ({'ignoring' if ignore_case else 'matching'} case) vs grep -F -c"
                             f"{' -i' if ignore_case else ''}",
                             f"{scan_only:.2f} s vs {grep_seconds(path, NEEDLE, ignore_case)[0]:.2f} s", "<= 1.5x"))
            t0 = time.perf_counter()
            page.fill("input[type=search]", NEEDLE.lower())
            page.press("input[type=search]", "Enter")
            page.wait_for_selector("article.hit mark", timeout=60000)
            rows.append(("search: first hit shown", f"{(time.perf_counter() - t0) * 1000:.0f} ms", "<= 300 ms"))
            cdp = page.context.new_cdp_session(page)
            heap = cdp.send("Runtime.getHeapUsage")["usedSize"] / 2**20
            rows.append(("page JS heap", f"{heap:.1f} MB", "<= 100 MB"))
            t0 = time.perf_counter()
            wait_until(page, f"{FETCH}('/api/transcript?t={name}').then(r => r.json()).then(j => j.ready.history)",
                       timeout=600)
            rows.append(("history read in the background (after the first screen)",
                         f"{time.perf_counter() - t0:.1f} s more", "never blocks a screen"))
            # The whole search through the API, as the page streams it, against grep, each
            # the best of three on a quiet server (the first run is given too).
            wait_for_quiet(page, name)
            grep = grep_seconds(path, NEEDLE)[0]
            runs = []
            for _ in range(3):
                t0 = time.perf_counter()
                done = page.evaluate(f"{FETCH}('/api/search?t={name}&q={NEEDLE}&case=1&extras=1').then(r => r.text())"
                                     ".then(t => t.trim().split('\\n').pop())")
                runs.append(time.perf_counter() - t0)
            found = json.loads(done)
            rows.append((f"search {NEEDLE!r}: whole file through the API, hits placed ({found['total']:,} of "
                         f"{found['lines']:,} lines), best of 3 (first)",
                         f"{min(runs):.2f} s ({runs[0]:.2f} s) vs {grep:.2f} s ({min(runs) / grep:.2f}x)", "<= 1.5x"))
            jump_round(page, name, count, rng, jumps, rows, "after")
            rows.append(("server RSS, history read too", f"{viewer.rss_mb():.0f} MB ({viewer.rss_mb() * 2**20 / size:.2f}x)",
                         "<= 0.3x"))
            browser.close()
    finally:
        viewer.stop()


def index_figures(path: str, rows: List[Tuple[str, str, str]], jumps: int, reopens: int) -> None:
    """The viewer with and without the transcript's side index (issue #38), in a cache of
    its own (``LLM_AGENT_SESSION_CACHE``, a temporary directory): opened the first time
    (no index: the end shown first, the index built in the background), then reopened
    (the index kept): the first screen, jumps from the first second, the search against
    ``grep -F -c``, and the server's RSS once indexed (before and after the history)."""
    from playwright.sync_api import sync_playwright

    size = os.path.getsize(path)
    subprocess.run(["cat", path], stdout=subprocess.DEVNULL)  # warm the page cache, as grep gets it
    cache = tempfile.mkdtemp(prefix="viewer-bench-cache-")
    env = dict(os.environ, LLM_AGENT_SESSION_CACHE=cache)
    ratio = lambda mb: f"{mb:.0f} MB ({mb * 2**20 / size:.2f}x)"  # noqa: E731
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            for when in ("opened the first time (no index)", "reopened (index kept)"):
                viewer = Viewer(path, env)
                name = viewer.url.split("/t/")[1].split("#")[0]
                try:
                    page = browser.new_page(viewport={"width": 1280, "height": 900})
                    t0 = time.perf_counter()
                    rows.append((f"{when}: first screen rendered", first_screen(page, viewer.url, 120000),
                                 "<= 1.5 s at 10 GB" if "first" in when else "<= 0.5 s"))
                    info = wait_until(page, f"{FETCH}('/api/transcript?t={name}').then(r => r.json())"
                                            ".then(j => j.ready.index && !j.preview && j)", timeout=900)
                    rows.append((f"{when}: whole file counted and placed (index ready)",
                                 f"{time.perf_counter() - t0:.2f} s ({info['count']:,} envelopes)", "in the background"))
                    rows.append((f"{when}: server RSS once indexed", ratio(viewer.rss_mb()), "<= 0.1x"))
                    if "first" in when:
                        page.close()
                        continue
                    page.reload()  # the page as a person sees it on reopening: its first screen
                    page.wait_for_selector("[data-envelope-id]", timeout=60000)
                    jump_round(page, name, info["count"], random.Random(7), jumps, rows, "reopened, first seconds")
                    t1 = time.perf_counter()
                    wait_until(page, f"{FETCH}('/api/transcript?t={name}').then(r => r.json())"
                                     ".then(j => j.ready.history)", timeout=900)
                    rows.append(("reopened: history read in the background", f"{time.perf_counter() - t1:.1f} s more",
                                 "never blocks a screen"))
                    # What the server keeps: measured once its secret and token counts are done
                    # too (their passes peak above it while they run: the peak beside).
                    rows.append(("reopened: every other background pass done (secrets, tokens)",
                                 f"{wait_for_quiet(page, name):.1f} s more", "never blocks a screen"))
                    rows.append(("reopened: server RSS, history read too", ratio(viewer.rss_mb()), "<= 0.1x"))
                    rows.append(("reopened: server peak RSS (VmHWM)", ratio(viewer.rss_mb("VmHWM")), ""))
                    # The whole search on a quiet server, as viewer_speed measures it.
                    grep = grep_seconds(path, NEEDLE)[0]
                    runs = []
                    for _ in range(3):
                        t1 = time.perf_counter()
                        done = page.evaluate(f"{FETCH}('/api/search?t={name}&q={NEEDLE}&case=1&extras=1')"
                                             ".then(r => r.text()).then(t => t.trim().split('\\n').pop())")
                        runs.append(time.perf_counter() - t1)
                    found = json.loads(done)
                    rows.append((f"reopened: search {NEEDLE!r} through the API ({found.get('total', 0):,} hits), "
                                 "best of 3 vs grep -F -c",
                                 f"{min(runs):.2f} s vs {grep:.2f} s ({min(runs) / grep:.2f}x)", "<= 1.5x"))
                    page.close()
                finally:
                    viewer.stop()
            rows.append((f"reopened {reopens} times more: first screen, median (range)",
                         reopened_first_screens(browser, path, env, reopens), "<= 0.5 s"))
            browser.close()
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def reopened_first_screens(browser: Any, path: str, env: Dict[str, str], times: int) -> str:
    """The first screen of `times` reopens, each a new server and a new page (a browser's
    fresh context: nothing cached), timed as ``first_screen`` times it in the page: one
    reopen's figure moved by 0.1-0.2 s from run to run on this machine."""
    got: List[float] = []
    for _ in range(times):
        viewer = Viewer(path, env)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.add_init_script(FIRST_ENVELOPE)
            page.goto(viewer.url)
            page.wait_for_selector("[data-envelope-id]", timeout=60000)
            got.append(page.evaluate("window.__firstEnvelope") / 1000)
            page.close()
        finally:
            viewer.stop()
    return f"{statistics.median(got):.2f} s ({min(got):.2f}-{max(got):.2f} s)" if got else "-"


def one_line_messages(path: str, count: int) -> None:
    """A transcript of `count` messages of a few bytes each (about 150 bytes a line)."""
    from llm_agent_session.canonical import new_id

    with open(path, "w") as f:
        f.write('{"id":"%s","payload":{"title":"small lines"},"ts":"2026-01-01T00:00:00.000000Z",'
                '"type":"session-meta","v":1}\n' % new_id())
        for i in range(count):
            f.write('{"id":"%s","payload":{"content":"m%d","role":"%s"},"ts":"2026-01-01T%02d:%02d:%02d.000000Z",'
                    '"type":"message","v":1}\n' % (new_id(), i, "user" if i % 2 == 0 else "assistant",
                                                   i // 3600 % 24, i // 60 % 60, i % 60))


def small_lines_figures(n: int, rows: List[Tuple[str, str, str]]) -> None:
    """The server's RSS on `n` one-line messages: open, history read, and its peak."""
    import urllib.request

    scratch = tempfile.mkdtemp(prefix="viewer-small-lines-")
    try:
        path = os.path.join(scratch, "small.jsonl")
        one_line_messages(path, n)
        size = os.path.getsize(path)
        viewer = Viewer(path)
        try:
            page, token = viewer.url.split("#token=")
            request = urllib.request.Request(page.replace("/t/", "/api/transcript?t="),
                                             headers={"authorization": f"Bearer {token}"})
            with urllib.request.urlopen(request, timeout=600):
                pass
            label = f"server RSS, {n:,} one-line messages ({size / 1e6:,.0f} MB)"
            rows.append((label + ", open", f"{viewer.rss_mb():.0f} MB ({viewer.rss_mb() * 2**20 / size:.2f}x)", "-"))
            while True:
                with urllib.request.urlopen(request, timeout=600) as r:
                    if all(json.loads(r.read())["ready"].values()):
                        break
                time.sleep(0.1)
            rows.append((label + ", history read", f"{viewer.rss_mb():.0f} MB ({viewer.rss_mb() * 2**20 / size:.2f}x)",
                         "-"))
            rows.append((label + ", peak", f"{viewer.rss_mb('VmHWM'):.0f} MB "
                                           f"({viewer.rss_mb('VmHWM') * 2**20 / size:.2f}x)", "-"))
        finally:
            viewer.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def shelf_figures(n: int, rows: List[Tuple[str, str, str]]) -> None:
    from playwright.sync_api import sync_playwright

    from llm_agent_session import Session, assistant_message, user_message

    folder = tempfile.mkdtemp(prefix="viewer-shelf-")
    try:
        for i in range(n):
            sub = os.path.join(folder, f"p{i // 500:03d}")
            os.makedirs(sub, exist_ok=True)
            with Session.create(os.path.join(sub, f"run-{i:05d}.jsonl"), {"title": f"run {i}", "agent": "bench"}) as s:
                s.append_message(user_message(f"question {i}"))
                s.append_message(assistant_message(f"answer {i}"))
        viewer = Viewer(folder)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                t0 = time.perf_counter()
                page.goto(viewer.url)
                page.wait_for_selector(".shelf-row[href]", timeout=60000)
                rows.append((f"shelf of {n:,}: first rows", f"{time.perf_counter() - t0:.2f} s after navigation", "<= 1 s"))
                wait_until(page, f"document.querySelector('#shelf-count').textContent.startsWith('{n:,} of {n:,}') && "
                                 "document.querySelector('#shelf-count').textContent.indexOf('reading') < 0", 300)
                rows.append((f"shelf of {n:,}: all rows", f"{time.perf_counter() - t0:.2f} s after navigation", "<= 10 s"))
                browser.close()
        finally:
            viewer.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# Enter a text in the shelf's search box; the first hit on the screen, then the search done.
SHELF_SEARCH = """async (text) => {
  const box = document.querySelector('#shelf-search');
  const count = document.querySelector('#shelf-search-count');
  box.value = text;
  const t0 = performance.now();
  box.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
  let first = null;
  for (;;) {
    if (first === null && document.querySelector('.shelf-hit')) first = performance.now() - t0;
    const said = count.textContent;
    if (/^[0-9,]+ hits? /.test(said) && said.indexOf('…') < 0) break;
    await new Promise(r => setTimeout(r, 1));
  }
  return [first, performance.now() - t0, count.textContent];
}"""


def grep_tree_seconds(root: str, needle: str) -> float:
    """``grep -r -F -c`` over `root`, best of 3 (wall). Its output is read, as a user's
    terminal or pipe reads it: GNU grep writing to /dev/null stops at each file's first
    match (0.29 s against 0.89 s for a text in most of the fleet's transcripts)."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run(["grep", "-r", "-F", "-c", needle, root], capture_output=True)
        best = min(best, time.perf_counter() - t0)
    return best


def fleet_figures(root: str, rows: List[Tuple[str, str, str]]) -> None:
    from playwright.sync_api import sync_playwright

    from search_speed import texts_for, walk_order

    paths = walk_order(root)
    subprocess.run(["grep", "-r", "-F", "-c", "warm the page cache", root], stdout=subprocess.DEVNULL)
    texts = texts_for(paths)
    viewer = Viewer(root)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            t0 = time.perf_counter()
            page.goto(viewer.url)
            page.wait_for_selector(".shelf-row[href]", timeout=120000)
            n = len(paths)
            rows.append((f"fleet of {n:,}: first rows", f"{time.perf_counter() - t0:.2f} s after navigation", "<= 1 s"))
            wait_until(page, "document.querySelector('#shelf-count').textContent.indexOf('reading') < 0", 900)
            rows.append((f"fleet of {n:,}: all rows (tokens too)", f"{time.perf_counter() - t0:.2f} s after navigation",
                         "as before tokens"))
            for label, text in texts:
                grep = grep_tree_seconds(root, text)
                for round_ in ("first", "repeated"):
                    page.press("#shelf-search", "Escape")  # the last search stopped, its hits gone
                    first, whole, said = page.evaluate(SHELF_SEARCH, text)
                    if first is not None:
                        # The rare text's one hit is halfway through the walk: the scan
                        # must get there (hits come in walk order) before it can be shown.
                        goal = "<= 300 ms" if label != "rare" or round_ != "first" else "once the scan is halfway"
                        rows.append((f"fleet search, {label} text, {round_}: first hit", f"{first:,.0f} ms", goal))
                    hits = said.split(" ·")[0]
                    rows.append((f"fleet search, {label} text, {round_}: done ({hits})", f"{whole / 1000:.2f} s "
                                 f"({whole / 1000 / grep:.2f}x grep {grep:.2f} s)",
                                 "<= 1.5x grep" if round_ == "first" else "< first"))
                    print(f"  ({label}, {round_}: {said})", file=sys.stderr)
            browser.close()
    finally:
        viewer.stop()


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", nargs="?", help="a transcript (default: one generated at --size)")
    parser.add_argument("--size", default="16MB", help="the size to generate when no PATH is given")
    parser.add_argument("--shelf", type=int, default=10_000, help="transcripts in the shelf (0: none)")
    parser.add_argument("--jumps", type=int, default=10)
    parser.add_argument("--reopens", type=int, default=9,
                        help="with --side-index: reopens more, for the first screen's median")
    parser.add_argument("--small-lines", type=int, default=0, metavar="N",
                        help="also the server's memory on N one-line messages (0: not)")
    parser.add_argument("--side-index", action="store_true",
                        help="instead: the viewer without the side index, then with it (a cache of its own)")
    parser.add_argument("--fleet", metavar="DIR", help="also the shelf and its search on this fleet of transcripts")
    parser.add_argument("--no-transcript", action="store_true", help="leave out the big transcript (and --shelf)")
    parser.add_argument("--write", action="store_true", help="replace this section of benches/RESULTS.md")
    parser.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                        help="an option for the view command (repeatable): --server-arg=--no-redact")
    args = parser.parse_args(argv)
    if args.write and args.server_arg:
        parser.error("--write records the view command as a user starts it: leave out --server-arg")
    Viewer.extra = list(args.server_arg)
    rows: List[Tuple[str, str, str]] = []
    scratch = None
    path = args.path
    if args.no_transcript:
        if not args.fleet:
            parser.error("--no-transcript leaves only --fleet DIR to measure: give it")
        fleet_figures(args.fleet, rows)
        _print("the viewer's shelf", rows)
        return 0
    if path is None:
        import generate

        scratch = tempfile.mkdtemp(prefix="viewer-bench-")
        path = os.path.join(scratch, "t.jsonl")
        generate.main([path, "--size", args.size])
    size = os.path.getsize(path)
    try:
        if args.side_index:
            index_figures(path, rows, args.jumps, args.reopens)
        else:
            transcript_figures(path, rows, args.jumps)
        if args.shelf and not args.side_index:
            shelf_figures(args.shelf, rows)
        if args.small_lines and not args.side_index:
            small_lines_figures(args.small_lines, rows)
        if args.fleet:
            fleet_figures(args.fleet, rows)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    _print(f"viewer on {path} ({size / 1e6:,.0f} MB)", rows)
    if args.write:
        write_section(path, size, rows, argv if argv is not None else sys.argv[1:], args.side_index)
    return 0


def _print(title: str, rows: List[Tuple[str, str, str]]) -> None:
    print(title)
    width = max(len(r[0]) for r in rows)
    for what, got, goal in rows:
        print(f"  {what:<{width}}  {got:>26}   goal {goal}")


SECTION_START = "<!-- viewer:start -->"
SECTION_END = "<!-- viewer:end -->"


INDEX_SECTION_START = "<!-- viewer-index:start -->"
INDEX_SECTION_END = "<!-- viewer-index:end -->"


def write_section(path: str, size: int, rows: List[Tuple[str, str, str]], argv: List[str],
                  side_index: bool = False) -> None:
    """This run's figures as their section of benches/RESULTS.md."""
    from benchutil import machine_info, md_table, replace_section, shown_command

    start, end = (INDEX_SECTION_START, INDEX_SECTION_END) if side_index else (SECTION_START, SECTION_END)
    title = ("## The viewer with and without the side index (issue #38)" if side_index
             else "## The viewer on a big transcript (issue #25)")
    info = machine_info()
    command = shown_command("viewer_speed.py", argv)
    text = "\n".join([
        start,
        title,
        "",
        f"`{command}`, on {os.path.basename(path)} ({size / 1e6:,.0f} MB): {info.get('CPU')}, "
        f"{info.get('Cores')}, {info.get('Date')}, commit {info.get('Commit', '?')}. The server is the "
        "real command in a child process; the page is Debian's Chromium driven by Playwright; "
        "times are measured in the page (performance.now) from the request to the envelope in the DOM.",
        "",
        md_table(["figure", "this run", "goal"], [list(r) for r in rows]),
        end,
    ])
    replace_section(os.path.join(HERE, "RESULTS.md"), start, end, text)


if __name__ == "__main__":
    sys.exit(main())
