"""What a secret looks like: the rules, each one declarative shape, and the built-in table.

Every rule starts from a *keyword*, a literal found in the text (case-insensitively
where the rule says so), and decides at that spot: so a text without any keyword costs
one search, and each kind of rule is a few lines of byte logic that the two cores
implement alike, with no regular-expression engine whose dialects could differ. The
kinds:

* :class:`Token`: a fixed prefix (``ghp_``, ``AKIA``, ``sk-ant-``) and a body of a
  character class and a length range, with a boundary before it; optionally a part
  before the prefix (a Telegram bot's number), a gap of spaces after it (``Bearer``),
  and checks on the body (a digit, Shannon entropy, a substring, a JWT's three parts).
* :class:`Assignment`: a name holding a keyword (``DB_PASSWORD``, ``api_key``), an
  operator (``=``, ``:``, ``:=``, ``=>``), then a value that must look random enough;
  in JSON, an object member whose key is such a name and whose value is such a string.
* :class:`UrlPassword`: ``scheme://user:password@host``, the password.
* :class:`PrivateKey`: a PEM ``-----BEGIN ... PRIVATE KEY-----`` block.
* :class:`Literal`: an exact string the process knows is secret (a policy's).

A user's own rules are :class:`Token` and :class:`Assignment` rules read from a small
JSON file (``config.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import FrozenSet, Tuple, Union

#: A rule's name: lowercase letters and digits in dash-separated words (it is written in markers).
RULE_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")


def charset(spec: str) -> FrozenSet[str]:
    """The characters of a class written as in a regular expression's brackets, ASCII
    only: ``A-Za-z0-9_-`` (a ``-`` first or last is itself, ``\\`` takes the next
    character as it is). ValueError for anything else."""
    out = set()
    i, n = 0, len(spec)
    while i < n:
        c = spec[i]
        if c == "\\" and i + 1 < n:
            out.add(spec[i + 1])
            i += 2
            continue
        if i + 2 < n and spec[i + 1] == "-":
            lo, hi = c, spec[i + 2]
            if not (lo.isascii() and hi.isascii() and lo.isalnum() and hi.isalnum() and lo <= hi):
                raise ValueError(f"{spec!r}: {lo}-{hi} is not a range of ASCII letters or digits")
            out.update(chr(x) for x in range(ord(lo), ord(hi) + 1))
            i += 3
            continue
        out.add(c)
        i += 1
    if not out:
        raise ValueError("an empty character class")
    bad = [c for c in out if not (c.isascii() and c.isprintable() and c not in " \"'\\")]
    if bad:
        raise ValueError(f"{spec!r}: {bad[0]!r} cannot be part of a secret here "
                         "(printable ASCII only, no space, quote or backslash)")
    return frozenset(out)


ALNUM = charset("A-Za-z0-9")
#: The characters of a name an assignment's keyword sits in.
NAME_CHARS = charset("A-Za-z0-9_.-")
#: What an assigned value may be made of: no space, quote, backslash, bracket, comma or semicolon.
VALUE_CHARS = charset("A-Za-z0-9!#$%&*+./:=?@^_|~-")


@dataclass(frozen=True)
class Token:
    """A prefix and a body (see the module's docstring). The secret is the prefix, body
    and any part before the prefix; with ``secret_is_body`` the body alone (the prefix is
    a label: ``AccountKey=``, ``Bearer``)."""

    name: str
    family: str
    prefixes: Tuple[str, ...]
    body: FrozenSet[str]
    min: int
    max: int
    ignore_case: bool = False
    gap: int = 0  # spaces or tabs allowed between prefix and body
    secret_is_body: bool = False
    left: FrozenSet[str] = frozenset()  # a part before the prefix that belongs to the secret
    left_min: int = 0
    left_max: int = 0
    digit: bool = False  # the body must hold a digit
    letter: bool = False  # ... and a letter
    entropy: float = 0.0  # minimum Shannon entropy of the body, bits per character
    contains: str = ""  # the body must hold this
    shape: str = ""  # "jwt": three dot-separated parts, the first two JSON objects in base64url

    @property
    def keywords(self) -> Tuple[str, ...]:
        return self.prefixes


@dataclass(frozen=True)
class Assignment:
    """A name holding one of ``keywords`` (lowercase, matched ignoring ASCII case), an
    operator, and a value of ``value`` characters, ``min`` to ``max`` long, holding a
    letter and a digit and at least ``entropy`` bits per character (``names``: the
    keywords must make the whole name, not just be inside it)."""

    name: str
    family: str
    keywords: Tuple[str, ...]
    min: int
    max: int = 200
    entropy: float = 0.0
    value: FrozenSet[str] = VALUE_CHARS
    digit: bool = True
    letter: bool = True


@dataclass(frozen=True)
class UrlPassword:
    """``scheme://user:password@host``: the password, when it is not a placeholder. With
    ``schemes`` only those schemes (lowercase, a ``+driver`` suffix ignored)."""

    name: str
    family: str
    schemes: FrozenSet[str] = frozenset()

    keywords: Tuple[str, ...] = ("://",)


@dataclass(frozen=True)
class PrivateKey:
    """A PEM private key block, from ``-----BEGIN`` to its ``-----END`` line (or, where
    that is missing, the end of its body)."""

    name: str
    family: str

    keywords: Tuple[str, ...] = ("-----BEGIN ",)


@dataclass(frozen=True)
class Literal:
    """Exactly ``value`` (case as given), wherever it is."""

    name: str
    family: str
    value: str
    keywords: Tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "keywords", (self.value,))


Rule = Union[Token, Assignment, UrlPassword, PrivateKey, Literal]


def _token(name: str, family: str, prefixes: Union[str, Tuple[str, ...]], body: str, lo: int, hi: int,
           **kw: object) -> Token:
    return Token(name, family, (prefixes,) if isinstance(prefixes, str) else prefixes, charset(body), lo, hi,
                 **kw)  # type: ignore[arg-type]


_B64URL = "A-Za-z0-9_-"
_HEX = "0-9a-f"

DATABASE_SCHEMES = frozenset({
    "postgres", "postgresql", "mysql", "mariadb", "mongodb", "mongodb+srv", "redis", "rediss", "amqp",
    "amqps", "mssql", "sqlserver", "oracle", "clickhouse", "cockroachdb", "couchdb", "neo4j", "cassandra",
    "jdbc:postgresql", "jdbc:mysql",
})

#: The built-in rules, in order: where two find the same text, the earlier names it.
BUILTIN: Tuple[Rule, ...] = (
    PrivateKey("private-key", "private-key"),
    # Cloud providers.
    _token("aws-access-key-id", "cloud", ("AKIA", "ASIA", "ABIA", "ACCA"), "A-Z0-9", 16, 16, digit=True),
    _token("gcp-api-key", "cloud", "AIza", _B64URL, 35, 35),
    _token("gcp-oauth-client-secret", "cloud", "GOCSPX-", _B64URL, 28, 28),
    _token("azure-storage-key", "cloud", "AccountKey=", "A-Za-z0-9+/=", 86, 88, secret_is_body=True,
           digit=True),
    # Model providers.
    _token("anthropic-api-key", "model-provider", ("sk-ant-api03-", "sk-ant-admin01-"), _B64URL, 80, 120),
    _token("openrouter-api-key", "model-provider", "sk-or-v1-", _HEX, 64, 64),
    _token("openai-api-key", "model-provider", ("sk-proj-", "sk-svcacct-", "sk-admin-"), _B64URL, 40, 300,
           digit=True, letter=True),
    _token("sk-api-key", "model-provider", "sk-", "A-Za-z0-9", 32, 64, digit=True, letter=True, entropy=3.0),
    _token("groq-api-key", "model-provider", "gsk_", "A-Za-z0-9", 52, 52, digit=True),
    _token("xai-api-key", "model-provider", "xai-", "A-Za-z0-9", 80, 80, digit=True),
    _token("huggingface-token", "model-provider", "hf_", "A-Za-z", 34, 34, entropy=3.5),
    _token("replicate-api-token", "model-provider", "r8_", "A-Za-z0-9", 37, 37, digit=True),
    _token("perplexity-api-key", "model-provider", "pplx-", "A-Za-z0-9", 48, 48, digit=True),
    # Source hosts and package registries.
    _token("github-token", "source-host", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), "A-Za-z0-9", 36, 36,
           digit=True),
    _token("github-fine-grained-token", "source-host", "github_pat_", "A-Za-z0-9_", 82, 82),
    _token("gitlab-token", "source-host", ("glpat-", "gldt-", "glrt-"), "A-Za-z0-9_.-", 20, 64, digit=True),
    _token("bitbucket-app-password", "source-host", "ATBB", "A-Za-z0-9", 32, 64, digit=True),
    _token("npm-token", "source-host", "npm_", "A-Za-z0-9", 36, 36, digit=True),
    _token("pypi-token", "source-host", "pypi-AgEIcHlwaS5vcmc", _B64URL, 50, 300),
    # Payments.
    _token("stripe-secret-key", "payment", ("sk_live_", "sk_test_", "rk_live_", "rk_test_"), "A-Za-z0-9",
           24, 99, digit=True),
    _token("square-token", "payment", ("sq0atp-", "sq0csp-"), _B64URL, 22, 43),
    _token("shopify-token", "payment", ("shpat_", "shpss_", "shpca_", "shppa_"), "a-fA-F0-9", 32, 32),
    # Messaging.
    _token("slack-token", "messaging", ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-"),
           "A-Za-z0-9-", 20, 250, digit=True),
    _token("slack-webhook", "messaging", "hooks.slack.com/services/", "A-Za-z0-9/", 40, 80,
           secret_is_body=True),
    _token("discord-webhook", "messaging", ("discord.com/api/webhooks/", "discordapp.com/api/webhooks/"),
           "A-Za-z0-9/_-", 60, 120, secret_is_body=True),
    _token("telegram-bot-token", "messaging", ":AA", _B64URL, 33, 33, left=charset("0-9"), left_min=8,
           left_max=10),
    _token("sendgrid-api-key", "messaging", "SG.", "A-Za-z0-9_.-", 66, 66),
    _token("mailgun-api-key", "messaging", "key-", _HEX, 32, 32),
    # Tokens of any issuer.
    _token("jwt", "jwt", "eyJ", "A-Za-z0-9_.-", 30, 8192, shape="jwt"),
    _token("bearer-token", "generic", "bearer", "A-Za-z0-9._~+/=-", 20, 2048, ignore_case=True, gap=3,
           secret_is_body=True, digit=True, letter=True, entropy=3.0),
    # Database and other URLs with a password.
    UrlPassword("database-url-password", "database-url", DATABASE_SCHEMES),
    UrlPassword("url-password", "generic"),
    # Assignments, the most specific first.
    Assignment("aws-secret-access-key", "cloud", ("aws_secret", "secret_access_key", "secretaccesskey",
                                                 "aws-secret"),
               40, 40, value=charset("A-Za-z0-9+/")),
    Assignment("password-assignment", "generic", ("pass", "pwd"), 6, 200, entropy=2.0),
    Assignment("secret-assignment", "generic", ("secret", "token", "key", "auth", "credential"), 12, 200,
               entropy=3.0),
)

#: Every family a built-in rule belongs to.
FAMILIES = tuple(dict.fromkeys(r.family for r in BUILTIN))
