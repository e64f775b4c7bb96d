"""Imported sessions in a real browser (issue #35): the shelf reads as sessions (titles,
projects as groups, short ids, the source's times, subagents nested under their parent)
and a tool call reads as one card (its dispatch, result and settle thin lines under it),
a model's thinking folded with its message, import checkpoints folded to one line. The
transcripts are the importers' fixtures (the real line shapes of Claude Code and Codex),
imported; Chromium by Playwright as in test_view_browser.py.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

pytestmark = pytest.mark.slow

from tests.support.browser import API, AUTH, a_page, browser, serving, wait_until  # noqa: E402,F401
from tests.support.view import build_imported, build_shelf  # noqa: E402

from llm_agent_session import Session, assistant_message, tool_message, user_message  # noqa: E402
from tests.support import hostile  # noqa: E402

HOSTILE_HTML = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
                "[click](javascript:window.__pwned=3) <iframe src=\"https://evil.example\"></iframe>")


def write_hostile_session(root: str) -> None:
    """A session whose every field the shelf and a card show is hostile: title, project,
    session id, a tool's name, call id, arguments and result, a settle's error, a model's
    thinking and reasoning; and a subagent of it."""
    H = hostile.H + HOSTILE_HTML
    path = os.path.join(root, "hostile", "fields.jsonl")
    os.makedirs(os.path.dirname(path))
    call = {"id": "call" + hostile.SHORT, "type": "function",
            "function": {"name": "tool" + hostile.SHORT, "arguments": json.dumps({"q": H})}}
    meta = {"title": H, "cwd": "/home/" + hostile.SHORT + "/" + H, "session-id": hostile.SHORT + "-session",
            "imported-from": "claude-code"}
    with Session.create(path, meta) as s:
        s.append_message(user_message(H))
        s.append_message(assistant_message(H, [call]), extra={
            "thinking": [{"type": "thinking", "thinking": H, "signature": "x"}],
            "reasoning": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": H}], "content": None}]})
        op = s.append_tool_dispatched(call["id"], "tool" + hostile.SHORT, {"q": H})
        s.append_message(tool_message(call["id"], H * 3))
        s.append_tool_settled(op, "failed", error=H)
    child = os.path.join(root, "hostile", "fields", "subagents", "agent-x.jsonl")
    os.makedirs(os.path.dirname(child))
    with Session.create(child, {"parent": {"transcript": "../../fields.jsonl"}, "cwd": meta["cwd"],
                                "session-id": hostile.SHORT}) as s:
        s.append_message(user_message(H))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A server over sessions imported from Claude Code and Codex, a native transcript in
    another project, one that names no project, the hostile session, and the command
    line's every-line-type transcript (a long tool result)."""
    top = tmp_path_factory.mktemp("sessions")
    root = str(top / "shelf")
    imported = build_imported(root, str(top / "sources"))
    with Session.create(os.path.join(root, "native", "other.jsonl"), {"title": "in another project",
                                                                      "cwd": "/srv/other/app"}) as s:
        s.append_message(user_message("hello"))
    with Session.create(os.path.join(root, "native", "nowhere.jsonl"), {"title": "nowhere"}) as s:
        s.append_message(user_message("hello"))
    write_hostile_session(root)
    every = build_shelf(os.path.join(root, "every"))
    with serving(root) as (base, token):
        yield {"base": base, "token": token, "imported": imported, "root": root, "every": every}


@pytest.fixture
def page(browser, site):
    with a_page(browser, site["base"], site["token"]) as p:
        yield p


def name_of(site, path):
    return "shelf/" + os.path.relpath(path, site["root"]).replace(os.sep, "/")


def shelf_read(page):
    page.wait_for_selector(".shelf-row[href]")
    wait_until(page, "document.querySelector('#shelf-count').textContent.indexOf('reading') < 0")


LINES = """() => [...document.querySelectorAll('#shelf-rows .shelf-line')]
    .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
    .map((l) => l.classList.contains('group')
        ? ['group', l.querySelector('.group-name').textContent, l.querySelector('.dim').textContent]
        : [l.classList.contains('child') ? 'child' : 'row', l.querySelector('.name').textContent,
           l.querySelector('.title').textContent])"""


