"""A small tool-using bot, traced by real instrumentation, whose spans are written as OTLP JSON.

Run as a script (each run is its own process: instrumentation patches the openai client and reads
its settings from the environment once):

    python _instrumented_bot.py MODE OUT.jsonl [OUT.json]

MODE is `genai` (opentelemetry-instrumentation-openai-v2 on the latest GenAI conventions: messages
in span attributes, tool runs as `execute_tool` spans from opentelemetry-util-genai), `events`
(the same, with the messages in `gen_ai.client.inference.operation.details` log records) or
`openinference` (openinference-instrumentation-openai, session from `using_session`, TOOL spans
written with OpenInference's attribute names). The openai client talks to a scripted chat server
on 127.0.0.1. The spans (and log records) are captured in memory, encoded with the OTLP exporter's
own encoder and written with protobuf's `MessageToJson`: one export request per line in OUT.jsonl,
and the trace request as one pretty-printed object in OUT.json.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SYSTEM = "You are a weather bot. Be brief."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
TURNS = ["What is the weather in Paris?", "Thanks! Should I take an umbrella?"]
WEATHER = '{"city": "Paris", "sky": "rain", "celsius": 14}'
ANSWERS = ["It is raining in Paris, 14 C.", "Yes, take an umbrella."]
SESSION = "session-7"


def _reply(body: dict[str, Any]) -> dict[str, Any]:
    """The scripted model: call the tool for a weather question, answer after a tool result."""
    last = body["messages"][-1]
    if last["role"] == "user" and "weather" in last["content"]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_w1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        }
        finish = "tool_calls"
    else:
        answer = ANSWERS[0] if last["role"] == "tool" else ANSWERS[1]
        message, finish = {"role": "assistant", "content": answer}, "stop"
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "scripted-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        data = json.dumps(_reply(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _conversation(client: Any, around_turn: Any, run_tool: Any) -> None:
    """Two user turns, the first with a tool call, each turn in its own trace."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    for turn in TURNS:
        with around_turn():
            messages.append({"role": "user", "content": turn})
            while True:
                response = client.chat.completions.create(
                    model="scripted-model", messages=messages, tools=TOOLS
                )
                message = response.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    break
                for call in message.tool_calls:
                    result = run_tool(call)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def main(mode: str, out_jsonl: str, out_json: str | None) -> None:
    if mode == "genai":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only"
    elif mode == "events":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "event_only"
    import openai
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    resource = Resource.create({"service.name": "weather-bot"})
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[:2]
    client = openai.OpenAI(base_url=f"http://{host!s}:{port}/v1", api_key="test-key")

    if mode in ("genai", "events"):
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
        from opentelemetry.util.genai.handler import TelemetryHandler

        OpenAIInstrumentor().instrument(
            tracer_provider=tracer_provider, logger_provider=logger_provider
        )
        handler = TelemetryHandler(tracer_provider=tracer_provider, logger_provider=logger_provider)

        @contextlib.contextmanager
        def around_turn() -> Iterator[None]:
            with handler.invoke_local_agent(agent_name="weather-bot") as invocation:
                invocation.conversation_id = SESSION  # on the invoke_agent span of the turn
                yield

        def run_tool(call: Any) -> str:
            with handler.tool(call.function.name, tool_call_id=call.id) as invocation:
                invocation.arguments = json.loads(call.function.arguments)
                invocation.tool_result = WEATHER
            return WEATHER
    else:
        from openinference.instrumentation import using_session
        from openinference.instrumentation.openai import OpenAIInstrumentor as OIInstrumentor
        from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes

        OIInstrumentor().instrument(tracer_provider=tracer_provider)
        tracer = tracer_provider.get_tracer("weather-bot")

        def around_turn() -> Any:
            return using_session(SESSION)

        def run_tool(call: Any) -> str:
            with tracer.start_as_current_span(call.function.name) as span:
                span.set_attribute(
                    SpanAttributes.OPENINFERENCE_SPAN_KIND, OpenInferenceSpanKindValues.TOOL.value
                )
                span.set_attribute(SpanAttributes.TOOL_NAME, call.function.name)
                span.set_attribute(SpanAttributes.INPUT_VALUE, call.function.arguments)
                span.set_attribute(SpanAttributes.OUTPUT_VALUE, WEATHER)
                span.set_attribute(SpanAttributes.SESSION_ID, SESSION)
            return WEATHER

    _conversation(client, around_turn, run_tool)
    server.shutdown()
    logger_provider.force_flush()
    trace_request = encode_spans(spans.get_finished_spans())
    lines = [json.dumps(json.loads(MessageToJson(trace_request)))]
    finished_logs = logs.get_finished_logs()
    if finished_logs:
        lines.append(json.dumps(json.loads(MessageToJson(encode_logs(finished_logs)))))
    with open(out_jsonl, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    if out_json:
        with open(out_json, "w", encoding="utf-8") as handle:
            handle.write(MessageToJson(trace_request))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
