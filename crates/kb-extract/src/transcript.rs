//! OpenClaw's session messages (as `agent_end` and `before_compaction` carry them) read into a
//! transcript of turns: user and assistant text, tool calls with their arguments, tool results
//! with their errors. Tool Search's wrapper (`tool_call {id, args}`) is read as the call it makes,
//! and its nested-tool entries (`openclaw.nested-tool.v1`) as the real tool's result when the
//! transcript has no result of its own for that call. Thinking, images and runtime-context
//! carriers are left out, and so are KnowHub's own injected blocks.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who a turn is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    /// A tool's result (or a nested tool's call and result).
    Tool,
    /// A summary OpenClaw wrote in place of compacted history.
    Summary,
}

/// A tool call an assistant turn made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub name: String,
    /// The arguments as a person reads them (`readable_arguments`): `name: value` lines, strings
    /// unescaped. Raw JSON would hide secrets from redaction behind its escapes and send the LLM
    /// `\n` and `\"` instead of the command.
    pub arguments: String,
}

/// One message of a conversation, as extraction reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    pub role: Role,
    /// The text: what the user or assistant wrote, or a tool's output.
    #[serde(default)]
    pub text: String,
    /// Calls made by an assistant turn; for a nested tool entry, the call itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The tool a result belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A failed tool call, or an assistant turn that ended in an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Identifies the message within its session, so that a message is extracted once however
    /// often the history is sent again (`fingerprint`).
    pub fingerprint: String,
}

impl Turn {
    /// Applies `f` to every text the turn holds (text, tool names and arguments): redaction.
    pub fn map_texts(&mut self, mut f: impl FnMut(&str) -> Option<String>) {
        let mut apply = |text: &mut String| {
            if let Some(changed) = f(text) {
                *text = changed;
            }
        };
        apply(&mut self.text);
        for call in &mut self.tool_calls {
            apply(&mut call.name);
            apply(&mut call.arguments);
        }
        if let Some(tool) = &mut self.tool {
            apply(tool);
        }
    }
}

/// Redacts every text of `turns` (strict privacy mode) before they are queued or sent; returns
/// how many secrets were replaced.
pub fn redact_turns(turns: &mut [Turn]) -> usize {
    let mut n_redacted = 0;
    for turn in turns {
        turn.map_texts(|text| {
            let (redacted, found) = kb_core::redact::redact(text);
            n_redacted += found.iter().map(|redaction| redaction.count).sum::<usize>();
            (!found.is_empty()).then(|| redacted.into_owned())
        });
    }
    n_redacted
}

/// Tool Search's wrapper tools: the real tool is named in their arguments.
const WRAPPERS: [&str; 2] = ["tool_call", "tool_search_code"];
/// The custom entry type of a tool called through Tool Search.
const NESTED_TOOL: &str = "openclaw.nested-tool.v1";
/// KnowHub's own injected context, never extracted from.
const KNOWHUB_BLOCK: (&str, &str) = ("<knowhub-experiences", "</knowhub-experiences>");

/// Reads OpenClaw's messages into turns, oldest first. Entries it does not know are skipped.
pub fn parse_messages(messages: &[Value]) -> Vec<Turn> {
    // Tool call ids answered by a tool result of the transcript: their nested entries repeat them.
    let answered: HashSet<&str> = messages
        .iter()
        .filter(|message| role_of(message) == Some("toolResult") || role_of(message) == Some("tool"))
        .filter_map(|message| message.get("toolCallId").or_else(|| message.get("tool_call_id")).and_then(Value::as_str))
        .collect();
    // The real tool behind each wrapper call, for the wrapper's result.
    let mut real_names: HashMap<String, String> = HashMap::new();
    let mut turns = Vec::new();
    for message in messages {
        let Some(role) = role_of(message) else { continue };
        let turn = match role {
            "user" => user_turn(message),
            "assistant" => Some(assistant_turn(message, &mut real_names)),
            "toolResult" | "tool" => Some(tool_turn(message, &real_names)),
            "custom" => nested_turn(message, &answered),
            "compactionSummary" | "branchSummary" => {
                message.get("summary").and_then(Value::as_str).filter(|text| !text.trim().is_empty()).map(|text| Turn {
                    role: Role::Summary,
                    text: text.trim().to_owned(),
                    tool_calls: Vec::new(),
                    tool: None,
                    is_error: false,
                    fingerprint: String::new(),
                })
            }
            _ => None,
        };
        if let Some(mut turn) = turn {
            turn.fingerprint = fingerprint(message, role, &turn);
            turns.push(turn);
        }
    }
    turns
}

