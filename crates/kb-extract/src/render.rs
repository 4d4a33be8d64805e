//! A transcript rendered for the LLM within a token budget. Each turn is a numbered block (the
//! numbers are what a proposal's `evidence` refers to). When the whole does not fit, tool output
//! is cut first (keeping its head and tail, where errors and summaries are), then tool arguments
//! and long texts, and last the oldest turns are left out (the first user turn, the task, stays).

use crate::transcript::{Role, Turn};

/// Tokens of `text`, estimated without a tokenizer: a CJK character is about one token, other
/// text about four characters a token.
pub fn estimate_tokens(text: &str) -> usize {
    let mut tally = TokenTally::default();
    tally.add(text);
    tally.tokens() as usize
}

/// [`estimate_tokens`] of a text read in pieces (an answer as it arrives): the sum of the pieces
/// added is counted as the whole text would be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenTally {
    wide: u64,
    other: u64,
}

impl TokenTally {
    pub fn add(&mut self, text: &str) {
        for ch in text.chars() {
            self.add_char(ch);
        }
    }

    pub fn add_char(&mut self, ch: char) {
        if is_wide(ch) {
            self.wide += 1;
        } else {
            self.other += 1;
        }
    }

    /// Counts bytes that are not text (invalid UTF-8) as other characters, one each.
    pub fn add_other(&mut self, n: u64) {
        self.other = self.other.saturating_add(n);
    }

    pub fn tokens(&self) -> u64 {
        self.wide.saturating_add(self.other.div_ceil(4))
    }
}

