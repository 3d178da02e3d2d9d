"""One conversation out of the model calls and tool executions of its spans.

Calls and tool runs are taken in start-time order. Each call re-sends the history: the part of
its input that repeats the conversation so far is matched and kept once, the rest is appended,
then its first output. A tool run's result goes right after the assistant message that called
it, so the sample keeps the tool-message rules. Whatever cannot be read without guessing (a
call without recorded messages, a history that was edited, a tool result never recorded, a
tool run that answers no recorded call) is a gap: said in `metadata.otel.gaps`, never filled in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from convoeval.io.otel.messages import Call, Msg, ToolRun, dumps
from convoeval.schema.messages import ToolCall

#: At least this many messages in a row must repeat the conversation for a call's input to
#: count as a re-sent history that was edited (one repeated message may be said again).
_RESENT = 2


@dataclass(slots=True)
class Assembly:
    """The messages of a conversation, the gaps met on the way and the tool runs not placed."""

    messages: list[Msg] = field(default_factory=list)
    gaps: list[str] = field(default_factory=list)
    unplaced: list[ToolRun] = field(default_factory=list)


def assemble(items: Sequence[Call | ToolRun]) -> Assembly:
    """Merge calls and tool runs (already in start-time order) into one conversation."""
    out = Assembly()
    for item in items:
        if isinstance(item, ToolRun):
            _place(out, item)
        elif not item.recorded or not (item.input or item.output):
            out.gaps.append(
                f"{item.span.label()}: a model call with no recorded messages (was message "
                "content capture off?)"
            )
        else:
            _merge(out, item)
    _close(out)
    return out


def _keys(messages: Sequence[Msg]) -> list[tuple[object, ...]]:
    return [message.key() for message in messages]


def _merge(out: Assembly, call: Call) -> None:
    """Append what the call adds to the conversation: its new input, then its first output."""
    conv, sent = out.messages, call.input
    _order_blocks(conv)
    _order_blocks(sent)
    size = len(conv)
    if len(sent) >= size and _keys(sent[:size]) == _keys(conv):
        _adopt(conv, sent[:size])
        fresh = sent[size:]
    else:
        seen = {m.key() for m in conv if m.kind == "system"}
        skip = 0
        while skip < len(sent) and sent[skip].kind == "system" and sent[skip].key() in seen:
            skip += 1
        rest = sent[skip:]
        shared = _overlap(conv, rest)
        if shared == 0 and rest:
            shared = _diverged(out, call, rest)
        else:
            _adopt(conv[len(conv) - shared :], rest[:shared])
        fresh = rest[shared:]
    conv.extend(fresh)
    if call.output:
        first, *others = call.output
        if others:
            first.extra["other_choices"] = [_plain(m) for m in others]
        conv.append(first)


def _overlap(conv: list[Msg], rest: list[Msg]) -> int:
    """The largest k such that the first k messages of `rest` are the last k of `conv`."""
    conv_keys, rest_keys = _keys(conv), _keys(rest)
    for size in range(min(len(conv_keys), len(rest_keys)), 0, -1):
        if rest_keys[:size] == conv_keys[-size:]:
            return size
    return 0


def _diverged(out: Assembly, call: Call, rest: list[Msg]) -> int:
    """A call whose history repeats an earlier stretch of the conversation, then departs from it
    (history truncated in the middle or edited): the repeated part is dropped, the rest appended,
    and it is a gap. Returns how many messages of `rest` were repeats."""
    conv_keys, rest_keys = _keys(out.messages), _keys(rest)
    best, at = 0, 0
    for start, key in enumerate(conv_keys):
        if key != rest_keys[0]:
            continue
        size = 0
        while (
            size < len(rest_keys)
            and start + size < len(conv_keys)
            and conv_keys[start + size] == rest_keys[size]
        ):
            size += 1
        if size > best:
            best, at = size, start
    if best < _RESENT:
        return 0
    out.gaps.append(
        f"{call.span.label()}: the history it sent repeats messages {at}-{at + best - 1} of "
        f"the conversation and then departs from it (truncated or edited); its {len(rest) - best} "
        "later messages were appended after the conversation so far"
    )
    return best


def _adopt(kept: Sequence[Msg], again: Sequence[Msg]) -> None:
    """A tool result sent back to the model is what the model saw: it fills a result that was
    not recorded, and replaces a different one (kept in the metadata as `tool_span_result`)."""
    for mine, theirs in zip(kept, again, strict=True):
        if mine.kind != "tool" or theirs.content is None or mine.content == theirs.content:
            continue
        if mine.content is not None:
            mine.extra["tool_span_result"] = mine.content
        mine.content = theirs.content


def _place(out: Assembly, run: ToolRun) -> None:
    """Put a tool run's result after the assistant message whose call it answers (by call id,
    else by tool name in the latest assistant message that called tools)."""
    conv = out.messages
    found: tuple[int, ToolCall] | None = None
    for index in range(len(conv) - 1, -1, -1):
        message = conv[index]
        if message.kind != "ai" or not message.calls:
            continue
        answered = {m.call_id for m in _block(conv, index)}
        for call in message.calls:
            by_id = run.call_id is not None and call.id == run.call_id
            by_name = run.call_id is None and call.name == run.name and call.id not in answered
            if by_id or by_name:
                found = (index, call)
                break
        if found or run.call_id is None:
            break  # by name: only the latest assistant message that called tools
    if found is None:
        out.unplaced.append(run)
        what = f"tool {run.name!r}" + (f" (call id {run.call_id})" if run.call_id else "")
        out.gaps.append(
            f"{run.span.label()}: the execution of {what} answers no recorded tool call; "
            "it is kept in metadata.otel.spans only"
        )
        return
    index, call = found
    block = _block(conv, index)
    for message in block:
        if call.id is not None and message.call_id == call.id:
            if message.content is None:
                message.content = run.result
            return
    extra = {"name": run.name} if run.name else {}
    message = Msg("tool", run.result, None, call.id, extra, run.span)
    conv.insert(index + 1 + len(block), message)


def _order_blocks(messages: list[Msg]) -> None:
    """Tool results in the order of the calls they answer (tool spans may be recorded in any
    order), so a re-sent history matches them message by message."""
    for index, message in enumerate(messages):
        if message.kind == "ai" and message.calls:
            block = _block(messages, index)
            order = {call.id: rank for rank, call in enumerate(message.calls) if call.id}
            ranked = sorted(block, key=lambda m: order.get(m.call_id or "", len(order)))
            messages[index + 1 : index + 1 + len(block)] = ranked


def _block(conv: list[Msg], index: int) -> list[Msg]:
    """The tool messages right after the assistant message at `index`."""
    end = index + 1
    while end < len(conv) and conv[end].kind == "tool":
        end += 1
    return conv[index + 1 : end]


def _close(out: Assembly) -> None:
    """Gaps of the finished conversation: results never recorded, calls never answered."""
    conv = out.messages
    _order_blocks(conv)
    for index, message in enumerate(conv):
        origin = message.span.label() if message.span else "a span"
        if message.kind == "tool" and message.content is None:
            out.gaps.append(
                f"{origin}: the result of tool call {message.call_id or '(no id)'} was not "
                "recorded (its message is empty)"
            )
            message.content = ""
        if message.kind == "ai" and message.calls:
            block = _block(conv, index)
            answered = {m.call_id for m in block}
            unanswered = [c for c in message.calls if c.id is not None and c.id not in answered]
            if not any(c.id for c in message.calls) and len(block) < len(message.calls):
                unanswered = message.calls[len(block) :]
            for call in unanswered:
                out.gaps.append(
                    f"{origin}: tool call {call.id or '(no id)'} ({call.name}) has no recorded "
                    "result"
                )


def _plain(message: Msg) -> dict[str, object]:
    """Another choice of a call, kept in the metadata of the first."""
    data: dict[str, object] = {"content": message.content or ""}
    if message.calls:
        data["tool_calls"] = [
            {"name": c.name, "arguments": dumps(c.args), **({"id": c.id} if c.id else {})}
            for c in message.calls
        ]
    return data
