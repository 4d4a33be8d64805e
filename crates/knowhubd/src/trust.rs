//! Trust by provenance: what reaches an agent's prompt (auto-recall, the agent's `kb_search`
//! and `kb_content`) is decided by where an experience came from, not by how it is worded.
//!
//! This user's own agents and tools (sources `tool`, `cli`, `import`) are trusted as before. A
//! teammate's experience (pulled from the hub) or an extracted one (an LLM's proposal, stored
//! active when `requireApproval` is off) reaches agents only once the user approved it (the
//! `reviewed` flag, set by `kbctl approve` or the Control UI, and dropped when a teammate's
//! change is pulled) or, for a teammate's, when its author is in `[hub] trusted`. Until then it is
//! shown to the user, marked ("from teammate alice, not reviewed"), in `kbctl search`, `show`,
//! `pending` and `review`. The source is set by this daemon (the hub pull writes `hub`,
//! extraction writes `extraction`), never taken from the text or its metadata, so a teammate
//! cannot claim to be the user's own agent through `agent_id` or `submitted_by`.

use kb_core::{Experience, Source};
use kb_engine::Engine;
use kb_engine::engine::Found;

/// Where an experience came from and whether agents may see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    pub origin: Origin,
    /// The user approved it.
    pub reviewed: bool,
    /// A teammate's whose author the user trusts (`[hub] trusted`).
    pub trusted: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// This user's own agents, `kbctl submit` or an import.
    Own,
    /// A teammate's, by its author on the hub (`None` when the hub's record of it is gone).
    Teammate(Option<String>),
    /// Proposed by the extraction LLM from a conversation.
    Extracted,
}

impl Provenance {
    /// The provenance of `experience`; `trusted` is the list of trusted teammates. A teammate's
    /// is looked up for its author: a search hit comes with it ([`Provenance::of_found`]).
    pub fn of(engine: &Engine, trusted: &[String], experience: &Experience) -> Provenance {
        Provenance::with_author(trusted, experience, || engine.hub_author(experience.id.as_str()).ok().flatten())
    }

    /// The provenance of a search hit, from the author its search read with it.
    pub fn of_found(trusted: &[String], found: &Found) -> Provenance {
        Provenance::with_author(trusted, &found.experience, || found.author.clone())
    }

    /// `author` gives a teammate's experience's author; it is asked only for a teammate's.
    fn with_author(trusted: &[String], experience: &Experience, author: impl FnOnce() -> Option<String>) -> Provenance {
        let reviewed = experience.reviewed();
        match experience.source {
            Source::Hub => {
                let author = author();
                let is_trusted = author.as_ref().is_some_and(|author| trusted.iter().any(|name| name == author));
                Provenance { origin: Origin::Teammate(author), reviewed, trusted: is_trusted }
            }
            Source::Extraction => Provenance { origin: Origin::Extracted, reviewed, trusted: false },
            Source::Tool | Source::Cli | Source::Import => Provenance { origin: Origin::Own, reviewed, trusted: false },
        }
    }

    /// Whether it may reach an agent's prompt.
    pub fn usable_by_agents(&self) -> bool {
        self.origin == Origin::Own || self.reviewed || self.trusted
    }

    /// How it is marked for the user; `None` for the user's own.
    pub fn label(&self) -> Option<String> {
        let who = match &self.origin {
            Origin::Own => return None,
            Origin::Teammate(Some(author)) => format!("from teammate {}", kb_core::display::shown_login(author)),
            Origin::Teammate(None) => "from a teammate".to_owned(),
            Origin::Extracted => "extracted from a conversation".to_owned(),
        };
        let state = if self.reviewed {
            "reviewed"
        } else if self.trusted {
            "trusted author, not reviewed"
        } else {
            "not reviewed: agents do not see it until you approve it"
        };
        Some(format!("{who}, {state}"))
    }
}

/// How an experience that passed [`agents_may_see`] is marked in an agent's prompt; `None` for the
/// user's own. Pure: the filter already decided it may be shown.
pub fn agent_note(experience: &Experience) -> Option<&'static str> {
    match (experience.source, experience.reviewed()) {
        (Source::Hub, true) => Some("a teammate's, reviewed by the user"),
        (Source::Hub, false) => Some("a teammate's, from an author the user trusts"),
        (Source::Extraction, _) => Some("extracted from a conversation, reviewed by the user"),
        _ => None,
    }
}

/// Whether an agent may see a hit: the user's own, and teammates' and extracted ones the user
/// reviewed or whose author they trust. A search's `visible` filter
/// (`kb_engine::engine::SearchQuery::visible`), so that hits agents may not see never take
/// the places of those they may.
pub fn agents_may_see(trusted: &[String], item: &Found) -> bool {
    let keep = Provenance::of_found(trusted, item).usable_by_agents();
    if !keep {
        tracing::debug!(id = %item.experience.id, "not showing agents an unreviewed experience");
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provenance(origin: Origin, reviewed: bool, trusted: bool) -> Provenance {
        Provenance { origin, reviewed, trusted }
    }

    #[test]
    fn only_own_reviewed_or_trusted_experiences_reach_agents() {
        let alice = || Origin::Teammate(Some("alice".to_owned()));
        assert!(provenance(Origin::Own, false, false).usable_by_agents());
        assert!(!provenance(alice(), false, false).usable_by_agents());
        assert!(provenance(alice(), true, false).usable_by_agents());
        assert!(provenance(alice(), false, true).usable_by_agents());
        assert!(!provenance(Origin::Extracted, false, false).usable_by_agents());
        assert!(provenance(Origin::Extracted, true, false).usable_by_agents());
        assert!(!provenance(Origin::Teammate(None), false, false).usable_by_agents());
    }

    #[test]
    fn a_login_mixing_scripts_cannot_pass_for_an_ascii_one() {
        let label = provenance(Origin::Teammate(Some("b\u{43e}b".to_owned())), false, false).label().unwrap();
        assert!(label.starts_with("from teammate b\\u{43e}b, "), "{label}");
    }

    #[test]
    fn labels_say_where_from_and_whether_reviewed() {
        let alice = Origin::Teammate(Some("alice".to_owned()));
        assert_eq!(provenance(Origin::Own, false, false).label(), None);
        assert_eq!(
            provenance(alice.clone(), false, false).label().unwrap(),
            "from teammate alice, not reviewed: agents do not see it until you approve it"
        );
        assert_eq!(provenance(alice.clone(), true, false).label().unwrap(), "from teammate alice, reviewed");
        assert_eq!(
            provenance(alice, false, true).label().unwrap(),
            "from teammate alice, trusted author, not reviewed"
        );
        assert!(provenance(Origin::Extracted, false, false).label().unwrap().starts_with("extracted"));
    }
}