fn role_of(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

fn user_turn(message: &Value) -> Option<Turn> {
    if message.get("runtimeContextCarrier").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    let text = without_knowhub_blocks(&content_text(message.get("content")));
    let text = text.trim();
    (!text.is_empty()).then(|| Turn {
        role: Role::User,
        text: text.to_owned(),
        tool_calls: Vec::new(),
        tool: None,
        is_error: false,
        fingerprint: String::new(),
    })
}

fn assistant_turn(message: &Value, real_names: &mut HashMap<String, String>) -> Turn {
    let mut text = content_text(message.get("content"));
    let mut tool_calls = Vec::new();
    let mut push_call = |id: Option<&str>, name: &str, arguments: Option<&Value>| {
        let (name, arguments) = unwrap_wrapper(name, arguments);
        if let Some(id) = id {
            real_names.insert(id.to_owned(), name.clone());
        }
        tool_calls.push(ToolCall { name, arguments });
    };
    if let Some(blocks) = message.get("content").and_then(Value::as_array) {
        for block in blocks {
            if block.get("type").and_then(Value::as_str) == Some("toolCall")
                && let Some(name) = block.get("name").and_then(Value::as_str)
            {
                push_call(block.get("id").and_then(Value::as_str), name, block.get("arguments"));
            }
        }
    }
    // Chat Completions' own shape, for histories that come from elsewhere.
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for call in calls {
            let function = call.get("function").unwrap_or(call);
            if let Some(name) = function.get("name").and_then(Value::as_str) {
                let arguments = function.get("arguments").map(|arguments| match arguments {
                    Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| arguments.clone()),
                    other => other.clone(),
                });
                push_call(call.get("id").and_then(Value::as_str), name, arguments.as_ref());
            }
        }
    }
    let stop = message.get("stopReason").and_then(Value::as_str);
    let error = message.get("errorMessage").and_then(Value::as_str).filter(|text| !text.trim().is_empty());
    let is_error = matches!(stop, Some("error")) || error.is_some();
    if let Some(error) = error {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str("[error: ");
        text.push_str(error.trim());
        text.push(']');
    }
    Turn {
        role: Role::Assistant,
        text: text.trim().to_owned(),
        tool_calls,
        tool: None,
        is_error,
        fingerprint: String::new(),
    }
}

fn tool_turn(message: &Value, real_names: &HashMap<String, String>) -> Turn {
    let id = message.get("toolCallId").or_else(|| message.get("tool_call_id")).and_then(Value::as_str);
    let named = message.get("toolName").or_else(|| message.get("name")).and_then(Value::as_str);
    let tool = id.and_then(|id| real_names.get(id).cloned()).or_else(|| named.map(str::to_owned));
    Turn {
        role: Role::Tool,
        text: content_text(message.get("content")).trim().to_owned(),
        tool_calls: Vec::new(),
        tool,
        is_error: message.get("isError").and_then(Value::as_bool).unwrap_or(false),
        fingerprint: String::new(),
    }
}

/// A Tool Search nested-tool entry, unless the transcript has the result of its call already.
fn nested_turn(message: &Value, answered: &HashSet<&str>) -> Option<Turn> {
    if message.get("customType").and_then(Value::as_str) != Some(NESTED_TOOL) {
        return None;
    }
    let details = message.get("details")?;
    let ids = ["toolCallId", "parentToolCallId"].map(|key| details.get(key).and_then(Value::as_str));
    if ids.iter().flatten().any(|id| answered.contains(id)) {
        return None;
    }
    let name = details.get("toolName").and_then(Value::as_str)?;
    Some(Turn {
        role: Role::Tool,
        text: content_text(details.pointer("/result/content")).trim().to_owned(),
        tool_calls: vec![ToolCall { name: name.to_owned(), arguments: readable_arguments(details.get("input")) }],
        tool: Some(name.to_owned()),
        is_error: details.get("isError").and_then(Value::as_bool).unwrap_or(false),
        fingerprint: String::new(),
    })
}

/// A wrapper call (`tool_call {id, args}`) as the call it makes; any other call as it is.
fn unwrap_wrapper(name: &str, arguments: Option<&Value>) -> (String, String) {
    if WRAPPERS.contains(&name)
        && let Some(real) = arguments.and_then(|arguments| arguments.get("id")).and_then(Value::as_str)
    {
        return (real.to_owned(), readable_arguments(arguments.and_then(|arguments| arguments.get("args"))));
    }
    (name.to_owned(), readable_arguments(arguments))
}

/// How deep JSON held in a string is read as JSON (`"body": "{\"a\": 1}"`).
const MAX_NESTED_JSON: usize = 3;

/// A tool call's arguments as a person reads them: one `name: value` line per field, a nested
/// field by its path (`env.TOKEN: …`, `files[0]: …`), strings as they are (unescaped; a
/// multi-line string runs on over the lines after its name), JSON held in a string read as
/// JSON. What is redacted and sent to the LLM is this, not the raw JSON.
pub fn readable_arguments(value: Option<&Value>) -> String {
    let mut out = String::new();
    match value {
        None | Some(Value::Null) => {}
        Some(value) => push_fields(&mut out, "", value, 0),
    }
    out.truncate(out.trim_end_matches('\n').len());
    out
}

