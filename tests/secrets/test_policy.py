"""The write-time policy: a run (and an import) under it leaves no seeded secret on disk,
the file still passes ``check``, its digests verify, a load gives the conversation with
markers in place of the secrets, and the live session keeps what it was given."""

from __future__ import annotations

import base64
import json
import os
import random

import pytest

from benches import secret_corpus
from tests.secrets.digests import problems, sha
from llm_agent_session import Session, user_message
from llm_agent_session.secrets import MARKER, Policy
from llm_agent_session.verdict import Kind, verdict


def forms(secret):
    """A secret as bytes, as a JSON string writes it, and in base64."""
    return {secret.encode(), json.dumps(secret, ensure_ascii=False)[1:-1].encode(), base64.b64encode(secret.encode())}


def on_disk(root, secrets):
    """The secrets found in any file under `root`, in any of their `forms`."""
    found = set()
    for folder, _, files in os.walk(root):
        for name in files:
            data = open(os.path.join(folder, name), "rb").read()
            found.update(s for s in secrets if any(f in data for f in forms(s)))
    return found


def test_a_run_under_a_policy_leaves_no_secret_on_disk(tmp_path):
    path = str(tmp_path / "runs" / "seeded.jsonl")
    placed = secret_corpus.write_seeded(path, random.Random(1), filler=1, policy=Policy())
    secrets = {p.seed.secret for p, _ in placed}
    assert on_disk(tmp_path, secrets) == set()
    assert verdict(path).kind is Kind.CLEAN
    assert problems(path) == []
    with Session.load(path) as s:
        texts = json.dumps([m.to_dict() for m in s.messages], ensure_ascii=False)
    assert len(MARKER.findall(texts)) >= len(placed)
    for m in Session.load(path).messages:
        for call in m.tool_calls or []:
            json.loads(call["function"]["arguments"])  # still JSON for the provider's API


def test_without_a_policy_the_same_run_keeps_its_secrets(tmp_path):
    path = str(tmp_path / "seeded.jsonl")
    placed = secret_corpus.write_seeded(path, random.Random(1), filler=0, forms=("tool-output",))
    assert on_disk(tmp_path, {p.seed.secret for p, _ in placed}) == {p.seed.secret for p, _ in placed}


def test_the_live_session_keeps_what_it_was_given_and_syncs_its_own_list(tmp_path, seeds):
    path = str(tmp_path / "run.jsonl")
    seed = next(s for s in seeds if s.rule == "aws-access-key-id")
    given = [user_message("read .env"), {"role": "assistant", "content": seed.text}]
    with Session.create(path, {"agent": "t", "note": seed.text}, redaction=Policy()) as s:
        s.sync_messages(given)
        assert s.messages[1].content == seed.text and s.meta["note"] == seed.text
        s.sync_messages(given + [user_message("thanks")])  # the caller's own list: no conflict
        assert len(s.messages) == 3
    data = open(path, "rb").read()
    assert seed.secret.encode() not in data
    with Session.load(path, redaction=Policy()) as s:
        masked = s.messages[1].content
        assert seed.secret not in masked and MARKER.search(masked)
        assert masked.startswith("export AWS_ACCESS_KEY_ID=«redacted:aws-access-key-id:")
        s.sync_messages([m.to_dict() for m in s.messages] + [user_message("again")])
        assert len(s.messages) == 4


