"""The value types of the Python API: Message (and its helpers), Event, PendingToolOperation,
and the read-only lists and dicts that a session's own Messages hold."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, NoReturn, Optional, Tuple, Union

from .canonical import copy_json, rebuild_json

# The message keys (docs/FORMAT.md, `message`), in the order to_dict writes them (the
# serialiser sorts anyway).
MESSAGE_KEYS: Tuple[str, ...] = (
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "sticky",
    "sysprompt",
    "depth",
)
_MESSAGE_KEY_SET = frozenset(MESSAGE_KEYS)


def message_extras(payload: Mapping[str, Any]) -> Dict[str, Any]:
    """What a message line's payload (or an ``extra`` mapping) holds beside the message
    keys, which belong to the message alone (docs/FORMAT.md, ``message``). A new dict;
    the values are shared."""
    return {k: v for k, v in payload.items() if k not in _MESSAGE_KEY_SET}


def marks_sticky(sticky: Any, sysprompt: Any, depth: Any) -> bool:
    """The stickiness rule (docs/FORMAT.md, ``message``), for a Message and for a message
    line's payload alike: ``sticky`` or ``sysprompt`` is true, or ``depth`` is set.
    Compaction keeps such a message."""
    return sticky is True or sysprompt is True or depth is not None


def payload_marks_sticky(payload: Mapping[str, Any]) -> bool:
    """``marks_sticky`` of a message line's payload (absent keys: not set), as
    ``Message.from_dict(payload).is_sticky`` says without building the Message."""
    get = payload.get
    return marks_sticky(get("sticky"), get("sysprompt"), get("depth"))


def model_named(type_: str, payload: Any) -> Optional[str]:
    """The model an envelope names: a message's string ``model`` extra, or the first
    ``["model", <string>]`` of a run context's ``facts``; None for anything else. Where
    a meta names no model (an import's), readers take the first one named."""
    if not isinstance(payload, dict):
        return None
    if type_ == "message":
        model = payload.get("model")
        return model if isinstance(model, str) else None
    if type_ != "run-context":
        return None
    facts = payload.get("facts")
    for fact in facts if isinstance(facts, list) else ():
        if isinstance(fact, list) and len(fact) == 2 and fact[0] == "model" and isinstance(fact[1], str):
            return fact[1]
    return None


def _read_only(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(
        f"this {type(self).__bases__[0].__name__} belongs to a session's Message, which never "
        "changes; edit a copy: Message.to_dict() gives one of plain lists and dicts"
    )


class FrozenList(list):  # type: ignore[type-arg]
    """A list that refuses every change: the lists inside a session's own Messages
    (``content`` parts, ``tool_calls``), so that what ``Session.messages`` hands out can
    never change the session's state. Equal to a list of the same items; serialises,
    copies and pickles as a plain list (``copy.deepcopy`` and ``to_dict`` give plain ones)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only
    append = extend = insert = pop = remove = clear = sort = reverse = _read_only

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (list, (list(self),))


class FrozenDict(dict):  # type: ignore[type-arg]
    """A dict that refuses every change: the dicts inside a session's own Messages (see
    ``FrozenList``). Equal to a dict of the same items; copies and pickles as a plain dict."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _read_only
    pop = popitem = clear = update = setdefault = _read_only

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (dict, (dict(self),))


def freeze(value: Any) -> Any:
    """A deep copy of a JSON value whose lists and dicts refuse changes (tuples become
    FrozenLists); other values as they are. What a session keeps of a message's content
    and tool calls."""
    return rebuild_json(value, FrozenList, FrozenDict)


class _BuiltOnAccess:
    """A field the native core may leave to build on first access.

    Peek and load build Events (and peek its Messages) from their lines when asked;
    the payload of an Event and the content of a peek Message are most of a line and
    are built later still: the instance's `__dict__` then holds `_deferred_<name>`,
    whose `build()` runs once (ValueError if the file changed under an unlocked
    reader). A non-data descriptor is only reached when `__dict__` has no value, so
    every other instance reads its field at plain attribute speed; equality, repr,
    copies, pickles and dataclass helpers all read the attribute and see the value.
    """

    def __init__(self, default: Any = dataclasses.MISSING) -> None:
        self.default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: Optional[type] = None) -> Any:
        if instance is None:  # the class's own default (dataclasses asks this way)
            if self.default is dataclasses.MISSING:
                raise AttributeError(self.name)
            return self.default
        fields = instance.__dict__
        source = fields.get("_deferred_" + self.name)
        if source is None:
            raise AttributeError(f"{type(instance).__name__!r} object has no attribute {self.name!r}")
        built = source.build()
        fields[self.name] = built
        fields.pop("_deferred_" + self.name, None)
        return built


def _built_on_access(default: Any = dataclasses.MISSING) -> Any:
    """A dataclass field default that is a `_BuiltOnAccess` (typed as the field's type)."""
    return _BuiltOnAccess(default)


