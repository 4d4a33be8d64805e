//! The gate before any spend: whether a conversation holds anything an experience could be
//! made of. A short chat with no tool use, no error and no correction by the user is skipped
//! without calling an LLM.

use crate::transcript::{Role, Turn};

/// Tools that are not resources: KnowHub's own and Tool Search's discovery.
const NOT_RESOURCES: [&str; 5] = ["kb_search", "kb_submit", "kb_content", "tool_search", "tool_describe"];

/// What a user says when the agent got it wrong (English and Chinese), lowercase.
const CORRECTIONS: [&str; 24] = [
    "that's wrong",
    "that is wrong",
    "that's not",
    "that is not",
    "not what i",
    "doesn't work",
    "does not work",
    "didn't work",
    "did not work",
    "still fail",
    "still broken",
    "still doesn't",
    "you forgot",
    "instead use",
    "use instead",
    "wrong",
    "不对",
    "错了",
    "不是这样",
    "还是不行",
    "不行",
    "没用",
    "失败了",
    "应该用",
];

/// What the gate found in a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// Calls of tools other than KnowHub's and Tool Search's discovery.
    pub tool_calls: usize,
    /// Failed tool calls and assistant turns that ended in an error.
    pub errors: usize,
    /// User turns that correct the assistant's previous one.
    pub corrections: usize,
    /// Why the conversation is skipped; `None` when it is worth an LLM call.
    pub skip: Option<&'static str>,
}

impl Assessment {
    pub fn worth_extracting(&self) -> bool {
        self.skip.is_none()
    }
}

/// Decides whether `turns` are worth an extraction.
pub fn assess(turns: &[Turn]) -> Assessment {
    let mut tool_calls = 0;
    let mut errors = 0;
    let mut corrections = 0;
    let mut previous: Option<Role> = None;
    for turn in turns {
        match turn.role {
            Role::Assistant => {
                tool_calls +=
                    turn.tool_calls.iter().filter(|call| !NOT_RESOURCES.contains(&call.name.as_str())).count();
                errors += usize::from(turn.is_error);
            }
            Role::Tool => {
                let resource = turn.tool.as_deref().is_none_or(|tool| !NOT_RESOURCES.contains(&tool));
                errors += usize::from(turn.is_error && resource);
                // A nested tool entry carries its own call.
                tool_calls +=
                    turn.tool_calls.iter().filter(|call| !NOT_RESOURCES.contains(&call.name.as_str())).count();
            }
            Role::User => {
                if previous.is_some_and(|role| role != Role::User) && is_correction(&turn.text) {
                    corrections += 1;
                }
            }
            Role::Summary => {}
        }
        previous = Some(turn.role);
    }
    let skip = if !turns.iter().any(|turn| turn.role == Role::Assistant) {
        Some("no assistant turn")
    } else if tool_calls == 0 && errors == 0 && corrections == 0 {
        Some("no tool use, no error and no correction")
    } else {
        None
    };
    Assessment { tool_calls, errors, corrections, skip }
}

fn is_correction(text: &str) -> bool {
    let lowered = text.to_lowercase();
    let head: String = lowered.chars().take(400).collect();
    let starts_with_no =
        ["no,", "no.", "no ", "nope", "不，", "不,"].iter().any(|start| head.trim_start().starts_with(start));
    starts_with_no || CORRECTIONS.iter().any(|marker| head.contains(marker))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::ToolCall;

    fn turn(role: Role, text: &str) -> Turn {
        Turn { role, text: text.into(), tool_calls: vec![], tool: None, is_error: false, fingerprint: String::new() }
    }

    fn call(name: &str) -> Turn {
        Turn { tool_calls: vec![ToolCall { name: name.into(), arguments: "{}".into() }], ..turn(Role::Assistant, "") }
    }

    #[test]
    fn a_short_chat_is_skipped() {
        let chat = [turn(Role::User, "hi"), turn(Role::Assistant, "Hello! How can I help?")];
        let assessment = assess(&chat);
        assert!(!assessment.worth_extracting());
        assert_eq!(assessment.skip, Some("no tool use, no error and no correction"));
    }

    #[test]
    fn tool_use_errors_and_corrections_are_worth_it() {
        assert!(assess(&[turn(Role::User, "list files"), call("exec")]).worth_extracting());
        let corrected = [
            turn(Role::User, "how do I pin a dependency in cargo?"),
            turn(Role::Assistant, "Use `cargo pin`."),
            turn(Role::User, "No, that doesn't exist; it's `=1.2.3` in Cargo.toml"),
            turn(Role::Assistant, "You're right."),
        ];
        assert_eq!(assess(&corrected).corrections, 1);
        assert!(assess(&corrected).worth_extracting());
        let chinese = [turn(Role::User, "怎么办"), turn(Role::Assistant, "用 A"), turn(Role::User, "不对，应该用 B")];
        assert!(assess(&chinese).worth_extracting());
    }

    #[test]
    fn knowhub_and_discovery_tools_are_not_tool_use() {
        let only_knowhub = [turn(Role::User, "hi"), call("kb_search"), call("tool_search")];
        assert!(!assess(&only_knowhub).worth_extracting());
        assert!(!assess(&[turn(Role::User, "just a question")]).worth_extracting());
    }
}
