//! `hook.event`: an OpenClaw hook forwarded by the plugin.

use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// hook.event

/// One OpenClaw hook, as the plugin stub forwards it: the uniform envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookEventParams {
    pub hook: String,
    /// When the hook fired, in milliseconds since the epoch (or an RFC 3339 string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<serde_json::Value>,
    /// The hook's event object, as OpenClaw passed it (stripped of secrets and functions).
    #[serde(default)]
    pub event: serde_json::Value,
    /// The hook's context object (agent, session, run ids), stripped likewise.
    #[serde(default)]
    pub ctx: serde_json::Value,
    /// The plugin's configuration, so the daemon applies the user's choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<HookConfigParams>,
}

/// The plugin configuration keys the daemon acts on. Other keys of the plugin's config are
/// accepted and ignored, so a newer stub keeps working with this daemon.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookConfigParams {
    /// off, minimal, normal or aggressive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reminder_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_recall: Option<bool>,
    /// agent_end or before_compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extraction_trigger: Option<String>,
    /// Whether finished conversations are sent to an LLM to extract experiences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_server_extraction: Option<bool>,
    /// strict (conversations are redacted before they are queued or sent) or relaxed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy_mode: Option<String>,
    /// Whether extracted experiences wait for the user's approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_approval: Option<bool>,
}

/// What the stub should do with the hook. The fields besides `action` are what the hook
/// returns to OpenClaw, named as OpenClaw names them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookEventResult {
    /// `allow`, or `block` for a gate hook that must stop.
    pub action: String,
    #[serde(rename = "prependContext", default, skip_serializing_if = "Option::is_none")]
    pub prepend_context: Option<String>,
}
