"""Tools for rollouts: any langchain-core ``BaseTool`` or typed function, their schemas, and safe calls.

:func:`as_tool` turns a langchain-core ``BaseTool`` (``@tool``, ``StructuredTool``, a
retriever tool) or a plain typed Python function into a :class:`Tool` whose JSON schema comes
from the object itself (langchain-core's ``convert_to_openai_tool``: type hints, defaults,
Google-style ``Args:`` docs). :func:`parse_tool_calls` reads the calls a model wrote in the
Hermes/Qwen2.5 format (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, one
object or a list), and :func:`normalize_arguments` applies field cases T2/T3:

* arguments given as a JSON *string* are decoded exactly once (T2), so a training text never
  holds them twice or double-escaped;
* cut-off JSON, a list, or a non-object are invalid calls; ``""`` (and ``null``) mean ``{}``
  only when the tool has no required argument (T3);
* arguments are checked against the schema (required, unknown keys, JSON types).

Every call carries an id (field case T4): a model-written or stored ``id`` is kept when it is a
non-empty string not used before in the conversation, else a deterministic one is given
(:func:`assign_call_ids`: ``call_<turn>_<k>`` in rollouts, ``call_<message>_<k>`` in stored data), and
each tool answer carries its call's id as ``tool_call_id``.

An invalid call is never an exception: :class:`ToolBox` answers it to the model with an error
message (as langchain's ``ToolException`` handling does) and the rollout goes on. A tool that
raises is answered the same way. :class:`ToolBox` also enforces ``max_calls`` per rollout.
Tools that run model-written code must not run in the trainer's process:
:func:`sandboxed_python_tool` runs it through :func:`sdk.sandbox.make_sandbox`'s sandbox.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sdk.rollout.errors import ToolError
from sdk.types import Framework, Frozen

_CALL = re.compile(r"<tool_call>(.*?)(</tool_call>|$)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"]*)"')
_JSON_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                            "boolean": (bool,), "array": (list,), "object": (dict,),
                                            "null": (type(None),)}


class ToolCall(Frozen):
    """One call as the model wrote it. ``arguments`` is None when the call is invalid (``error`` says why);
    ``id`` is the model's own (kept by :func:`assign_call_ids` when unique) or given there."""

    name: str
    id: str = ""
    arguments: dict[str, Any] | None = None
    raw: str = ""
    error: str = ""

    @property
    def valid(self) -> bool:
        """True when the call parsed and its arguments match the tool's schema."""
        return not self.error


class ToolOutcome(Frozen):
    """What answering one call produced.

    Attributes:
        call: the call.
        ok: the tool ran and returned (False: invalid call, unknown tool, tool raised, call limit).
        content: the text the model sees as the tool's answer (an error message when not ok).
        documents: retrieved documents (``{"id", "source", "text"}``) when the tool is a retriever.
    """

    call: ToolCall
    ok: bool
    content: str
    documents: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Tool:
    """A callable the model may invoke, with its OpenAI-style JSON schema.

    Attributes:
        name, description: shown to the model.
        parameters: JSON schema of the arguments object.
        func: called as ``func(**arguments)``; its result is sent to the model (str as is, else JSON).
        untrusted: True when the tool runs model-written code (it must do so in the sandbox).
        returns_documents: func returns ``(text, documents)`` (retriever tools), logged per step.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    func: Callable[..., Any] = field(compare=False)
    untrusted: bool = False
    returns_documents: bool = False

    def schema(self) -> dict[str, Any]:
        """``{"type": "function", "function": {"name", "description", "parameters"}}`` for chat templates."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}


