//! The experience record: what was tried, with what, what came of it, and how good it was.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A stable, sortable experience id: a ULID in its 26-character Crockford base32 form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExperienceId(String);

impl ExperienceId {
    /// A new id for an experience created at `unix_ms`.
    pub fn generate(unix_ms: u64) -> ExperienceId {
        let ulid = ulid::Ulid::from_parts(unix_ms, rand_bits());
        ExperienceId(ulid.to_string())
    }

    /// Parses an id given by a client; `None` when it is not a well-formed id.
    pub fn parse(text: &str) -> Option<ExperienceId> {
        let trimmed = text.trim();
        let canonical = ulid::Ulid::from_string(trimmed).ok()?.to_string();
        // The ulid crate decodes a first character above `7` by silently dropping the overflow, so
        // `8ZZ…` would come back as the different id `0ZZ…`. Only an exact round trip is an id.
        canonical.eq_ignore_ascii_case(trimmed).then_some(ExperienceId(canonical))
    }

    /// Wraps an id read back from storage, which was validated when it was written.
    pub fn from_stored(text: String) -> ExperienceId {
        ExperienceId(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExperienceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An [`ExperienceId`] as its 128 bits, for in-memory indexes of every experience: 16 bytes
/// inline where a `String` costs 24 bytes plus a 32-byte allocation. An array rather than a
/// `u128`, whose 16-byte alignment would pad every map entry it sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExperienceKey([u8; 16]);

impl ExperienceKey {
    /// The key of an id in its canonical form, as the store writes them; `None` for anything
    /// else, so that [`ExperienceKey::to_id`] always gives back exactly the id it came from.
    pub fn parse(id: &str) -> Option<ExperienceKey> {
        let ulid = ulid::Ulid::from_string(id).ok()?;
        let mut buffer = [0u8; ulid::ULID_LEN];
        let canonical = ulid.array_to_str(&mut buffer);
        (canonical == id).then_some(ExperienceKey(ulid.0.to_be_bytes()))
    }

    /// The id this key was parsed from.
    pub fn to_id(self) -> String {
        ulid::Ulid(u128::from_be_bytes(self.0)).to_string()
    }
}

/// Random low bits of a ULID. Ids only need to be unique, not unpredictable, so a hash of the
/// time, the process and a counter is enough and keeps the crate free of an RNG dependency.
fn rand_bits() -> u128 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos())
        .unwrap_or(0);
    let mut hasher = blake3::Hasher::new();
    hasher.update(&nanos.to_le_bytes());
    hasher.update(&std::process::id().to_le_bytes());
    hasher.update(&count.to_le_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest.as_bytes()[..16]);
    u128::from_le_bytes(bytes) & ((1u128 << 80) - 1)
}

/// Whether an experience may be found by search and injected into prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Searchable and eligible for auto-recall.
    Active,
    /// Held for review: extracted experiences awaiting approval, or suspected prompt injections.
    Pending,
    /// Reviewed and refused; kept so the same proposal is not queued again.
    Rejected,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Pending => "pending",
            Status::Rejected => "rejected",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        match text {
            "active" => Some(Status::Active),
            "pending" => Some(Status::Pending),
            "rejected" => Some(Status::Rejected),
            _ => None,
        }
    }
}

/// The flag of an experience the user approved (`kbctl approve`, the Control UI): a teammate's
/// or an extracted experience reaches agents only with it, or from an author the user trusts.
pub const REVIEWED_FLAG: &str = "reviewed";

/// The most variants one teammate's copies keep of one experience: the newest (`kb_store`'s
/// `variants.rs`; the user's own and extracted copies are not bounded).
pub const TEAMMATE_VARIANTS_PER_AUTHOR: usize = 20;

/// The most text (bytes of task, resource, result and content) one teammate's variants keep of
/// one experience: the newest that fit, and always the newest one.
pub const TEAMMATE_VARIANT_BYTES_PER_AUTHOR: u64 = 256 * 1024;

/// Where an experience came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Tool,
    Extraction,
    Import,
    Cli,
    /// Pulled from the team's hub: a teammate's experience (its origin is in the store).
    Hub,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Tool => "tool",
            Source::Extraction => "extraction",
            Source::Import => "import",
            Source::Cli => "cli",
            Source::Hub => "hub",
        }
    }

    pub fn parse(text: &str) -> Option<Source> {
        match text {
            "tool" => Some(Source::Tool),
            "extraction" => Some(Source::Extraction),
            "import" => Some(Source::Import),
            "cli" => Some(Source::Cli),
            "hub" => Some(Source::Hub),
            _ => None,
        }
    }
}

/// An experience as a client proposes it, before the gate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewExperience {
    pub task: String,
    pub resource: String,
    pub result: String,
    /// The rating 1–5; `None` means the default of 3.
    pub score: Option<i64>,
    pub content: Option<String>,
    pub content_type: Option<String>,
    pub agent_id: Option<String>,
    pub submitted_by: Option<String>,
    pub session_key: Option<String>,
    pub source: Option<Source>,
    pub confidence: Option<f64>,
}

impl Source {
    /// Whether experiences of this source came from somewhere other than this user's own
    /// agents and tools: a teammate (the hub) or an LLM's extraction.
    pub fn is_foreign(self) -> bool {
        matches!(self, Source::Hub | Source::Extraction)
    }
}