def test_the_shelf_reads_as_sessions_grouped_by_project_with_subagents_nested(page, site):
    shelf_read(page)
    imported = site["imported"]
    session, subagent = name_of(site, imported.session), name_of(site, imported.subagent)
    lines = page.evaluate(LINES)
    groups = [line[1:] for line in lines if line[0] == "group"]
    assert groups[0] == ["dev/proj", "/home/dev/proj · 6 transcripts"]  # a group a project, the full path beside it
    assert ["other/app", "/srv/other/app · 1 transcript"] in groups and groups[-1][0] == "no project"
    row = page.locator(f"a.shelf-row[href='/t/{session}']")
    assert row.locator(".title").text_content() == "Date parser fix"
    assert (row.locator(".project").text_content(), row.locator(".project").get_attribute("title")) == (
        "dev/proj", "/home/dev/proj")
    assert row.locator(".session").text_content() == "sess-1"
    cells = row.locator(".time")
    # The source's first and last events, never the time of an import (its checkpoints' are later).
    assert [cells.nth(k).text_content() for k in range(2)] == ["2025-08-20 09:00", "2025-08-20 09:00"]
    assert cells.nth(1).get_attribute("title") == "2025-08-20 09:00:19 UTC"
    # The subagent is nested: not a row until its parent is opened, then right under it.
    assert ["row", session, "Date parser fix"] in lines and not [ln for ln in lines if ln[1] == subagent]
    lonely = [ln for ln in lines if ln[1] == name_of(site, imported.lonely)]
    assert lonely and lonely[0][0] == "row"  # its parent is not on the shelf: a row of its own, and says so
    assert "its parent is not on the shelf" in page.locator(
        f"a.shelf-row[href='/t/{name_of(site, imported.lonely)}'] .tag").text_content()
    page.click(f".shelf-line:has(a.shelf-row[href='/t/{session}']) button.nest")
    lines = page.evaluate(LINES)
    at = lines.index(["row", session, "Date parser fix"])
    assert lines[at + 1] == ["child", subagent, "Count the TODOs"]
    sidechained = name_of(site, imported.sidechained)
    page.click(f".shelf-line:has(a.shelf-row[href='/t/{sidechained}']) button.nest")
    lines = page.evaluate(LINES)
    assert lines[lines.index(["row", sidechained, "review the repo"]) + 1] == [
        "child", name_of(site, imported.sidechain), "Review it"]


def group_rows(page, group):
    """The top rows of the group `group`, in the order shown."""
    lines, out, inside = page.evaluate(LINES), [], False
    for line in lines:
        if line[0] == "group":
            inside = line[1] == group
        elif inside and line[0] == "row":
            out.append(line[2])
    return out


def test_the_shelf_sorts_by_a_column_within_its_groups_folds_a_group_and_filters(page, site):
    shelf_read(page)
    page.click("#shelf-head [data-key=last]")
    by_last = ["review the repo", "Date parser fix", "what is in this screenshot, and list the files", "Count the TODOs"]
    assert group_rows(page, "dev/proj") == by_last
    page.click("#shelf-head [data-key=last]")  # again: the other way
    assert group_rows(page, "dev/proj") == by_last[::-1]
    page.click("#shelf-head [data-key=project]")  # the groups by project, "no project" last
    groups = [line[1] for line in page.evaluate(LINES) if line[0] == "group"]
    assert groups.index("dev/proj") < groups.index("other/app") and groups[-1] == "no project"
    page.click(".shelf-line.group:has(.group-name:text-is('dev/proj')) button.nest")  # folded to its header
    assert group_rows(page, "dev/proj") == [] and "/home/dev/proj · 6 transcripts" in page.inner_text("#shelf-rows")
    page.uncheck("#group")
    assert not [line for line in page.evaluate(LINES) if line[0] == "group"]
    assert "Date parser fix" in [line[2] for line in page.evaluate(LINES)]
    page.fill("#filter", "count the todos")  # a subagent found: shown under its parent
    lines = page.evaluate(LINES)
    imported = site["imported"]
    assert [line[:2] for line in lines] == [["row", name_of(site, imported.session)],
                                            ["child", name_of(site, imported.subagent)],
                                            ["row", name_of(site, imported.lonely)]]
    assert page.inner_text("#shelf-count").startswith("3 of ")


def open_transcript(page, site, name, query=""):
    page.goto(site["base"] + f"/t/{name}{query}")
    page.wait_for_selector("[data-envelope-id]")
    wait_until(page, "document.getElementById('status').textContent.indexOf('reading the history') < 0")


def go_to(page, envelope_id):
    """Jump to the envelope by its id (it is then drawn, at the top of the screen)."""
    page.fill("#jump-id", envelope_id)
    page.press("#jump-id", "Enter")
    page.wait_for_selector(f"article.target[data-envelope-id='{envelope_id}']")


def envelopes(page, site, name):
    return page.evaluate(f"{API}('/api/window?t={name}&count=200').then(j => j.items)")


