//! Cues that read past the sentence of an action: an action someone else proposed or a
//! document suggests, rejected right after ("an agent proposed `git push --force origin main`.
//! Rejected."), an action someone else took in a text that reports an incident ("Postmortem:
//! an engineer ran `kubectl delete ns production` …"), and lists of commands that one negation,
//! verdict or frame covers ("严禁执行 `rm -rf`、`DROP`、`FLUSHALL`", "`curl -k`, `verify=False` …
//! fail the CI lint"). The word lists are in `cues.rs`; every look is bounded.

use super::{Compiled, first_bytes, last_bytes, last_sentence};

/// How far after a reported action a rejection is looked for (bytes): the sentence and the
/// next one or two.
const REJECTION_WINDOW: usize = 240;

/// Whether the action at `start..end` of `view` is reported (someone proposed it, a document
/// suggests it: a reporter earlier in its sentence) and rejected within the window after it,
/// or taken by someone else in a text that opens as an incident report; and nothing after says
/// to do it again.
pub(super) fn reported_not_advised(compiled: &Compiled, view: &str, start: usize, end: usize) -> bool {
    let sentence_before = last_sentence(&view[..start], 200);
    let after = first_bytes(&view[end..], REJECTION_WINDOW);
    if compiled.done_again.is_match(after) {
        return false;
    }
    // Taken back by its writer right after: "`curl -k` on localhost… actually no, I switched to …".
    if compiled.self_correction.is_match(first_bytes(after, 80)) {
        return true;
    }
    // A document's or someone's advice named under a condition: "when a README says `curl … |
    // sh`, download the script …".
    if compiled.conditional_report.is_match(sentence_before) {
        return true;
    }
    let first_line = first_bytes(view.lines().next().unwrap_or(""), 60);
    let report_genre = compiled.report_genre.is_match(first_line);
    if (report_genre || compiled.reporter.is_match(sentence_before)) && compiled.rejection.is_match(after) {
        return true;
    }
    report_genre
        && compiled.third_person.is_match(sentence_before)
        && !compiled.done_again.is_match(last_bytes(view, 400))
}

/// What separates the items of a list of commands: "rm -rf 、 drop 、", "`-k`, `--insecure`",
/// "-k or --insecure", "A 和 B".
const LIST_SEPARATORS: &[&str] = &["、", ",", "/", " or", " and", "或", "和", "及"];

/// `text` without a list separator at its end, if it has one. After a comma, "or" or "and" the
/// item before must be a command's word, in ASCII ("No pastebin, file.io"): a Chinese clause
/// before a comma ("数据不用备份，") is not a list item.
fn strip_separator(text: &str) -> Option<&str> {
    let trimmed = text.trim_end();
    LIST_SEPARATORS.iter().find_map(|separator| {
        let rest = trimmed.strip_suffix(separator)?;
        let last_word = rest.split_whitespace().last()?;
        let item_ok = *separator == "、" || last_word.is_ascii();
        item_ok.then_some(rest)
    })
}

/// When `before` ends a list ("执行 rm -rf 、 drop 、", "retry with -k or"), the text up to its
/// first item ("执行 rm -rf", "retry with -k"), so that a negation or a frame before the list
/// covers each item; `None` otherwise. An item is at most three words, a list at most eight
/// items.
pub(super) fn before_list(before: &str) -> Option<&str> {
    let mut rest = strip_separator(last_bytes(before, 400))?;
    for _ in 0..8 {
        let trimmed = rest.trim_end();
        // The item before the separator: its last one to three words, if another separator
        // stands before them.
        let found = (1..=3).find_map(|n| {
            let parts: Vec<&str> = trimmed.rsplitn(n + 1, char::is_whitespace).collect();
            if parts.len() != n + 1 {
                return None;
            }
            strip_separator(parts[n])
        });
        match found {
            Some(shorter) if shorter.len() < rest.len() => rest = shorter,
            _ => return Some(rest),
        }
    }
    Some(rest)
}