@dataclass(frozen=True)
class Message:
    """One conversation message, in the OpenAI chat shape; immutable and equal by value.

    ``role`` ("system", "user", "assistant", "tool", ...); ``content`` (a string, a
    list of content parts, or None); ``tool_calls`` (an assistant's calls:
    ``[{"id", "type": "function", "function": {"name", "arguments"}}]``);
    ``tool_call_id`` (the call a tool message answers); ``name``. ``sticky``,
    ``sysprompt`` and ``depth`` mark a message that compaction keeps (``is_sticky``).
    ``to_dict()`` gives the chat-completions form (unset keys left out).
    """

    role: str
    content: Any = _built_on_access(None)
    tool_calls: Optional[List[Any]] = None
    tool_call_id: Optional[str] = None
    name: Optional[str] = None
    sticky: bool = False
    sysprompt: bool = False
    depth: Optional[int] = None

    # Keyword-only after `content`.
    def __init__(
        self,
        role: str,
        content: Any = None,
        *,
        tool_calls: Optional[List[Any]] = None,
        tool_call_id: Optional[str] = None,
        name: Optional[str] = None,
        sticky: bool = False,
        sysprompt: bool = False,
        depth: Optional[int] = None,
    ) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "role", role)
        setattr_(self, "content", content)
        setattr_(self, "tool_calls", tool_calls)
        setattr_(self, "tool_call_id", tool_call_id)
        setattr_(self, "name", name)
        setattr_(self, "sticky", sticky)
        setattr_(self, "sysprompt", sysprompt)
        setattr_(self, "depth", depth)

    @property
    def is_sticky(self) -> bool:
        """Kept through compaction: ``sticky`` or ``sysprompt`` is true, or ``depth`` is set."""
        return marks_sticky(self.sticky, self.sysprompt, self.depth)

    def to_dict(self) -> Dict[str, Any]:
        """The message as a new dict of its set keys (None and False left out): the
        chat-completions shape, plus ``sticky``/``sysprompt``/``depth`` when set. Its
        lists and dicts are new too (plain ones): editing them changes no Message."""
        d = self._fields()
        if "content" in d:
            d["content"] = copy_json(d["content"])
        if "tool_calls" in d:
            d["tool_calls"] = copy_json(d["tool_calls"])
        return d

    def _fields(self) -> Dict[str, Any]:
        """``to_dict()`` whose values are this message's own (not copied): for reading
        and serialising, never for handing on."""
        d: Dict[str, Any] = {"role": self.role}
        if self.content is not None:
            d["content"] = self.content
        if self.tool_calls is not None:
            d["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        if self.sticky:
            d["sticky"] = self.sticky
        if self.sysprompt:
            d["sysprompt"] = self.sysprompt
        if self.depth is not None:
            d["depth"] = self.depth
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Message":
        """A Message from a mapping in the shape of :meth:`to_dict`; unknown keys are ignored."""
        get = d.get
        return cls(
            get("role"),  # type: ignore[arg-type]
            get("content"),
            tool_calls=get("tool_calls"),
            tool_call_id=get("tool_call_id"),
            name=get("name"),
            sticky=get("sticky", False),
            sysprompt=get("sysprompt", False),
            depth=get("depth"),
        )

    def with_content(self, content: Any) -> "Message":
        """The same message with other content (what an elision does)."""
        new = object.__new__(Message)
        new.__dict__.update(self.__dict__)
        new.__dict__.pop("_deferred_content", None)
        object.__setattr__(new, "content", content)
        return new

    def _frozen(self) -> "Message":
        """This message, or an equal one whose content and tool calls are read-only
        copies (``freeze``): what a session keeps, so that nothing it hands out or is
        handed can change its state."""
        content, calls = self.content, self.tool_calls
        if calls is None and (content is None or type(content) is str):
            return self
        new = self.with_content(freeze(content))
        if calls is not None:
            object.__setattr__(new, "tool_calls", freeze(calls))
        return new

    def __getstate__(self) -> Dict[str, Any]:
        return {key: getattr(self, key) for key in MESSAGE_KEYS}


# Each message key with the value a Message has where its line leaves the key out (role:
# None, for the lines the lenient readers still list); the native core builds by this.
MESSAGE_DEFAULTS: Tuple[Tuple[str, Any], ...] = tuple((key, getattr(Message, key, None)) for key in MESSAGE_KEYS)


MessageLike = Union[Message, Mapping[str, Any]]


def system_message(text: str) -> Message:
    """A system prompt: marked ``sysprompt``, so compaction keeps it."""
    return Message("system", text, sysprompt=True)


def user_message(content: Any) -> Message:
    """A user message (`content`: a string or a list of content parts)."""
    return Message("user", content)


def assistant_message(content: Any = None, tool_calls: Optional[List[Any]] = None) -> Message:
    """An assistant message: its text (None when it only calls tools) and its tool calls,
    in the OpenAI shape (each answered later by a ``tool_message`` with the call's id)."""
    return Message("assistant", content, tool_calls=tool_calls)


def tool_message(tool_call_id: str, content: Any) -> Message:
    """The result of the tool call `tool_call_id`, as the model is shown it."""
    return Message("tool", content, tool_call_id=tool_call_id)


@dataclass(frozen=True)
class Event:
    """One envelope (one line) as read from the file, unknown types included.

    ``id``, ``type`` and ``ts`` are built at once; ``payload`` (a dict, most of the line)
    on the native core when first read, from the line read again: ValueError then if
    the file was cut short or rewritten in place since it was listed.
    """

    id: str
    type: str
    ts: str
    v: int
    payload: Dict[str, Any] = _built_on_access()

    def __getstate__(self) -> Dict[str, Any]:
        return {"id": self.id, "type": self.type, "ts": self.ts, "v": self.v, "payload": self.payload}


@dataclass(frozen=True)
class PendingToolOperation:
    """A ``tool-dispatched`` operation without a ``tool-settled``.

    ``op_id`` (for ``Session.append_tool_settled``), the ``call_id``, ``tool`` and
    ``arguments`` it was dispatched with, their ``arguments_digest``, the
    ``idempotency``, ``run_id`` and ``round`` given then, and ``dispatched_at`` (its
    timestamp).

    ``state`` is ``"dispatched"`` (may or may not have run) or ``"result-recorded"``
    (a tool message with its call id was written after it; only the settle is missing).
    """

    op_id: str
    call_id: str
    tool: str
    arguments: Any
    arguments_digest: str
    idempotency: Optional[str]
    run_id: Optional[str]
    round: Optional[int]
    dispatched_at: str
    state: str
