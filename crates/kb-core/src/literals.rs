//! Literals one of which every match of a regular expression holds, read from its parsed
//! pattern (`regex_syntax`): a vendor's prefix, a secret's name, a command's word. A text that
//! holds none of a pattern's literals (ignoring ASCII case) cannot match it, so one
//! Aho-Corasick scan for the literals of many patterns says which of them are worth running
//! (`matchset.rs` for the gate's sets, `redact/anchors.rs` for the readings of a text).
//!
//! The literals are runs of literal characters and small classes in a concatenation (a class
//! of up to 8 characters, both ASCII cases counting once, makes one literal per character),
//! unions over the branches of an alternation, each at least two characters long, ASCII
//! letters in lower case. A pattern for which no such set is found gets `None`: it is always
//! run.

use regex_syntax::hir::{Class, Hir, HirKind};

/// Literals, one of which every match of `pattern` holds (ignoring ASCII case), or `None` when
/// no set of literals of at least two characters each is found.
pub(crate) fn literals_of(pattern: &str) -> Option<Vec<Vec<u8>>> {
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    let literals = required(&hir)?;
    Some(literals.into_iter().map(String::into_bytes).collect())
}

/// The most literals one set may hold (a cross product of small classes, an alternation).
const MAX_LITERALS: usize = 256;

/// Literals (ASCII letters in lower case), one of which every match of `hir` holds (ignoring ASCII case), each at
/// least two characters long; `None` when none is found.
fn required(hir: &Hir) -> Option<Vec<String>> {
    match hir.kind() {
        HirKind::Literal(_) | HirKind::Class(_) => atom(hir).filter(|literals| usable(literals)),
        HirKind::Capture(capture) => required(&capture.sub),
        HirKind::Repetition(repetition) if repetition.min >= 1 => required(&repetition.sub),
        HirKind::Alternation(branches) => {
            let mut all: Vec<String> = Vec::new();
            for branch in branches {
                all.extend(required(branch)?);
                if all.len() > MAX_LITERALS {
                    return None;
                }
            }
            all.sort();
            all.dedup();
            Some(all)
        }
        HirKind::Concat(children) => {
            // Runs of literals and small classes make longer literals; zero-width assertions
            // inside a run leave it whole. The best candidate is the one whose shortest literal
            // is longest.
            let mut best: Option<Vec<String>> = None;
            let mut consider = |candidate: Option<Vec<String>>| {
                if let Some(candidate) = candidate.filter(|literals| usable(literals))
                    && best.as_ref().is_none_or(|best| shortest(&candidate) > shortest(best))
                {
                    best = Some(candidate);
                }
            };
            let mut run: Option<Vec<String>> = None;
            for child in children {
                if matches!(child.kind(), HirKind::Look(_)) {
                    continue;
                }
                match atom(child) {
                    Some(next) => {
                        run = Some(match run.take() {
                            None => next,
                            Some(so_far) if so_far.len() * next.len() <= MAX_LITERALS => so_far
                                .iter()
                                .flat_map(|prefix| next.iter().map(move |rest| format!("{prefix}{rest}")))
                                .collect(),
                            Some(so_far) => {
                                consider(Some(so_far));
                                next
                            }
                        });
                    }
                    None => {
                        consider(run.take());
                        consider(required(child));
                    }
                }
            }
            consider(run);
            best
        }
        HirKind::Empty | HirKind::Look(_) | HirKind::Repetition(_) => None,
    }
}

/// A literal, or a class of at most 8 characters (upper and lower case of an ASCII letter count
/// as one), as strings of one match each, ASCII letters in lower case (only ASCII: the automaton
/// ignores only ASCII case, and other letters' lower case can be another length).
fn atom(hir: &Hir) -> Option<Vec<String>> {
    match hir.kind() {
        HirKind::Literal(literal) => Some(vec![std::str::from_utf8(&literal.0).ok()?.to_ascii_lowercase()]),
        HirKind::Class(Class::Unicode(class)) => {
            let n_chars: u32 =
                class.ranges().iter().map(|range| u32::from(range.end()) - u32::from(range.start()) + 1).sum();
            small_class(n_chars as usize, class.ranges().iter().flat_map(|range| range.start()..=range.end()))
        }
        HirKind::Class(Class::Bytes(class)) => {
            let bytes = class.ranges().iter().flat_map(|range| range.start()..=range.end());
            // A byte outside ASCII is part of a character the literal cannot name.
            if bytes.clone().any(|byte| !byte.is_ascii()) {
                return None;
            }
            let n_bytes: usize = class.ranges().iter().map(|range| usize::from(range.end() - range.start()) + 1).sum();
            small_class(n_bytes, bytes.map(char::from))
        }
        HirKind::Capture(capture) => atom(&capture.sub),
        _ => None,
    }
}

/// A class of `n_chars` characters as strings of one character each (ASCII letters in lower
/// case, so that both cases of one count once), if it is small enough to name.
fn small_class(n_chars: usize, chars: impl Iterator<Item = char>) -> Option<Vec<String>> {
    if n_chars > 16 {
        return None;
    }
    let mut chars: Vec<String> = chars.map(|ch| ch.to_ascii_lowercase().to_string()).collect();
    chars.sort();
    chars.dedup();
    (chars.len() <= 8).then_some(chars)
}

fn shortest(literals: &[String]) -> usize {
    literals.iter().map(|literal| literal.chars().count()).min().unwrap_or(0)
}

fn usable(literals: &[String]) -> bool {
    !literals.is_empty() && literals.len() <= MAX_LITERALS && shortest(literals) >= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literals(pattern: &str) -> Option<Vec<String>> {
        literals_of(pattern).map(|all| all.into_iter().map(|literal| String::from_utf8(literal).unwrap()).collect())
    }

    #[test]
    fn literals_are_read_from_runs_branches_and_small_classes() {
        assert_eq!(literals(r"\bcurl\b.*\|\s*sh\b"), Some(vec!["curl".to_owned()]));
        assert_eq!(literals(r"(?:ghp|gho)_[A-Za-z0-9]{36}"), Some(vec!["gho".to_owned(), "ghp".to_owned()]));
        assert_eq!(literals(r"忽略.{0,8}指令"), Some(vec!["忽略".to_owned()]));
        // Case-insensitive: ASCII in lower case, and the other letters a case folds to (the
        // Kelvin sign is a `k`).
        assert_eq!(literals(r"(?i)key"), Some(vec!["key".to_owned(), "\u{212a}ey".to_owned()]));
    }

    #[test]
    fn a_pattern_without_a_required_literal_has_none() {
        for pattern in [r"[0-9]{3}-[0-9]{4}", r"(?:curl|x)", r"a?b?c?", r"", r"\w+@\w+", "(unclosed"] {
            assert_eq!(literals(pattern), None, "{pattern}");
        }
    }
}
