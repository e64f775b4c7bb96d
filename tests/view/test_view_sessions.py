"""Imported sessions in a real browser (issue #35): the shelf reads as sessions (titles,
projects as groups, short ids, the source's times, subagents nested under their parent).
The transcripts are the importers' fixtures (the real line shapes of Claude Code and
Codex), imported; Chromium by Playwright as in test_view_browser.py.
"""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.slow

from browser_support import a_page, browser, serving, wait_until  # noqa: E402,F401
from view_support import build_imported  # noqa: E402

from llm_agent_session import Session, user_message  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A server over sessions imported from Claude Code and Codex, a native transcript in
    another project, and one that names no project."""
    top = tmp_path_factory.mktemp("sessions")
    root = str(top / "shelf")
    imported = build_imported(root, str(top / "sources"))
    with Session.create(os.path.join(root, "native", "other.jsonl"), {"title": "in another project",
                                                                      "cwd": "/srv/other/app"}) as s:
        s.append_message(user_message("hello"))
    with Session.create(os.path.join(root, "native", "nowhere.jsonl"), {"title": "nowhere"}) as s:
        s.append_message(user_message("hello"))
    with serving(root) as (base, token):
        yield {"base": base, "token": token, "imported": imported, "root": root}


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