CARD = """(card) => ({
    name: card.querySelector('.call-name').textContent,
    badges: [...card.querySelectorAll('.call-head .badge')].map((b) => [b.textContent, b.className]),
    duration: (card.querySelector('.duration') || {}).textContent || null,
    labels: [...card.querySelectorAll(':scope > .label')].map((l) => l.textContent),
    texts: [...card.querySelectorAll(':scope > pre')].map((p) => p.textContent),
})"""


def test_a_tool_call_is_one_card_and_its_other_lines_are_thin(page, site):
    name = name_of(site, site["imported"].session)
    open_transcript(page, site, name)
    items = envelopes(page, site, name)
    message = next(i for i in items if any("call" in b and b["call"]["name"] == "Read" for b in i["body"]))
    page.click("#unfold")  # the first calls were compacted away: shown in full
    cards = page.locator(f"article[data-envelope-id='{message['id']}'] .card")
    cards.nth(1).wait_for(state="attached")  # drawn once its window is in (later on a loaded machine)
    assert cards.count() == 2  # one card a call, in the message that made them
    read, bash = (cards.nth(k).evaluate(CARD) for k in range(2))
    assert (read["name"], bash["name"]) == ("Read", "Bash")
    assert ["completed", "badge state-completed"] in read["badges"] and ["failed", "badge state-failed"] in bash["badges"]
    assert (read["duration"], bash["duration"]) == ("3 s", "3 s")  # by the source's times of call and settle
    assert bash["labels"] == ["arguments", "result · 18 characters"]
    assert json.loads(bash["texts"][0]) == {"command": "pytest -x", "timeout": 60} and bash["texts"][1] == "1 failed: test_iso"
    # The dispatches, results and settles: each a thin line, part of the card above, its body folded.
    parts = [i for i in items if i.get("part", {}).get("of") == message["id"]]
    assert [p["type"] for p in parts] == ["tool-dispatched", "tool-dispatched", "message", "tool-settled", "message",
                                          "tool-settled"]
    for p in parts:
        line = page.locator(f"article.part[data-envelope-id='{p['id']}']")
        assert line.locator(".badge", has_text="part of the card above").count() == 1
        assert not line.locator(":scope > .body").is_visible()
    # The call nothing answered: may or may not have run, no duration, no result.
    pending = next(i for i in items if any("call" in b and b["call"]["id"] == "toolu_again" for b in i["body"]))
    go_to(page, pending["id"])
    card = page.locator(f"article[data-envelope-id='{pending['id']}'] .card").evaluate(CARD)
    assert ["pending: may or may not have run", "badge state-dispatched"] in card["badges"]
    assert card["duration"] is None and card["labels"] == ["arguments", "no result recorded"]


def test_codex_cards_outcome_unknown_failed_and_durations(page, site):
    name = name_of(site, site["imported"].codex)
    open_transcript(page, site, name)
    page.click("#unfold")
    items = envelopes(page, site, name)
    by_call = {}
    for item in items:
        for b in item["body"]:
            if "call" in b and b["call"].get("op") and item["type"] == "message":
                by_call[b["call"]["id"]] = item["id"]
    cards = {}
    for call_id, envelope_id in by_call.items():
        go_to(page, envelope_id)
        for k in range(page.locator(f"article[data-envelope-id='{envelope_id}'] .card").count()):
            card = page.locator(f"article[data-envelope-id='{envelope_id}'] .card").nth(k).evaluate(CARD)
            cards[card["name"]] = card
    assert sorted(cards) == ["apply_patch", "local_shell", "shell"]
    assert cards["shell"]["duration"] == "10 ms" and cards["shell"]["texts"][1] == "a.py\nb.py\n"  # Codex's output
    assert cards["shell"]["labels"][1] == "result · exit code 0 · 10 characters"
    assert ["failed", "badge state-failed"] in cards["apply_patch"]["badges"]
    assert cards["apply_patch"]["labels"][1].startswith("result · exit code 1")
    rm = cards["local_shell"]  # rolled back with no result: whether it ran is not known
    assert ["outcome unknown: may or may not have run", "badge state-outcome-unknown"] in rm["badges"]
    assert rm["duration"] is None and rm["labels"] == ["arguments", "reason", "no result recorded"]
    assert "a rollback" in rm["texts"][1]