def as_tool(obj: Any, name: str | None = None) -> Tool:
    """A :class:`Tool` from a langchain-core ``BaseTool``, a typed function, or a :class:`Tool`.

    Raises:
        ToolError: ``obj`` is none of these, or its schema cannot be derived.
    """
    if isinstance(obj, Tool):
        return obj
    from langchain_core.tools import BaseTool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    if isinstance(obj, BaseTool):
        func: Callable[..., Any] = lambda **kw: obj.invoke(kw)
    elif callable(obj):
        func = obj
    else:
        raise ToolError(f"{obj!r} is not a tool", "pass a langchain-core BaseTool or a function with type hints")
    try:
        spec = convert_to_openai_tool(obj)["function"]
    except Exception as exc:
        raise ToolError(f"cannot derive a JSON schema for tool {getattr(obj, '__name__', obj)!r}: {exc}",
                        "give every parameter a type hint (and a docstring with Args:)") from exc
    params = spec.get("parameters") or {"type": "object", "properties": {}}
    params.setdefault("properties", {})
    return Tool(name=name or spec["name"], description=spec.get("description", ""), parameters=params, func=func)


def tool_schemas(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The JSON schemas of ``tools``, as chat templates take them."""
    return [t.schema() for t in tools]


def parse_tool_calls(text: str) -> list[ToolCall]:
    """Calls in ``text`` (``<tool_call>`` blocks; a block never closed runs to the end and is checked too).

    Each block holds one object ``{"name", "arguments"}`` or a list of them. Arguments are kept
    raw here (see :func:`normalize_arguments`); a block that is not valid JSON becomes an invalid
    call named from the text when a name is visible, else ``"?"``.
    """
    calls: list[ToolCall] = []
    for m in _CALL.finditer(text):
        body, closed = m.group(1).strip(), bool(m.group(2))
        try:
            value = json.loads(body)
        except json.JSONDecodeError as exc:
            name = _NAME.search(body)
            why = "is cut off" if not closed else f"is not valid JSON ({exc.msg} at char {exc.pos})"
            calls.append(ToolCall(name=name.group(1) if name else "?", raw=body,
                                  error=f"the tool call {why}; write <tool_call>{{\"name\": ..., \"arguments\": {{...}}}}</tool_call>"))
            continue
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                calls.append(ToolCall(name="?", raw=json.dumps(item), error="a tool call must be an object with a string `name`"))
                continue
            raw_args = item.get("arguments", item.get("parameters", {}))
            calls.append(_with_raw(item["name"], raw_args, item.get("id")))
    return calls


def _with_raw(name: str, raw_args: Any, call_id: Any = None) -> ToolCall:
    """A call whose arguments are not yet normalised: kept in ``raw`` as JSON of the raw value."""
    return ToolCall(name=name, raw=json.dumps(raw_args, ensure_ascii=False),
                    id=call_id if isinstance(call_id, str) else "")


def unique_call_id(given: Any, fallback: str, taken: set[str]) -> str:
    """``given`` when it is a non-empty string not in ``taken``, else ``fallback`` (``fallback_2``...
    while taken); the id returned is added to ``taken`` (field case T4)."""
    if isinstance(given, str) and given.strip() and given not in taken:
        taken.add(given)
        return given
    out, n = fallback, 1
    while out in taken:
        n += 1
        out = f"{fallback}_{n}"
    taken.add(out)
    return out


def assign_call_ids(calls: Sequence[ToolCall], prefix: str, taken: set[str]) -> list[ToolCall]:
    """``calls`` each with a unique, deterministic id: its own when unique, else ``<prefix>_<k>``."""
    return [c.model_copy(update={"id": unique_call_id(c.id, f"{prefix}_{k}", taken)}) for k, c in enumerate(calls)]


def normalize_arguments(raw: Any, parameters: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """``(arguments, "")`` or ``(None, error message for the model)`` (field cases T2, T3).

    Args:
        raw: what the model gave as ``arguments``: a dict, a JSON string (decoded once), ``""``/None, or anything.
        parameters: the tool's JSON schema.
    """
    required = list(parameters.get("required", []))
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        if required:
            return None, f"arguments are empty but {', '.join(required)} {'is' if len(required) == 1 else 'are'} required"
        return {}, ""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            return None, f"arguments are not valid JSON ({exc.msg} at char {exc.pos}; cut off?)"
    if not isinstance(raw, dict):
        return None, f"arguments must be a JSON object of named parameters, got a {type(raw).__name__}"
    return raw, _check_schema(raw, parameters)


def _check_schema(args: dict[str, Any], parameters: dict[str, Any]) -> str:
    props: dict[str, Any] = parameters.get("properties", {})
    missing = [k for k in parameters.get("required", []) if k not in args]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    if parameters.get("additionalProperties", False) is not True:
        unknown = [k for k in args if k not in props]
        if unknown:
            return f"unknown argument(s): {', '.join(unknown)}; allowed: {', '.join(props) or 'none'}"
    for key, value in args.items():
        if key in props and not _type_ok(value, props[key]):
            return f"argument `{key}` has the wrong type: expected {_type_name(props[key])}, got {type(value).__name__}"
    return ""


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    if "anyOf" in schema or "oneOf" in schema:
        return any(_type_ok(value, s) for s in schema.get("anyOf", schema.get("oneOf", [])))
    kind = schema.get("type")
    if kind is None:
        return True
    kinds = kind if isinstance(kind, list) else [kind]
    for k in kinds:
        if k in ("integer", "number") and isinstance(value, bool):
            continue
        if k == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, _JSON_TYPES.get(k, (object,))):
            return True
    return False


def _type_name(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_type_name(s) for s in schema["anyOf"])
    return str(schema.get("type", "any"))


class ToolBox:
    """The tools of one rollout: answers calls, counts them, stops at ``max_calls``.

    Args:
        tools: the tools (anything :func:`as_tool` accepts).
        max_calls: calls answered per rollout; later calls are answered with an error.
        max_result_chars: longer tool answers are cut and marked ``[truncated]``.
    Raises:
        ToolError: two tools share a name, or ``max_calls`` < 1.
    """

    def __init__(self, tools: Sequence[Any], max_calls: int = 4, max_result_chars: int = 2000) -> None:
        self.tools = {t.name: t for t in map(as_tool, tools)}
        if len(self.tools) != len(tools):
            raise ToolError("two tools have the same name", "give each tool a distinct name (as_tool(obj, name=...))")
        if max_calls < 1:
            raise ToolError(f"max_calls is {max_calls}", "allow at least one tool call per rollout")
        self.max_calls = max_calls
        self.max_result_chars = max_result_chars
        self.calls = 0

    def schemas(self) -> list[dict[str, Any]]:
        """The JSON schemas of the tools, in the OpenAI tool format."""
        return tool_schemas(list(self.tools.values()))

    @property
    def exhausted(self) -> bool:
        """True once ``max_calls`` calls have been answered in this rollout."""
        return self.calls >= self.max_calls

    def answer(self, call: ToolCall) -> ToolOutcome:
        """Run ``call`` if it is valid and within the limit; never raises for the call's sake."""
        self.calls += 1
        if self.calls > self.max_calls:
            return ToolOutcome(call=call, ok=False, content=f"error: the limit of {self.max_calls} tool calls is "
                               "reached; answer with what you have")
        if call.error:
            return ToolOutcome(call=call, ok=False, content=f"error: {call.error}")
        tool = self.tools.get(call.name)
        if tool is None:
            return ToolOutcome(call=call.model_copy(update={"error": "unknown tool"}), ok=False,
                               content=f"error: no tool named {call.name!r}; available: {', '.join(self.tools)}")
        args, why = normalize_arguments(json.loads(call.raw) if call.raw else None, tool.parameters)
        call = call.model_copy(update={"arguments": args, "error": why})
        if why:
            return ToolOutcome(call=call, ok=False, content=f"error: {why}")
        try:
            result = tool.func(**args)
        except Exception as exc:  # noqa: BLE001 - a failing tool is answered to the model (ToolException style)
            return ToolOutcome(call=call.model_copy(update={"error": f"tool raised {type(exc).__name__}"}), ok=False,
                               content=f"error: {type(exc).__name__}: {exc}")
        docs: tuple[dict[str, Any], ...] = ()
        if tool.returns_documents:
            result, docs = result
        return ToolOutcome(call=call, ok=True, content=self._cut(result), documents=tuple(docs))

    def final(self) -> dict[str, Any]:
        """Fields the rollout's trace gets once it ends (a hook; none here, see ``ChangeToolBox``)."""
        return {}

    def _cut(self, result: Any) -> str:
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
        return text if len(text) <= self.max_result_chars else text[: self.max_result_chars] + " [truncated]"


def sandboxed_python_tool(sandbox, limits=None, name: str = "run_python") -> Tool:
    """A tool that runs model-written Python in ``sandbox`` (from :func:`sdk.sandbox.make_sandbox`).

    The model's code runs as the solution of a ``script`` request (never in this process); the
    tool's answer is its stdout, or the status and the end of stderr when it did not finish OK.
    """
    from sdk.sandbox.contract import ExecRequest, Limits

    entry = "tuneloop_tool_entry"  # no leading dunder: the harness never resolves those from the solution
    check = {"tool_check.py": "def check(candidate):\n    candidate()\n"}

    def run_python(code: str) -> str:
        """Run Python code in an isolated sandbox and return what it prints.

        Args:
            code: a complete Python program; print the values you need.
        """
        req = ExecRequest(framework=Framework.SCRIPT, solution=f"{code}\n\ndef {entry}():\n    pass\n", tests=check,
                          entry_point=entry, limits=limits or Limits(timeout_s=5, cpu_s=5, memory_mb=512))
        res = sandbox.run([req])[0]
        if res.status.value == "ok":
            return res.stdout + (" [truncated]" if res.stdout_truncated else "")
        return f"error ({res.status.value}): {res.detail} {res.stderr[-500:]}".strip()

    spec = as_tool(run_python)
    return Tool(name=name, description=spec.description, parameters=spec.parameters, func=run_python, untrusted=True)


def normalize_tool_calls(messages: Sequence[dict[str, Any]], tools: Sequence[Tool] = ()) -> list[dict[str, Any]]:
    """Messages with every assistant tool call's ``arguments`` as a dict (decoded once; field case T2)
    and an id on every call and tool answer (T4: a stored id such as ``call_7`` is kept on both;
    a missing or repeated one becomes ``call_<message>_<k>``; an answer without ``tool_call_id``
    takes the first call of the turn still unanswered).

    For training data that stores arguments as JSON strings (the OpenAI wire format). A call
    whose arguments do not normalise is kept out of training: raises instead of guessing.

    Raises:
        ToolError: a stored call's arguments are invalid, or a tool answer matches no open call
            (names the message and the reason).
    """
    params = {t.name: t.parameters for t in tools}
    out, taken, pending = [], set(), []
    for i, msg in enumerate(messages):
        msg = dict(msg)
        if msg.get("tool_calls"):
            calls = []
            for k, call in enumerate(msg["tool_calls"]):
                fn = dict(call.get("function", call))
                for key in ("id", "type"):   # a flat call {"id", "type", "name", "arguments"}
                    fn.pop(key, None)
                args, why = normalize_arguments(fn.get("arguments"), params.get(fn.get("name"), {}))
                if why:
                    raise ToolError(f"message {i}: tool call {fn.get('name')!r} has invalid arguments: {why}",
                                    "fix or drop that example")
                cid = unique_call_id(call.get("id"), f"call_{i}_{k}", taken)
                calls.append({"id": cid, "type": "function", "function": {**fn, "arguments": args}})
            msg["tool_calls"], pending = calls, [c["id"] for c in calls]
        elif msg.get("role") == "tool":
            msg["tool_call_id"] = _answered(msg.get("tool_call_id"), pending, i)
        out.append(msg)
    return out


def _answered(call_id: Any, pending: list[str], i: int) -> str:
    """The open call a tool answer (message ``i``) belongs to, removed from ``pending``."""
    if not pending or (call_id and call_id not in pending):
        raise ToolError(f"message {i}: the tool answer {call_id or '(no tool_call_id)'} matches no open call "
                        f"(open: {', '.join(pending) or 'none'})", "give each tool answer the id of its call")
    cid = call_id or pending[0]
    pending.remove(cid)
    return cid
