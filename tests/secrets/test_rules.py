"""The rules on single texts: each built-in rule finds its seed wherever people write
it, and the usual look-alikes of a clean transcript are left alone; the marker a
redaction writes is never a finding; allow-lists and the configuration file."""

from __future__ import annotations

import json
import random

import pytest

from benches import secret_corpus
from llm_agent_session.secrets import BUILTIN, ConfigError, load_rules, marker
from llm_agent_session.secrets.match import Rules


@pytest.fixture(autouse=True)
def once(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: the matcher is the same Python on both cores")


def names(rules, text):
    return [(rules.rules[h.rule].name, text[h.start:h.end] if not h.base64 else h.secret) for h in rules.find(text)]


def test_every_builtin_rule_has_a_seed_and_finds_it(rules, seeds):
    assert sorted(s.rule for s in seeds) == sorted(r.name for r in BUILTIN)
    for seed in seeds:
        assert names(rules, seed.text) == [(seed.rule, seed.secret)], seed.rule


@pytest.mark.parametrize("wrap", [
    "{}",
    "prefix text {} suffix",
    '"{}"',
    "'{}'",
    "({})",
    "value: {}\n",
])
def test_a_seed_is_found_whatever_surrounds_it(rules, seeds, wrap):
    for seed in seeds:
        text = wrap.format(seed.text)
        assert (seed.rule, seed.secret) in names(rules, text), (seed.rule, wrap)


def test_a_seed_is_found_in_base64(rules, seeds):
    import base64

    for seed in seeds:
        encoded = base64.b64encode(seed.text.encode()).decode()
        found = rules.find(f"echo {encoded} | base64 -d")
        assert [(rules.rules[h.rule].name, h.secret, h.base64) for h in found][:1] == [(seed.rule, seed.secret, True)]


CLEAN = [
    "12 passed, 1 failed in 4.52s",
    "the password must be at least 8 characters",
    "password = None",
    "password: str",
    "if password == user_input:",
    "token_count = 4096; max_tokens=1024",
    '"input_tokens": 1234, "output_tokens": 56',
    "keyboard shortcuts: ctrl-k",
    "cache_key = f'{user}:{page}'",
    "api_key = os.environ['OPENAI_API_KEY']",
    "API_KEY=${API_KEY}",
    "password=<your password here>",
    "token = get_token()",
    "secret_file=/run/secrets/db_password",
    "auth_url=https://auth.example.com/oauth2/token",
    "postgres://user:password@localhost:5432/db",
    "https://user:${PASS}@example.com",
    "see https://example.com/a://b and mailto:x@y.z",
    "sk-learn is a library; task-1234567890abcdef1234567890abcdef done",
    "AKIAIOSFODNN7EXAMPLE is the documentation's example",
    "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----",
    "sha256:3f9a1c2b7d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8",
    "call_17a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6",
    "Bearer token auth is described in RFC 6750",
    "Authorization: Bearer $TOKEN",
    "hf_hub_download(repo_id='x')",
    "ghp_ is GitHub's prefix for personal access tokens",
    "key-value store",
    "eyJ is how base64 of '{\"' starts",
    "/home/dev/project/src/module/submodule/file.py",
]


@pytest.mark.parametrize("text", CLEAN)
def test_look_alikes_are_not_secrets(rules, text):
    assert names(rules, text) == []


def test_a_marker_is_never_a_finding(rules):
    for rule in BUILTIN:
        text = f"password={marker(rule.name, '0123456789ab')} and {marker(rule.name, 'ffffffffffff')}"
        assert names(rules, text) == [], rule.name


def test_an_assignment_as_a_json_member_is_found(rules):
    assert [(rules.rules[h.rule].name, h.secret) for h in rules.member("db_password", "Tr0ub4dor99")] == [
        ("password-assignment", "Tr0ub4dor99")]
    assert rules.member("description", "Tr0ub4dor99") == []
    assert rules.member("password", "hunter") == []  # no digit
    assert rules.member("password hint", "Tr0ub4dor99") == []  # not a name


def test_where_two_rules_find_the_same_span_the_earlier_names_it(rules, seeds):
    token = next(s.secret for s in seeds if s.rule == "github-token")
    assert names(rules, f"GITHUB_TOKEN={token}") == [("github-token", token)]


def test_allowed_values_and_fingerprints_are_left_out(seeds, fingerprints):
    seed = next(s for s in seeds if s.rule == "github-token")
    allowed = Rules(BUILTIN, allow=[seed.secret])
    assert allowed.find(seed.text) == []
    from llm_agent_session.secrets import redact

    value, found = redact(seed.text, Rules(BUILTIN, allow_fingerprints=[fingerprints(seed.secret.encode())]))
    assert (value, found) == (seed.text, [])


def test_the_configuration_file_adds_rules_allows_and_disables(tmp_path, rules):
    config = tmp_path / "secrets.json"
    config.write_text(json.dumps({
        "rules": [{"name": "acme-token", "prefix": "acme_", "body": "A-Za-z0-9", "min": 20, "max": 20},
                  {"name": "acme-secret", "assignment": ["acme_sauce"], "min": 10}],
        "allow": ["Tr0ub4dor99"],
        "disable": ["jwt"],
    }))
    mine = load_rules(str(config))
    token = "acme_" + "aB3" * 6 + "xy"
    assert names(mine, f"use {token} now") == [("acme-token", token)]
    assert names(mine, "ACME_SAUCE=zZ9q8x7w6v5u") == [("acme-secret", "zZ9q8x7w6v5u")]
    assert names(mine, "DB_PASSWORD=Tr0ub4dor99") == []
    assert "jwt" not in mine.names() and "jwt" in rules.names()


@pytest.mark.parametrize("content, says", [
    ("[]", "must be a JSON object"),
    ('{"rulez": []}', "unknown key 'rulez'"),
    ('{"disable": ["nope"]}', "no built-in rule"),
    ('{"rules": [{"name": "x"}]}', "has \\\"prefix\\\" or \\\"assignment\\\""),
    ('{"rules": [{"name": "Bad Name", "prefix": "abc_"}]}', "lowercase letters and digits"),
    ('{"rules": [{"name": "short", "prefix": "ab"}]}', "shorter than 3 bytes"),
    ('{"rules": [{"name": "r", "prefix": "abc_", "body": "z-a"}]}', "not a range"),
    ('{"allow": "x"}', "list of strings"),
    ("{not json", "cannot read"),
])
def test_a_bad_configuration_file_says_where_and_why(tmp_path, content, says):
    config = tmp_path / "secrets.json"
    config.write_text(content)
    with pytest.raises(ConfigError) as e:
        load_rules(str(config))
    assert str(config) in str(e.value) and says.replace("\\", "") in str(e.value)


def test_fingerprints_are_keyed_per_account(tmp_path, monkeypatch):
    from llm_agent_session.secrets import Fingerprints
    from llm_agent_session.secrets.config import fingerprint_key
    import os
    import stat

    a, b = tmp_path / "a", tmp_path / "b"
    key = fingerprint_key(str(a))
    assert fingerprint_key(str(a)) == key and len(key) == 32
    assert stat.S_IMODE(os.stat(a / "fingerprint.key").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(a).st_mode) == 0o700
    one, two = Fingerprints(key), Fingerprints(fingerprint_key(str(b)))
    assert one(b"hunter22") == one(b"hunter22") != two(b"hunter22")
    import hashlib

    assert one(b"hunter22") != hashlib.sha256(b"hunter22").hexdigest()[:12]


def test_seeds_are_made_at_run_time(seeds):
    again = secret_corpus.seeds(random.Random(7))
    other = secret_corpus.seeds(random.Random(8))
    assert [s.secret for s in again] == [s.secret for s in seeds]
    assert all(a.secret != b.secret for a, b in zip(seeds, other))