def test_a_long_result_is_folded_and_the_raw_lines_are_one_click_away(page, site):
    every = site["every"]
    name = "shelf/every/run.jsonl"
    open_transcript(page, site, name)
    page.click("#unfold")  # the call was compacted away: shown in full
    card = page.locator(f"article[data-envelope-id='{every.ids['a1']}'] .card")
    result = card.locator("pre.result")
    assert "clip" in result.get_attribute("class")  # folded to a few lines
    folded = result.bounding_box()["height"]
    card.locator("button.unclip").last.click()
    assert "clip" not in result.get_attribute("class") and result.bounding_box()["height"] > folded * 3
    whole = card.locator("button.badge", has_text="the whole result")  # the card holds its start: the rest is a click away
    assert whole.count() == 1
    card.locator(".call-head button.raw").click()
    raws = card.locator(".rawlines pre.rawline")
    wait_until(page, f"document.querySelectorAll(\"[data-envelope-id='{every.ids['a1']}'] .rawlines pre\").length === 4")
    lines = [json.loads(raws.nth(k).text_content()) for k in range(4)]
    assert [line["type"] for line in lines] == ["message", "tool-dispatched", "message", "tool-settled"]
    assert lines[0]["id"] == every.ids["a1"] and lines[2]["id"] == every.ids["t1"]
    card.locator(".call-head button.raw").click()  # and away again
    assert card.locator(".rawlines").count() == 0
    whole.click()  # to the result's own line: the jump's target, unfolded
    page.wait_for_selector(f"article.part.target.unfolded[data-envelope-id='{every.ids['t1']}']")
    assert page.is_visible(f"article[data-envelope-id='{every.ids['t1']}'] > .body")


def test_thinking_is_folded_with_its_message(page, site):
    for path, text in ((site["imported"].session, "Let me look."), (site["imported"].codex, "**Looking**")):
        name = name_of(site, path)
        open_transcript(page, site, name)
        page.click("#unfold")
        thinking = page.locator("details.thinking").first
        thinking.wait_for()
        assert thinking.get_attribute("open") is None and not thinking.locator(".text").is_visible()
        assert thinking.locator("summary").text_content().startswith("thinking · ")
        thinking.locator("summary").click()
        assert thinking.locator(".text").is_visible() and thinking.locator(".text").text_content() == text
        extras = thinking.locator("xpath=ancestor::article").locator(".extras summary")  # not twice
        assert extras.count() == 0 or not {"thinking", "reasoning"} & set(extras.text_content().split(": ")[1].split(", "))
        thinking.locator("summary").click()  # folded again: a search hit in it (an extra) opens it
        page.check("#search-extras")
        page.fill("input[type=search]", text)
        page.press("input[type=search]", "Enter")
        opened = page.wait_for_selector("article.hit-current details.thinking[open] .text mark")
        assert opened.text_content() == text


def checkpoints(page, site, name):
    return [i for i in envelopes(page, site, name) if i["type"] == "import-checkpoint"]


def test_import_checkpoints_side_by_side_fold_to_one_line(page, site):
    name = name_of(site, site["imported"].session)
    open_transcript(page, site, name)
    found = checkpoints(page, site, name)
    assert len(found) == 4 and all(c["run"] == {"start": found[0]["i"], "count": 4} for c in found)
    page.click("#to-end")
    line = page.locator(f"article.bookkeeping[data-envelope-id='{found[0]['id']}']")
    assert line.locator(".title").text_content() == "4 import checkpoints"
    for c in found[1:]:  # in the list, not on the screen
        hidden = page.locator(f"article[data-envelope-id='{c['id']}']")
        assert "run-hidden" in hidden.get_attribute("class")
        assert hidden.evaluate("(e) => e.getBoundingClientRect().height") == 0
    line.locator("button.fold").click()
    for c in found:
        page.wait_for_selector(f"article.meta:not(.bookkeeping):not(.run-hidden)[data-envelope-id='{c['id']}']")
    go_to(page, found[0]["id"])  # on the screen (the end keeps the last line at the bottom)
    fold = page.locator(f"article[data-envelope-id='{found[0]['id']}'] button.fold")
    assert fold.text_content() == "fold 4"
    fold.click()  # folded again, the jump's target in it or not
    page.wait_for_selector(f"article.bookkeeping[data-envelope-id='{found[0]['id']}']")
    # A jump into the folded run unfolds all of it; one out of it folds it again.
    go_to(page, found[2]["id"])
    for c in found:
        page.wait_for_selector(f"article.meta:not(.bookkeeping):not(.run-hidden)[data-envelope-id='{c['id']}']")
    go_to(page, envelopes(page, site, name)[-5]["id"])
    page.wait_for_selector(f"article.bookkeeping[data-envelope-id='{found[0]['id']}']")
    assert "run-hidden" in page.get_attribute(f"article[data-envelope-id='{found[2]['id']}']", "class")