/// A stored experience, as the store hands it out (without its detailed content).
#[derive(Debug, Clone, PartialEq)]
pub struct Experience {
    pub id: ExperienceId,
    pub task: String,
    pub resource: String,
    pub result: String,
    pub score: u8,
    pub has_content: bool,
    pub content_type: Option<String>,
    pub agent_id: Option<String>,
    pub submitted_by: Option<String>,
    pub session_key: Option<String>,
    pub source: Source,
    pub status: Status,
    pub confidence: Option<f64>,
    /// Why the gate flagged it, e.g. `prompt_injection`.
    pub flags: Vec<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// Times the same experience was submitted again and merged into this one.
    pub merge_count: i64,
    /// Times it was returned by search or injected by auto-recall.
    pub recall_count: i64,
}

impl Experience {
    /// Whether the user approved it (see [`REVIEWED_FLAG`]).
    pub fn reviewed(&self) -> bool {
        self.flags.iter().any(|flag| flag == REVIEWED_FLAG)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn an_experience_key_gives_back_exactly_the_stored_id() {
        for unix_ms in [0, 1_700_000_000_000, (1 << 48) - 1] {
            let id = ExperienceId::generate(unix_ms);
            let key = ExperienceKey::parse(id.as_str()).expect("a generated id has a key");
            assert_eq!(key.to_id(), id.as_str());
        }
        // Only the canonical form: a lowercased id would come back as another string.
        let id = ExperienceId::generate(1_700_000_000_000);
        assert_eq!(ExperienceKey::parse(&id.as_str().to_lowercase()), None);
        for not_an_id in ["", "exp-1", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", " 01ARZ3NDEKTSV4RRFFQ69G5FAV"] {
            assert_eq!(ExperienceKey::parse(not_an_id), None, "{not_an_id:?}");
        }
        // Keys order like the ids: oldest first.
        let (older, newer) = (ExperienceId::generate(1_000), ExperienceId::generate(2_000));
        assert!(ExperienceKey::parse(older.as_str()) < ExperienceKey::parse(newer.as_str()));
    }

    #[test]
    fn generated_id_parses_back_to_itself() {
        let id = ExperienceId::generate(1_700_000_000_000);
        assert_eq!(id.as_str().len(), 26);
        assert_eq!(ExperienceId::parse(id.as_str()), Some(id.clone()));
        // Clients may send it lowercased or padded; it comes back in canonical form.
        assert_eq!(ExperienceId::parse(&format!("  {}\n", id.as_str().to_lowercase())), Some(id.clone()));
        assert_eq!(ExperienceId::from_stored(id.to_string()), id);
    }

    #[test]
    fn malformed_ids_are_refused() {
        for text in ["", "   ", "not-an-id", "01HZZZZZZZZZZZZZZZZZZZZZZ", "01HZZZZZZZZZZZZZZZZZZZZZZZZ"] {
            assert_eq!(ExperienceId::parse(text), None, "{text:?}");
        }
    }

    /// Regression: `parse("8ZZZZZZZZZZZZZZZZZZZZZZZZZ")` returned `0ZZZZZZZZZZZZZZZZZZZZZZZZZ`,
    /// because the ulid crate drops the bits above 128 instead of failing, so a malformed id named
    /// a different, possibly existing, experience.
    #[test]
    fn ids_beyond_128_bits_do_not_alias_other_ids() {
        for text in ["8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "ZZZZZZZZZZZZZZZZZZZZZZZZZZ", "80000000000000000000000000"] {
            assert_eq!(ExperienceId::parse(text), None, "{text:?}");
        }
        assert!(ExperienceId::parse("7ZZZZZZZZZZZZZZZZZZZZZZZZZ").is_some());
    }

    #[test]
    fn ten_thousand_ids_in_the_same_millisecond_are_unique() {
        let ids: HashSet<ExperienceId> = (0..10_000).map(|_| ExperienceId::generate(1_700_000_000_000)).collect();
        assert_eq!(ids.len(), 10_000);
    }

    #[test]
    fn ids_sort_by_creation_time() {
        let times = [0, 1, 999, 1_000, 1_700_000_000_000, 1_700_000_000_001, 4_102_444_800_000];
        let ids: Vec<ExperienceId> = times.iter().map(|&unix_ms| ExperienceId::generate(unix_ms)).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids);
        // The string form sorts the same way, so the store can order by the text column.
        let mut as_text: Vec<&str> = ids.iter().map(ExperienceId::as_str).collect();
        as_text.sort_unstable();
        assert_eq!(as_text, ids.iter().map(ExperienceId::as_str).collect::<Vec<_>>());
    }

    #[test]
    fn id_serializes_as_a_plain_string() {
        let id = ExperienceId::generate(1_700_000_000_000);
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<ExperienceId>(&json).unwrap(), id);
    }

    #[test]
    fn status_and_source_names_round_trip() {
        for status in [Status::Active, Status::Pending, Status::Rejected] {
            assert_eq!(Status::parse(status.as_str()), Some(status));
            assert_eq!(serde_json::to_string(&status).unwrap(), format!("\"{}\"", status.as_str()));
        }
        for source in [Source::Tool, Source::Extraction, Source::Import, Source::Cli, Source::Hub] {
            assert_eq!(Source::parse(source.as_str()), Some(source));
            assert_eq!(serde_json::to_string(&source).unwrap(), format!("\"{}\"", source.as_str()));
        }
        assert_eq!(Status::parse("Active"), None);
        assert_eq!(Source::parse(""), None);
    }
}
