// A scripted OpenAI-compatible model server for real agent turns: Chat Completions over HTTP on
// 127.0.0.1 with `stream: true` server-sent events (text and tool calls), Node built-ins only.
// Each test scripts what the "model" answers; every request body is recorded, so a test can
// assert on exactly what OpenClaw sent the model.

import http from "node:http";

/**
 * What the model does on one call. A script is `(request, call) => Reply`, where `request` is
 * the parsed request body and `call` its index (0-based) since the server started:
 * - `{text}`: a final answer;
 * - `{toolCalls: [{name, arguments}]}`: tool calls (arguments an object or a JSON string),
 *   optionally with `text` before them.
 */
export class ModelServer {
  constructor(script = () => ({ text: "ok" })) {
    this.script = script;
    /** Every request body, parsed, in arrival order. */
    this.requests = [];
    this.server = http.createServer((req, res) => this.handle(req, res));
    this.nextId = 1;
  }

  async listen() {
    await new Promise((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = this.server.address().port;
    return this;
  }

  get baseUrl() {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  /** Requests to the chat completions endpoint (the model calls). */
  get calls() {
    return this.requests.filter((request) => Array.isArray(request.messages));
  }

  handle(req, res) {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      if (req.method === "GET" && req.url.endsWith("/models")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: "scripted", object: "model", owned_by: "test" }] }));
        return;
      }
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
        return;
      }
      let body;
      try {
        body = JSON.parse(text);
      } catch {
        res.writeHead(400).end();
        return;
      }
      const call = this.calls.length;
      this.requests.push(body);
      let reply;
      try {
        reply = this.script(body, call) ?? { text: "ok" };
      } catch (error) {
        reply = { text: `script error: ${error.message}` };
      }
      if (body.stream === false) this.answerJson(res, body, reply);
      else this.answerStream(res, body, reply);
    });
  }

  answerStream(res, body, reply) {
    const id = `chatcmpl-${this.nextId++}`;
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta, finish = null, extra = {}) =>
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.write(chunk({ role: "assistant", content: "" }));
    if (reply.text) res.write(chunk({ content: reply.text }));
    const toolCalls = reply.toolCalls ?? [];
    toolCalls.forEach((toolCall, index) => {
      const args = typeof toolCall.arguments === "string" ? toolCall.arguments : JSON.stringify(toolCall.arguments ?? {});
      const callId = toolCall.id ?? `call_${this.nextId++}`;
      res.write(chunk({ tool_calls: [{ index, id: callId, type: "function", function: { name: toolCall.name, arguments: "" } }] }));
      res.write(chunk({ tool_calls: [{ index, function: { arguments: args } }] }));
    });
    res.write(chunk({}, toolCalls.length > 0 ? "tool_calls" : "stop"));
    res.write(
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`,
    );
    res.end("data: [DONE]\n\n");
  }

  answerJson(res, body, reply) {
    const toolCalls = (reply.toolCalls ?? []).map((toolCall) => ({
      id: toolCall.id ?? `call_${this.nextId++}`,
      type: "function",
      function: { name: toolCall.name, arguments: typeof toolCall.arguments === "string" ? toolCall.arguments : JSON.stringify(toolCall.arguments ?? {}) },
    }));
    const message = { role: "assistant", content: reply.text ?? null, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${this.nextId++}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message, finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop" }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      }),
    );
  }

  async close() {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** The text of a message's content, whether a string or an array of parts. */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part === "string" ? part : part?.text ?? "")).join("");
  return "";
}

/** Everything a request showed the model, as one string (system, messages, tool results). */
export function requestText(request) {
  return (request.messages ?? []).map((message) => contentText(message.content)).join("\n");
}

/** The names of the tools a request offered the model. */
export function offeredTools(request) {
  return (request.tools ?? []).map((tool) => tool.function?.name ?? tool.name).sort();
}

/** OpenClaw appends this internal context as a user message after the turn's own. */
const INTERNAL_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>";

/** The user's message of the turn a request belongs to (OpenClaw appends internal context after it). */
export function turnMessageIndex(request) {
  const messages = request.messages ?? [];
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "user" && !contentText(messages[i].content).startsWith(INTERNAL_CONTEXT)) return i;
  }
  return -1;
}

/** The text of the turn's user message, with whatever hooks prepended to it. */
export function turnText(request) {
  const index = turnMessageIndex(request);
  return index >= 0 ? contentText(request.messages[index].content) : "";
}

/** Tool results the model got since the turn's user message: which step of the turn this is. */
export function stepOf(request) {
  return request.messages.slice(turnMessageIndex(request) + 1).filter((message) => message.role === "tool").length;
}

/** The latest tool result the model got, as text. */
export function lastToolResult(request) {
  const tool = request.messages.filter((message) => message.role === "tool").at(-1);
  return tool ? contentText(tool.content) : "";
}