def test_a_deep_link_a_jump_or_a_search_hit_in_something_folded_unfolds_it(page, site):
    name = name_of(site, site["imported"].session)
    open_transcript(page, site, name)
    third = checkpoints(page, site, name)[2]
    open_transcript(page, site, name, f"?at={third['id']}")  # a deep link into the folded run
    page.wait_for_selector(f"article.target.meta:not(.run-hidden)[data-envelope-id='{third['id']}']")
    # A search hit in a folded part (a result, compacted too): shown unfolded, marked.
    open_transcript(page, site, name)
    page.fill("input[type=search]", "1 failed: test_iso")
    page.press("input[type=search]", "Enter")
    wait_until(page, "document.querySelector('#search-count').textContent.startsWith('1 of 1')")
    hit = page.wait_for_selector("article.part.hit-current")
    assert "unfolded" in hit.get_attribute("class") and hit.query_selector(":scope > .body mark").is_visible()
    # A hit in the extras of a folded run of checkpoints (its digest): the run unfolds.
    digest = json.loads(page.evaluate(f"{API}('/api/envelope?t={name}&i={third['i']}&raw=1').then(j => j.raw)"))
    page.check("#search-extras")
    page.fill("input[type=search]", digest["payload"]["digest"][7:40])
    page.press("input[type=search]", "Enter")
    page.wait_for_selector(f"article.hit-current.meta:not(.run-hidden)[data-envelope-id='{third['id']}'] mark")
    # The next tool call: its dispatch, a thin line, unfolded as the jump's target, shows the card.
    page.uncheck("#search-extras")
    page.fill("input[type=search]", "")
    page.press("input[type=search]", "Enter")
    page.click("#unfold")  # the first calls were compacted away: shown in full
    page.click("#to-start")
    page.click("#kind-next")
    target = page.wait_for_selector("article.target")
    assert "part" in target.get_attribute("class") and "unfolded" in target.get_attribute("class")
    assert target.query_selector(".card .call-name").text_content() == "Read" and target.query_selector(".card").is_visible()
    target.query_selector("button.badge.link:text('part of the card above')").click()  # up to the card
    card = page.wait_for_selector("article.target .card")
    assert card.query_selector(".call-name").text_content() == "Read"
    assert page.evaluate("new URLSearchParams(location.search).get('at')") == page.evaluate(
        "document.querySelector('article.target').dataset.envelopeId")


def test_the_hostile_fields_stay_inert_on_the_shelf_and_in_a_card(page, site):
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    shelf_read(page)
    page.uncheck("#group")
    page.click(".shelf-line:has(a.shelf-row[href='/t/shelf/hostile/fields.jsonl']) button.nest")
    page.wait_for_selector("a.shelf-row[href='/t/shelf/hostile/fields/subagents/agent-x.jsonl']")
    shelf = page.inner_text("#shelf-rows")
    titles = page.eval_on_selector_all("#shelf-rows [title]", "els => els.map((e) => e.title).join(' ')")
    for text in (shelf, titles):
        assert "<U+202E>" in text and "\\x1b" in text
        raw = [c for c in text if c in hostile.FORBIDDEN]
        assert raw == [], [hex(ord(c)) for c in raw]
    page.check("#group")  # a hostile project as a group's header
    groups = page.eval_on_selector_all("#shelf-rows .shelf-line.group", "els => els.map((e) => e.innerText).join(' ')")
    assert "<U+202E>" in groups and not [c for c in groups if c in hostile.FORBIDDEN]
    page.click("a.shelf-row[href='/t/shelf/hostile/fields.jsonl']")
    page.wait_for_selector(".card .call-head .badge.state-failed")
    for summary in page.query_selector_all("details.thinking > summary"):
        summary.click()
    for button in page.query_selector_all("article.part button.fold"):
        button.click()
    page.locator("article.role-assistant .card .call-head button.raw").click()
    page.wait_for_selector(".card .rawlines pre.rawline >> nth=3")
    text = page.inner_text("#items")
    assert "<U+202E>" in text and "\\x1b" in text and text.count("thinking · ") == 2
    raw = [c for c in text if c in hostile.FORBIDDEN]
    assert raw == [], [hex(ord(c)) for c in raw]
    for link in page.query_selector_all("#items a"):
        assert link.get_attribute("href").startswith(("http:", "https:", "mailto:"))
    assert page.query_selector("#items script, #items img, #items iframe") is None
    assert page.evaluate("window.__pwned") is None
    assert requested and [u for u in requested if not u.startswith(site["base"] + "/")] == []