fn is_wide(ch: char) -> bool {
    matches!(ch as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// What is sent, and what it saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    /// Estimated tokens of the whole transcript, rendered without cuts.
    pub tokens_raw: usize,
    /// Estimated tokens of `text`.
    pub tokens_sent: usize,
    /// Turns left out for the budget.
    pub turns_left_out: usize,
}

/// Limits tried in turn, each stricter, until the transcript fits: characters kept of each tool
/// output, of each tool call's arguments, and of each user or assistant text.
const STEPS: [(usize, usize, usize); 6] = [
    (usize::MAX, usize::MAX, usize::MAX),
    (4_000, 2_000, usize::MAX),
    (1_500, 800, 4_000),
    (600, 300, 2_000),
    (250, 200, 1_000),
    (120, 120, 600),
];

/// Renders `turns` (numbered from 1) within about `budget_tokens`.
pub fn render(turns: &[Turn], budget_tokens: usize) -> Rendered {
    let full = render_with(turns, STEPS[0], &[]);
    let tokens_raw = estimate_tokens(&full);
    if tokens_raw <= budget_tokens {
        return Rendered { text: full, tokens_raw, tokens_sent: tokens_raw, turns_left_out: 0 };
    }
    let mut limits = STEPS[STEPS.len() - 1];
    for step in &STEPS[1..] {
        let text = render_with(turns, *step, &[]);
        let tokens = estimate_tokens(&text);
        if tokens <= budget_tokens {
            return Rendered { text, tokens_raw, tokens_sent: tokens, turns_left_out: 0 };
        }
        limits = *step;
    }
    // Still too long at the strictest cut: leave out the oldest turns, keeping the first user
    // turn (the task), until it fits.
    let keep_first = turns.iter().position(|turn| turn.role == Role::User);
    let mut left_out: Vec<usize> = Vec::new();
    let mut text = render_with(turns, limits, &left_out);
    for index in 0..turns.len() {
        if estimate_tokens(&text) <= budget_tokens {
            break;
        }
        if Some(index) == keep_first || index + 1 == turns.len() {
            continue;
        }
        left_out.push(index);
        text = render_with(turns, limits, &left_out);
    }
    let tokens_sent = estimate_tokens(&text);
    Rendered { text, tokens_raw, tokens_sent, turns_left_out: left_out.len() }
}

fn render_with(turns: &[Turn], (output, arguments, prose): (usize, usize, usize), left_out: &[usize]) -> String {
    let mut out = String::new();
    let mut skipped = 0usize;
    for (index, turn) in turns.iter().enumerate() {
        if left_out.contains(&index) {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            out.push_str(&format!("[{skipped} earlier turns left out]\n\n"));
            skipped = 0;
        }
        let number = index + 1;
        let error = if turn.is_error { " (error)" } else { "" };
        match turn.role {
            Role::User => out.push_str(&format!("#{number} user:\n{}\n", cut(&turn.text, prose))),
            Role::Assistant => {
                out.push_str(&format!("#{number} assistant{error}:\n"));
                if !turn.text.is_empty() {
                    out.push_str(&cut(&turn.text, prose));
                    out.push('\n');
                }
                for call in &turn.tool_calls {
                    out.push_str(&format!("-> calls {}", call.name));
                    push_arguments(&mut out, &cut(&call.arguments, arguments));
                }
            }
            Role::Tool => {
                let tool = turn.tool.as_deref().unwrap_or("tool");
                out.push_str(&format!("#{number} result of {tool}{error}:\n"));
                for call in &turn.tool_calls {
                    out.push_str("(called with");
                    push_arguments(&mut out, &cut(&call.arguments, arguments));
                }
                out.push_str(&cut(&turn.text, output));
                out.push('\n');
            }
            Role::Summary => {
                out.push_str(&format!("#{number} summary of earlier history:\n{}\n", cut(&turn.text, prose)))
            }
        }
        out.push('\n');
    }
    out
}

/// A call's readable arguments after what names the call: indented lines below it.
fn push_arguments(out: &mut String, arguments: &str) {
    if !arguments.is_empty() {
        out.push(':');
        for line in arguments.lines() {
            out.push_str("\n    ");
            out.push_str(line);
        }
    }
    out.push('\n');
}

/// `text` cut to about `limit` characters: its head and its tail, with what was cut in between.
fn cut(text: &str, limit: usize) -> String {
    let count = text.chars().count();
    if count <= limit {
        return text.to_owned();
    }
    let head = limit * 2 / 3;
    let tail = limit - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!("{start}\n[… {} characters cut …]\n{end}", count - head - tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::ToolCall;

    fn turn(role: Role, text: &str) -> Turn {
        Turn { role, text: text.into(), tool_calls: vec![], tool: None, is_error: false, fingerprint: String::new() }
    }

    #[test]
    fn a_transcript_that_fits_is_sent_whole_and_numbered() {
        let turns = [
            turn(Role::User, "build it"),
            Turn {
                tool_calls: vec![ToolCall { name: "exec".into(), arguments: "command: make".into() }],
                ..turn(Role::Assistant, "")
            },
            Turn { tool: Some("exec".into()), is_error: true, ..turn(Role::Tool, "make: *** No rule") },
        ];
        let rendered = render(&turns, 1_000);
        assert_eq!(rendered.tokens_raw, rendered.tokens_sent);
        assert!(rendered.text.contains("#1 user:\nbuild it"), "{}", rendered.text);
        assert!(rendered.text.contains("#2 assistant:\n-> calls exec:\n    command: make\n"), "{}", rendered.text);
        assert!(rendered.text.contains("#3 result of exec (error):\nmake: *** No rule"), "{}", rendered.text);
    }

    #[test]
    fn tool_output_is_cut_first_and_keeps_its_tail() {
        let output = format!("{}\nerror: the real cause", "log line\n".repeat(2_000));
        let turns = [
            turn(Role::User, "run the tests"),
            Turn { tool: Some("exec".into()), ..turn(Role::Tool, &output) },
            turn(Role::Assistant, "The tests fail because of the real cause."),
        ];
        let rendered = render(&turns, 1_000);
        assert!(rendered.tokens_sent <= 1_000, "{}", rendered.tokens_sent);
        assert!(rendered.tokens_raw > 4_000);
        assert!(rendered.text.contains("error: the real cause"));
        assert!(rendered.text.contains("The tests fail because of the real cause."));
        assert_eq!(rendered.turns_left_out, 0);
    }

    #[test]
    fn the_oldest_turns_go_last_but_the_task_stays() {
        let mut turns = vec![turn(Role::User, "the task: migrate the database")];
        for step in 0..200 {
            turns.push(turn(Role::Assistant, &format!("step {step}: {}", "x".repeat(500))));
        }
        let rendered = render(&turns, 2_000);
        assert!(rendered.tokens_sent <= 2_000, "{}", rendered.tokens_sent);
        assert!(rendered.turns_left_out > 0);
        assert!(rendered.text.starts_with("#1 user:\nthe task: migrate the database"));
        assert!(rendered.text.contains("step 199"));
        assert!(rendered.text.contains("earlier turns left out"));
    }

    #[test]
    fn tokens_are_estimated_for_chinese_and_english() {
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(estimate_tokens("部署失败"), 4);
    }
}