fn push_fields(out: &mut String, path: &str, value: &Value, nested: usize) {
    let line = |out: &mut String, text: &str| {
        if !path.is_empty() {
            out.push_str(path);
            out.push_str(": ");
        }
        out.push_str(text);
        out.push('\n');
    };
    match value {
        Value::Object(fields) if !fields.is_empty() => {
            for (name, field) in fields {
                let path = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                push_fields(out, &path, field, nested);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for (index, item) in items.iter().enumerate() {
                push_fields(out, &format!("{path}[{index}]"), item, nested);
            }
        }
        Value::String(text) => {
            let trimmed = text.trim_start();
            let parsed = (nested < MAX_NESTED_JSON && (trimmed.starts_with('{') || trimmed.starts_with('[')))
                .then(|| serde_json::from_str::<Value>(text).ok())
                .flatten()
                .filter(|parsed| parsed.is_object() || parsed.is_array());
            match parsed {
                Some(parsed) => push_fields(out, path, &parsed, nested + 1),
                None => line(out, text),
            }
        }
        other => line(out, &other.to_string()),
    }
}

/// The text of a message's content: a string, or the text blocks of an array (images become a
/// marker; thinking and tool calls are not text).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => {
            let mut parts: Vec<&str> = Vec::new();
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(text) = block.get("text").and_then(Value::as_str) {
                            parts.push(text);
                        }
                    }
                    Some("image") | Some("image_url") => parts.push("[image]"),
                    _ => {}
                }
            }
            parts.join("\n")
        }
        _ => String::new(),
    }
}

