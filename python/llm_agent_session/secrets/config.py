"""The user's side of the rules: where the configuration lives, the fingerprint key, and
the small JSON file of extra rules and allowed values.

Both live in one directory: ``$LLM_AGENT_SESSION_CONFIG`` if set, else
``$XDG_CONFIG_HOME/llm-agent-session`` (``~/.config/llm-agent-session``; on Windows
``%APPDATA%\\llm-agent-session``).

* ``fingerprint.key``: 32 random bytes, made on first use (mode 0600, its directory 0700).
  A fingerprint is the first 12 hex digits of HMAC-SHA256 under this key of the secret's
  bytes: the same secret gets the same fingerprint in every report and marker made on
  this account, while nobody without the key can test guesses against it (a plain hash
  of a short password is a dictionary look-up away). A configuration directory, not a
  cache: markers written months ago keep meaning the same secret.
* ``secrets.json`` (optional)::

      {"rules": [{"name": "acme-token", "prefix": ["acme_"], "body": "A-Za-z0-9", "min": 32, "max": 40},
                 {"name": "acme-secret", "assignment": ["acme_secret"], "min": 10}],
       "allow": ["a value that is not a secret"],
       "allow_fingerprints": ["3f9a1c2b7d4e"],
       "disable": ["jwt"]}
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

from .match import Rules
from .rules import BUILTIN, Assignment, Rule, Token, charset

ENV_DIR = "LLM_AGENT_SESSION_CONFIG"
KEY_FILE = "fingerprint.key"
CONFIG_FILE = "secrets.json"
FINGERPRINT_DIGITS = 12


def config_dir() -> str:
    """The directory of the key and the configuration file (see the module's docstring)."""
    given = os.environ.get(ENV_DIR)
    if given:
        return given
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return os.path.join(os.environ["APPDATA"], "llm-agent-session")
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "llm-agent-session")


class Fingerprints:
    """The fingerprint of a secret's bytes: HMAC-SHA256 under `key`, 12 hex digits."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("a fingerprint key of at least 16 bytes")
        self._key = key

    def __call__(self, secret: bytes) -> str:
        return hmac.new(self._key, secret, hashlib.sha256).hexdigest()[:FINGERPRINT_DIGITS]

    @classmethod
    def default(cls) -> "Fingerprints":
        """Under the account's key (read once per configuration directory)."""
        directory = config_dir()
        made = _DEFAULTS.get(directory)
        if made is None:
            made = _DEFAULTS[directory] = cls(fingerprint_key(directory))
        return made


_DEFAULTS: Dict[str, Fingerprints] = {}


def fingerprint_key(directory: Optional[str] = None) -> bytes:
    """The account's key, made (0600, exclusively, so two processes agree) on first use.
    OSError with what to do when it can be neither read nor made."""
    directory = directory or config_dir()
    path = os.path.join(directory, KEY_FILE)
    for _ in range(3):
        try:
            with open(path, "rb") as fh:
                key = fh.read()
            if len(key) >= 16:
                return key
            raise OSError(errno.EINVAL, f"{path} holds {len(key)} bytes, not a fingerprint key; delete it "
                                        "(a new one is made) or restore the old one", path)
        except FileNotFoundError:
            pass
        from .._files import make_private_dirs

        make_private_dirs(directory)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue  # another process made it meanwhile: read theirs
        try:
            os.write(fd, os.urandom(32))
            os.fsync(fd)
        finally:
            os.close(fd)
    with open(path, "rb") as fh:
        return fh.read()


class ConfigError(ValueError):
    """The configuration file is not what it should be: the message says where and why."""


def load_rules(path: Optional[str] = None, extra: Sequence[Rule] = ()) -> Rules:
    """The built-in rules with the configuration file's changes (`path`, else the one in
    :func:`config_dir` if it exists), then `extra`. ConfigError for a bad file."""
    if path is None:
        default = os.path.join(config_dir(), CONFIG_FILE)
        path = default if os.path.exists(default) else None
    data: Dict[str, Any] = {}
    if path is not None:
        try:
            with open(path, "rb") as fh:
                data = json.loads(fh.read().decode("utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise ConfigError(f"{path}: cannot read the secrets configuration ({e})") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the secrets configuration must be a JSON object")
        unknown = sorted(set(data) - {"rules", "allow", "allow_fingerprints", "disable"})
        if unknown:
            raise ConfigError(f"{path}: unknown key {unknown[0]!r} (known: rules, allow, allow_fingerprints, disable)")
    disable = _strings(data, "disable", path)
    names = {r.name for r in BUILTIN}
    for name in disable:
        if name not in names:
            raise ConfigError(f"{path}: disable names {name!r}, which is no built-in rule")
    rules: List[Rule] = [r for r in BUILTIN if r.name not in disable]
    for n, spec in enumerate(data.get("rules", [])):
        rules.append(_rule(spec, f"{path}: rules[{n}]"))
    rules.extend(extra)
    try:
        return Rules(rules, _strings(data, "allow", path), _strings(data, "allow_fingerprints", path))
    except ValueError as e:
        raise ConfigError(f"{path}: {e}") from None


def _strings(data: Dict[str, Any], key: str, path: Optional[str]) -> List[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: {key} must be a list of strings")
    return value


def _rule(spec: Any, where: str) -> Rule:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: a rule is an object")
    try:
        name = spec["name"]
        lo, hi = int(spec.get("min", 8)), int(spec.get("max", 200))
        if "prefix" in spec:
            prefixes = spec["prefix"]
            if isinstance(prefixes, str):
                prefixes = [prefixes]
            unknown = set(spec) - {"name", "prefix", "body", "min", "max", "ignore_case", "entropy", "family"}
            if unknown:
                raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} in a prefix rule")
            return Token(name, spec.get("family", "custom"), tuple(prefixes), charset(spec.get("body", "A-Za-z0-9")),
                         lo, hi, ignore_case=bool(spec.get("ignore_case", False)),
                         entropy=float(spec.get("entropy", 0.0)))
        if "assignment" in spec:
            unknown = set(spec) - {"name", "assignment", "min", "max", "entropy", "family"}
            if unknown:
                raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r} in an assignment rule")
            keywords = tuple(k.lower() for k in spec["assignment"])
            return Assignment(name, spec.get("family", "custom"), keywords, lo, hi,
                              entropy=float(spec.get("entropy", 0.0)))
    except ConfigError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ConfigError(f"{where}: {e}; a rule is {{\"name\", \"prefix\", \"body\", \"min\", \"max\"}} "
                          "or {\"name\", \"assignment\", \"min\"}") from None
    raise ConfigError(f"{where}: a rule has \"prefix\" or \"assignment\"")


_default: Optional[Rules] = None


def default_rules() -> Rules:
    """The built-in rules with the user's configuration file, read once per process."""
    global _default
    if _default is None:
        _default = load_rules()
    return _default