def test_known_values_are_masked_wherever_they_are(tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLOY_PASSPHRASE", "correct horse battery staple")
    monkeypatch.delenv("NOT_SET_HERE", raising=False)
    policy = Policy(env=["DEPLOY_PASSPHRASE", "NOT_SET_HERE"], values=["internal-codename-zebra"])
    path = str(tmp_path / "run.jsonl")
    with Session.create(path, {}, redaction=policy) as s:
        s.append_message(user_message("the passphrase is correct horse battery staple, right?"))
        s.append_tool_dispatched("c1", "bash", {"cmd": "deploy --project internal-codename-zebra"})
        s.append_message(user_message(base64.b64encode(b"internal-codename-zebra").decode()))
    data = open(path, "rb").read()
    assert b"correct horse" not in data and b"zebra" not in data
    assert b"redacted:env-deploy-passphrase:" in data and b"redacted:known-secret:" in data
    assert problems(path) == []


@pytest.mark.parametrize("kw", [{"values": ["short"]}, {"env": ["SHORT_ONE"]}])
def test_a_known_value_too_short_to_mask_safely_is_refused(monkeypatch, kw):
    monkeypatch.setenv("SHORT_ONE", "abc")
    with pytest.raises(ValueError) as e:
        Policy(**kw)
    assert "abc" not in str(e.value) and "shorter than 8" in str(e.value)


def test_digests_follow_the_masked_text(tmp_path, seeds):
    token = next(s for s in seeds if s.rule == "github-token")
    path = str(tmp_path / "run.jsonl")
    section = f"environment:\n{token.text}\n"
    with Session.create(path, {}, redaction=Policy()) as s:
        s.append_run_context({"env": section, "plain": "nothing secret"})
        s.append_run_context({"env": section})  # a reference to the first line's text
        s.append_message({"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]})
        op = s.append_tool_dispatched("c1", "bash", {"cmd": f"echo {token.secret}"})
        result = f"ok {token.secret}"
        s.append_message({"role": "tool", "tool_call_id": "c1", "content": result})
        s.append_tool_settled(op, "completed", result_digest=sha(result))
        assert s.run_context_section(sha(section)) == section  # the live session's own digests
    assert token.secret.encode() not in open(path, "rb").read()
    assert problems(path) == []
    with Session.load(path) as s:
        lines = [json.loads(x) for x in open(path, "rb")]
        first, second = lines[1]["payload"]["sections"], lines[2]["payload"]["sections"]
        assert second[0]["digest"] == first[0]["digest"] != sha(section)
        assert "«redacted:github-token:" in s.run_context_section(first[0]["digest"])


def test_an_import_under_a_policy_leaves_no_secret_and_does_not_churn(tmp_path):
    from llm_agent_session.importers import claude_code

    data, placed = secret_corpus.claude_code_seeded(random.Random(4))
    src = tmp_path / "src" / "session.jsonl"
    src.parent.mkdir()
    src.write_bytes(data)
    out = tmp_path / "out" / "session.jsonl"
    report = claude_code.import_transcript(str(src), str(out), redaction=Policy())
    assert report["status"] == "imported"
    assert on_disk(tmp_path / "out", {p.seed.secret for p, _ in placed}) == set()
    assert verdict(str(out)).kind is Kind.CLEAN and problems(str(out), results=False) == []
    size = os.path.getsize(out)
    again = claude_code.import_transcript(str(src), str(out), redaction=Policy())
    assert again["status"] == "unchanged" and os.path.getsize(out) == size
    last = json.loads(data.splitlines()[-1])
    more = dict(last, parentUuid=last["uuid"], uuid="u-extra", type="user",
                message={"role": "user", "content": "and now rotate " + placed[-1][0].seed.text})
    with open(src, "ab") as fh:  # the session goes on
        fh.write(json.dumps(more).encode() + b"\n")
    grown = claude_code.import_transcript(str(src), str(out), redaction=Policy())
    assert grown["status"] == "appended", grown.get("error")
    assert on_disk(tmp_path / "out", {p.seed.secret for p, _ in placed}) == set()
    with Session.load(str(out)) as s:
        assert not any(e.type == "rewind" for e in s.events)  # the masked messages were not redone


def test_a_tree_import_in_worker_processes_takes_the_policy(tmp_path):
    from llm_agent_session.importers import codex

    data, placed = secret_corpus.codex_seeded(random.Random(6), forms=("tool-output", "split"))
    for n in range(2):
        (tmp_path / "src" / f"d{n}").mkdir(parents=True)
        (tmp_path / "src" / f"d{n}" / f"rollout-{n}.jsonl").write_bytes(data)
    policy = Policy()
    policy.rules.names()  # its byte scan made in this process first: the workers make their own
    from llm_agent_session.secrets.scan import prefilter

    prefilter(policy.rules)
    reports = codex.import_tree(str(tmp_path / "src"), str(tmp_path / "out"), workers=2, redaction=policy)
    assert [r["status"] for r in reports] == ["imported", "imported"]
    assert on_disk(tmp_path / "out", {p.seed.secret for p, _ in placed}) == set()


def test_the_side_index_of_a_transcript_written_under_a_policy_holds_no_secret(tmp_path, monkeypatch):
    """The side index (a cache beside the user's other caches, with the fold's checkpoint)
    is made from the file's bytes: a load and the session's refresh write none of them."""
    from llm_agent_session import _cache, _index

    monkeypatch.setenv(_cache.ENV_VAR, str(tmp_path / "cache"))
    monkeypatch.setattr(_index, "AUTO_MIN_BYTES", 0)  # every load writes one
    path = str(tmp_path / "runs" / "seeded.jsonl")
    placed = secret_corpus.write_seeded(path, random.Random(2), filler=0, policy=Policy())
    secrets = {p.seed.secret for p, _ in placed}
    with Session.load(path, redaction=Policy()) as s:
        s.append_message({"role": "tool", "tool_call_id": "call_0001", "content": placed[0][0].seed.text})
    _index.flush()
    with Session.load(path) as s:  # through the index, with the appended line
        assert s._index_used != "none"
    _index.flush()
    assert os.listdir(tmp_path / "cache") and on_disk(tmp_path, secrets) == set()