/// `text` without KnowHub's `<knowhub-experiences …>…</knowhub-experiences>` blocks: what KnowHub
/// injected is not something the session learned.
fn without_knowhub_blocks(text: &str) -> String {
    let (open, close) = KNOWHUB_BLOCK;
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        out.push_str(&rest[..start]);
        match rest[start..].find(close) {
            Some(end) => rest = &rest[start + end + close.len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// What identifies a message across the repeated histories of one session: its role, OpenClaw's
/// timestamp and tool call id when it has them (so equal texts at different times are different
/// messages), else the start of its text. The hook envelope may shorten old messages' strings
/// when a history grows, so the text is used only when nothing else identifies the message.
pub fn fingerprint(message: &Value, role: &str, turn: &Turn) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(role.as_bytes());
    let timestamp = message.get("timestamp").filter(|value| value.is_number() || value.is_string());
    let call_id = message
        .get("toolCallId")
        .or_else(|| message.pointer("/details/toolCallId"))
        .or_else(|| message.get("tool_call_id"))
        .and_then(Value::as_str);
    match timestamp {
        Some(timestamp) => {
            hasher.update(b"\0t");
            hasher.update(timestamp.to_string().as_bytes());
            hasher.update(b"\0c");
            hasher.update(call_id.unwrap_or("").as_bytes());
        }
        None => {
            hasher.update(b"\0x");
            let prefix: String = turn.text.chars().take(512).collect();
            hasher.update(prefix.as_bytes());
            hasher.update(call_id.unwrap_or("").as_bytes());
            for call in &turn.tool_calls {
                hasher.update(call.name.as_bytes());
                hasher.update(call.arguments.as_bytes());
            }
        }
    }
    hasher.finalize().to_hex()[..32].to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn openclaw_messages_become_turns() {
        let messages = vec![
            json!({"role": "user", "content": "deploy the site", "timestamp": 1}),
            json!({"role": "assistant", "timestamp": 2, "stopReason": "toolUse", "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Running the deploy."},
                {"type": "toolCall", "id": "c1", "name": "exec", "arguments": {"command": "npm run deploy"}}
            ]}),
            json!({"role": "toolResult", "toolCallId": "c1", "toolName": "exec", "isError": true, "timestamp": 3,
                   "content": [{"type": "text", "text": "Error: EACCES"}]}),
            json!({"role": "user", "content": [{"type": "text", "text": "use sudo"}, {"type": "image", "data": "…"}], "timestamp": 4}),
            json!({"role": "user", "content": "ctx", "runtimeContextCarrier": true, "timestamp": 5}),
            json!({"role": "system", "content": "ignored"}),
        ];
        let turns = parse_messages(&messages);
        assert_eq!(turns.len(), 4);
        assert_eq!(turns[1].text, "Running the deploy.");
        assert_eq!(
            turns[1].tool_calls,
            vec![ToolCall { name: "exec".into(), arguments: "command: npm run deploy".into() }]
        );
        assert_eq!((turns[2].role, turns[2].tool.as_deref(), turns[2].is_error), (Role::Tool, Some("exec"), true));
        assert_eq!(turns[3].text, "use sudo\n[image]");
        let fingerprints: HashSet<&str> = turns.iter().map(|turn| turn.fingerprint.as_str()).collect();
        assert_eq!(fingerprints.len(), 4, "each message has its own fingerprint");
    }

    #[test]
    fn tool_search_calls_are_read_as_the_real_tool() {
        let messages = vec![
            json!({"role": "assistant", "timestamp": 1, "content": [
                {"type": "toolCall", "id": "w1", "name": "tool_call", "arguments": {"id": "exec", "args": {"command": "ls"}}}
            ]}),
            json!({"role": "toolResult", "toolCallId": "w1", "toolName": "tool_call", "isError": false, "timestamp": 2,
                   "content": [{"type": "text", "text": "a.txt"}]}),
            // Its nested entry repeats the result already in the transcript: left out.
            json!({"role": "custom", "customType": NESTED_TOOL, "content": "", "timestamp": 2, "details": {
                "toolCallId": "n1", "parentToolCallId": "w1", "toolName": "exec", "input": {"command": "ls"},
                "result": {"content": [{"type": "text", "text": "a.txt"}]}, "isError": false}}),
            // A nested entry with no result of its own in the transcript is kept.
            json!({"role": "custom", "customType": NESTED_TOOL, "content": "", "timestamp": 3, "details": {
                "toolCallId": "n2", "toolName": "web_fetch", "input": {"url": "https://x"},
                "result": {"content": [{"type": "text", "text": "404"}]}, "isError": true}}),
        ];
        let turns = parse_messages(&messages);
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[0].tool_calls[0], ToolCall { name: "exec".into(), arguments: "command: ls".into() });
        assert_eq!(turns[1].tool.as_deref(), Some("exec"));
        assert_eq!(
            (turns[2].tool.as_deref(), turns[2].is_error, turns[2].text.as_str()),
            (Some("web_fetch"), true, "404")
        );
    }

    #[test]
    fn tool_arguments_are_read_as_name_value_lines_not_json() {
        let arguments = json!({
            "command": "cat > .env <<EOF\nDB_PASSWORD=\"p4ss\"\nEOF",
            "env": {"TOKEN": "abc", "DEBUG": true},
            "files": ["a.txt", "密码.txt"],
            "body": "{\"user\": \"x\", \"inner\": \"{\\\"deep\\\": 1}\"}",
            "empty": {},
            "none": null
        });
        assert_eq!(
            readable_arguments(Some(&arguments)),
            // serde_json's objects keep their keys sorted.
            "body.inner.deep: 1\nbody.user: x\ncommand: cat > .env <<EOF\nDB_PASSWORD=\"p4ss\"\nEOF\nempty: {}\n\
             env.DEBUG: true\nenv.TOKEN: abc\nfiles[0]: a.txt\nfiles[1]: 密码.txt\nnone: null"
        );
        // Chat Completions carries the arguments as a JSON string: read the same way.
        let messages = vec![json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "exec", "arguments": "{\"command\":\"ls\\n-la\"}"}}]})];
        assert_eq!(parse_messages(&messages)[0].tool_calls[0].arguments, "command: ls\n-la");
        // Text that is not JSON stays as it is.
        assert_eq!(readable_arguments(Some(&json!("{not json"))), "{not json");
        assert_eq!(readable_arguments(None), "");
    }

    #[test]
    fn knowhub_blocks_and_assistant_errors() {
        let messages = vec![
            json!({"role": "user", "content": "<knowhub-experiences note=\"x\">old</knowhub-experiences>\nfix the build"}),
            json!({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "rate limited"}),
        ];
        let turns = parse_messages(&messages);
        assert_eq!(turns[0].text, "fix the build");
        assert!(turns[1].is_error);
        assert_eq!(turns[1].text, "[error: rate limited]");
    }

    #[test]
    fn a_fingerprint_survives_a_shortened_text_when_there_is_a_timestamp() {
        let long = json!({"role": "toolResult", "toolCallId": "c", "timestamp": 9, "content": "x".repeat(100)});
        let cut =
            json!({"role": "toolResult", "toolCallId": "c", "timestamp": 9, "content": "xx…[truncated 98 chars]"});
        assert_eq!(parse_messages(&[long])[0].fingerprint, parse_messages(&[cut])[0].fingerprint);
        let later = json!({"role": "user", "content": "ok", "timestamp": 10});
        let earlier = json!({"role": "user", "content": "ok", "timestamp": 11});
        assert_ne!(parse_messages(&[later])[0].fingerprint, parse_messages(&[earlier])[0].fingerprint);
    }
}
