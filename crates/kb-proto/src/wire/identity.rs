//! `daemon.prove`: the daemon proves it can read the key only the user can read
//! (`crate::identity`), and `status.identity` says whether it could write that key.

use serde::{Deserialize, Serialize};

/// `daemon.prove`'s parameters: a fresh nonce of `identity::NONCE_BYTES` random bytes, in hex.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProveParams {
    pub nonce: String,
}

/// `daemon.prove`'s answer: HMAC-SHA256(key, `identity::DOMAIN` ‖ nonce), in hex.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProveResult {
    pub proof: String,
}

/// The daemon's key for `daemon.prove`, in `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentityStatus {
    /// Where the key is (`<socket>.key`).
    pub key_file: String,
    /// The key was written there at this start: clients can verify the daemon.
    pub ready: bool,
    /// Why it could not be written; the OpenClaw plugin refuses the daemon meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
