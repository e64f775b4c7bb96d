"""The command line and rewinds (issue #14, the README's rewind section): `show` shows the live
conversation; `show --raw`, `tail` and the HTML export show what a rewind cut, marked
as rewound, never hidden; `stats` counts rewinds and the messages they cut."""

from __future__ import annotations

import json

import pytest

from llm_agent_session import Session, user_message


@pytest.fixture
def rewound(tmp_path):
    path = str(tmp_path / "rw.jsonl")
    with Session.create(path, {"agent": "rewind-test"}) as s:
        keep = s.append_message(user_message("KEPT-QUESTION"))
        gone = [s.append_message(user_message("TAKEN-BACK-ONE")), s.append_message(user_message("TAKEN-BACK-TWO"))]
        rid = s.append_rewind(keep)
        after = s.append_message(user_message("ASKED-INSTEAD"))
    return path, keep, gone, rid, after


def test_show_is_the_live_conversation(cli, rewound):
    path, *_ = rewound
    r = cli("show", path)
    assert r.returncode == 0, r.stderr
    assert "KEPT-QUESTION" in r.stdout and "ASKED-INSTEAD" in r.stdout
    assert "TAKEN-BACK" not in r.stdout


def test_show_raw_marks_what_a_rewind_cut(cli, rewound):
    path, keep, gone, rid, after = rewound
    r = cli("show", "--raw", path)
    assert r.returncode == 0, r.stderr
    marked = [line for line in r.stdout.splitlines() if f"rewound by {rid}" in line]
    assert len(marked) == 2 and all(any(g in line for g in gone) for line in marked)
    assert "TAKEN-BACK-ONE" in r.stdout  # shown, not hidden
    assert f"back to {keep}" not in r.stdout or True  # the raw view prints payloads as JSON
    assert '"to-id": "' + keep + '"' in r.stdout


def test_tail_marks_what_a_rewind_cut(cli, rewound):
    path, keep, gone, rid, after = rewound
    r = cli("tail", "-n", "10", path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for g in gone:
        [line] = [x for x in lines if x.rstrip().endswith(g)]
        assert f"[rewound by {rid}]" in line and "TAKEN-BACK" in line
    [line] = [x for x in lines if x.rstrip().endswith(after)]
    assert "rewound" not in line
    [line] = [x for x in lines if x.rstrip().endswith(rid)]
    assert f"back to {keep}" in line


def test_html_export_keeps_rewound_messages_marked(cli, rewound, tmp_path):
    path, keep, gone, rid, after = rewound
    out = tmp_path / "page.html"
    r = cli("export", path, "--format", "html", "-o", str(out))
    assert r.returncode == 0, r.stderr
    page = out.read_text()
    assert page.count('class="msg role-user rewound"') == 2
    assert "TAKEN-BACK-ONE" in page and "TAKEN-BACK-TWO" in page and f"Rewound by {rid}" in page
    # the rewound group sits after the message the conversation went back to, before what followed
    assert page.index("KEPT-QUESTION") < page.index("TAKEN-BACK-ONE") < page.index("ASKED-INSTEAD")


def test_stats_counts_rewinds(cli, rewound):
    path, *_ = rewound
    r = cli("stats", "--json", path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["rewinds"] == {"count": 1, "rewound_messages": 2}
    text = cli("stats", path).stdout
    assert "rewinds" in text and "2 message(s) rewound" in text
