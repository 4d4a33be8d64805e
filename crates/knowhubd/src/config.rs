//! The daemon's configuration: defaults, then `config.toml`, then environment variables.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use kb_core::{GatePolicy, Limits, PrivacyMode};
pub use kb_engine::{EmbeddingConfig, EngineConfig, PrecisionConfig, SearchConfig};
use serde::Deserialize;

/// Bytes of each connection's request body kept out of the shared body budget (see
/// `server/body.rs`); a setting's lower bound depends on it, so it lives with the settings.
pub const BODY_BYTES_SET_ASIDE_PER_CONNECTION: u64 = 64 * 1024;

/// The commented example configuration, printed by `knowhubd --print-config`.
pub const EXAMPLE_CONFIG: &str = include_str!("../config.example.toml");

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub privacy: PrivacyConfig,
    pub search: SearchConfig,
    pub limits: LimitsConfig,
    pub server: ServerConfig,
    pub embedding: EmbeddingConfig,
    pub extraction: ExtractionConfig,
    pub hub: HubConfig,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrivacyConfig {
    pub mode: PrivacyModeConfig,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrivacyModeConfig {
    #[default]
    Strict,
    Relaxed,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    pub max_task_chars: usize,
    pub max_resource_chars: usize,
    pub max_result_chars: usize,
    pub max_content_chars: usize,
}

impl Default for LimitsConfig {
    fn default() -> LimitsConfig {
        let limits = Limits::default();
        LimitsConfig {
            max_task_chars: limits.max_task_chars,
            max_resource_chars: limits.max_resource_chars,
            max_result_chars: limits.max_result_chars,
            max_content_chars: limits.max_content_chars,
        }
    }
}

/// The limits that keep clients, slow or many, from starving the daemon (see `server`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Connections served at once; also capped by the open-file limit.
    pub max_connections: u32,
    /// The largest request body accepted, in bytes.
    pub max_request_bytes: u32,
    /// Request bodies held in memory at once, all connections together, in bytes.
    pub body_budget_bytes: u64,
    /// Seconds a client may take to send a request's headers (a new connection: its first request).
    pub header_timeout_seconds: u64,
    /// Seconds a client may take to send a request's body.
    pub body_timeout_seconds: u64,
    /// Seconds a keep-alive connection may stay idle between requests.
    pub idle_timeout_seconds: u64,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            max_connections: 256,
            max_request_bytes: 64 * 1024 * 1024,
            body_budget_bytes: 256 * 1024 * 1024,
            header_timeout_seconds: 10,
            body_timeout_seconds: 30,
            idle_timeout_seconds: 60,
        }
    }
}

/// Extraction of experiences from finished conversations by an LLM (the plugin's
/// `enableServerExtraction` turns it on per OpenClaw; this says which LLM and how much).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExtractionConfig {
    /// Which LLM extracts: `endpoint` (the Chat Completions endpoint below) or `openclaw`
    /// (the model OpenClaw already uses, run by the plugin at the start of turns); `auto`: the
    /// endpoint when one is configured, else OpenClaw's.
    pub route: RouteConfig,
    /// An OpenAI-compatible API, e.g. `http://127.0.0.1:11434/v1` (Ollama); requests go to
    /// `{base_url}/chat/completions`.
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The environment variable that holds the API key (never logged, never shown).
    pub api_key_env: Option<String>,
    /// A file that holds the API key (read at each call; never logged, never shown).
    pub api_key_file: Option<PathBuf>,
    /// Tokens of conversation sent per job at most (tool output is cut first).
    pub max_input_tokens: usize,
    /// Tokens the answer may take.
    pub max_output_tokens: u32,
    /// Tokens spent per day (UTC) at most, each call charged the larger of the endpoint's `usage`
    /// and the daemon's own count; past it, jobs wait for the next day.
    pub daily_token_cap: u64,
    /// Proposals the LLM is less confident of than this are dropped (and counted).
    pub min_confidence: f64,
    /// Jobs waiting at most; past it the oldest are dropped (and counted).
    pub max_queued: usize,
    /// Proposals taken from one answer at most, the most confident first (the prompt asks for
    /// at most 5; an answer with more is not trusted to keep to it); the rest are counted.
    pub max_proposals_per_job: usize,
    /// Extracted proposals waiting for review at most; past it, new ones are not held (the least
    /// confident go first) and are counted, until the user reviews.
    pub max_pending_proposals: usize,
    /// Attempts of a job before it fails for good (timeouts, 5xx and 429 are retried).
    pub max_attempts: u32,
    /// Seconds before the first retry of a job; doubled at each retry (at most 30 minutes). A
    /// `Retry-After` from the endpoint may lengthen it, never shorten it.
    pub retry_seconds: u64,
    /// Seconds one call may take.
    pub timeout_seconds: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteConfig {
    #[default]
    Auto,
    Endpoint,
    Openclaw,
}

impl Default for ExtractionConfig {
    fn default() -> ExtractionConfig {
        ExtractionConfig {
            route: RouteConfig::Auto,
            base_url: None,
            model: None,
            api_key_env: None,
            api_key_file: None,
            max_input_tokens: 6_000,
            max_output_tokens: 1_200,
            daily_token_cap: 200_000,
            min_confidence: 0.6,
            max_queued: 100,
            max_proposals_per_job: 5,
            max_pending_proposals: 200,
            max_attempts: 5,
            retry_seconds: 10,
            timeout_seconds: 120,
        }
    }
}

/// The team hub (`[hub]`): off unless `url` is set.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HubConfig {
    /// A PostgreSQL URL (`postgresql://user@host:5432/db?sslmode=verify-full&sslrootcert=…`)
    /// or key=value connection string; `sslmode` means what it means to libpq.
    pub url: Option<String>,
    /// The environment variable holding the password (never logged or shown in `status`).
    pub password_env: Option<String>,
    /// A file holding the password (first line).
    pub password_file: Option<PathBuf>,
    /// The team's name on the hub.
    pub team: Option<String>,
    /// Share this store's experiences (pulling the team's goes on either way).
    pub share: bool,
    /// Which experiences are shared, by where they came from: `tool`, `cli`, `extraction`
    /// (approved proposals), `import`. Only active ones, never pending, rejected or flagged.
    pub share_sources: Vec<String>,
    /// The safety net under `LISTEN/NOTIFY`: a pull at least this often.
    pub poll_seconds: u64,
    /// Changes per push or pull transaction.
    pub batch: usize,
    /// What one teammate's changes may bring into this store per day (UTC): more is held back,
    /// counted in `status`, and fetched again once a later day's allowance allows.
    pub member_rows_per_day: u64,
    pub member_bytes_per_day: u64,
    /// Teammates (their names on the hub) whose experiences reach this user's agents without a
    /// review. Nobody by default: a teammate's experience reaches agents once approved.
    pub trusted: Vec<String>,
}

impl Default for HubConfig {
    fn default() -> HubConfig {
        HubConfig {
            url: None,
            password_env: None,
            password_file: None,
            team: None,
            share: true,
            share_sources: ["tool", "cli", "extraction", "import"].map(str::to_owned).to_vec(),
            poll_seconds: 30,
            batch: 500,
            member_rows_per_day: 5_000,
            member_bytes_per_day: 100_000_000,
            trusted: Vec::new(),
        }
    }
}

impl Config {
    /// Reads `path`; a missing file means the defaults. A malformed file is an error that
    /// names the file and the key, so a typo is never silently ignored.
    pub fn load(path: &Path) -> anyhow::Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(error) => return Err(error).with_context(|| format!("cannot read the config file {}", path.display())),
        };
        Config::parse(&text).with_context(|| format!("invalid config file {}", path.display()))
    }

    pub fn parse(text: &str) -> anyhow::Result<Config> {
        let config: Config = toml::from_str(text)?;
        anyhow::ensure!(config.search.default_top_k >= 1, "search.default_top_k must be at least 1");
        anyhow::ensure!(
            config.search.max_top_k >= config.search.default_top_k,
            "search.max_top_k must be at least search.default_top_k"
        );
        anyhow::ensure!(
            (1..=5).contains(&config.search.default_min_score),
            "search.default_min_score must be from 1 to 5"
        );
        anyhow::ensure!(config.server.max_connections >= 1, "server.max_connections must be at least 1");
        anyhow::ensure!(config.server.max_request_bytes >= 1024, "server.max_request_bytes must be at least 1024");
        let least_budget = u64::from(config.server.max_request_bytes)
            + u64::from(config.server.max_connections) * BODY_BYTES_SET_ASIDE_PER_CONNECTION;
        anyhow::ensure!(
            config.server.body_budget_bytes >= least_budget,
            "server.body_budget_bytes must be at least server.max_request_bytes + 64 KiB per connection \
             (server.max_connections), here {least_budget}, so that the largest request fits"
        );
        for (key, seconds) in [
            ("server.header_timeout_seconds", config.server.header_timeout_seconds),
            ("server.body_timeout_seconds", config.server.body_timeout_seconds),
            ("server.idle_timeout_seconds", config.server.idle_timeout_seconds),
        ] {
            anyhow::ensure!((1..=86_400).contains(&seconds), "{key} must be from 1 to 86400");
        }
        anyhow::ensure!(
            config.embedding.similar_threshold > 0.0 && config.embedding.similar_threshold <= 1.01,
            "embedding.similar_threshold must be above 0 and at most 1.01 (above 1 turns merging off)"
        );
        anyhow::ensure!(config.embedding.retry_seconds >= 1, "embedding.retry_seconds must be at least 1");
        anyhow::ensure!(
            config.embedding.query_threads <= 16,
            "embedding.query_threads must be from 0 (no query session) to 16"
        );
        let extraction = &config.extraction;
        if let Some(base_url) = &extraction.base_url {
            anyhow::ensure!(
                base_url.starts_with("http://") || base_url.starts_with("https://"),
                "extraction.base_url must start with http:// or https://, got {base_url:?}"
            );
            anyhow::ensure!(extraction.model.is_some(), "extraction.model must be set with extraction.base_url");
        }
        anyhow::ensure!(
            extraction.route != RouteConfig::Endpoint || extraction.base_url.is_some(),
            "extraction.route = \"endpoint\" needs extraction.base_url"
        );
        anyhow::ensure!(
            !(extraction.api_key_env.is_some() && extraction.api_key_file.is_some()),
            "set one of extraction.api_key_env and extraction.api_key_file, not both"
        );
        anyhow::ensure!(extraction.max_input_tokens >= 500, "extraction.max_input_tokens must be at least 500");
        anyhow::ensure!(extraction.max_output_tokens >= 100, "extraction.max_output_tokens must be at least 100");
        anyhow::ensure!(
            (0.0..=1.0).contains(&extraction.min_confidence),
            "extraction.min_confidence must be from 0 to 1"
        );
        anyhow::ensure!(extraction.max_queued >= 1, "extraction.max_queued must be at least 1");
        anyhow::ensure!(extraction.max_proposals_per_job >= 1, "extraction.max_proposals_per_job must be at least 1");
        anyhow::ensure!(extraction.max_pending_proposals >= 1, "extraction.max_pending_proposals must be at least 1");
        anyhow::ensure!(extraction.max_attempts >= 1, "extraction.max_attempts must be at least 1");
        anyhow::ensure!(extraction.retry_seconds >= 1, "extraction.retry_seconds must be at least 1");
        anyhow::ensure!(
            (1..=3_600).contains(&extraction.timeout_seconds),
            "extraction.timeout_seconds must be from 1 to 3600"
        );
        let hub = &config.hub;
        if let Some(url) = &hub.url {
            kb_hub::ConnectOptions::parse(url, None).map_err(|error| anyhow::anyhow!("hub.url: {error}"))?;
            anyhow::ensure!(
                hub.team.as_deref().is_some_and(|team| !team.trim().is_empty()),
                "hub.team must be set with hub.url"
            );
        }
        anyhow::ensure!(
            !(hub.password_env.is_some() && hub.password_file.is_some()),
            "set one of hub.password_env and hub.password_file, not both"
        );
        for source in &hub.share_sources {
            anyhow::ensure!(
                ["tool", "cli", "extraction", "import"].contains(&source.as_str()),
                "hub.share_sources: {source:?} is not one of tool, cli, extraction, import"
            );
        }
        anyhow::ensure!((1..=86_400).contains(&hub.poll_seconds), "hub.poll_seconds must be from 1 to 86400");
        anyhow::ensure!((1..=10_000).contains(&hub.batch), "hub.batch must be from 1 to 10000");
        anyhow::ensure!(hub.member_rows_per_day >= 1, "hub.member_rows_per_day must be at least 1");
        anyhow::ensure!(hub.member_bytes_per_day >= 10_000, "hub.member_bytes_per_day must be at least 10000");
        for name in &hub.trusted {
            anyhow::ensure!(
                !name.trim().is_empty() && name.trim() == name && !name.chars().any(char::is_control),
                "hub.trusted: {name:?} is not a teammate's name (no blanks around it, no control characters)"
            );
        }
        Ok(config)
    }

    /// What the core engine needs of the configuration.
    pub fn engine(&self) -> EngineConfig {
        EngineConfig { policy: self.gate_policy(), search: self.search.clone(), embedding: self.embedding.clone() }
    }

    pub fn gate_policy(&self) -> GatePolicy {
        GatePolicy {
            privacy: match self.privacy.mode {
                PrivacyModeConfig::Strict => PrivacyMode::Strict,
                PrivacyModeConfig::Relaxed => PrivacyMode::Relaxed,
            },
            limits: Limits {
                max_task_chars: self.limits.max_task_chars,
                max_resource_chars: self.limits.max_resource_chars,
                max_result_chars: self.limits.max_result_chars,
                max_content_chars: self.limits.max_content_chars,
                ..Limits::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_config_is_the_default() {
        assert_eq!(Config::parse(EXAMPLE_CONFIG).unwrap(), Config::default());
    }

    #[test]
    fn typos_and_bad_values_are_errors() {
        let typo = Config::parse("[search]\ndefault_topk = 3\n").unwrap_err();
        assert!(format!("{typo:#}").contains("default_topk"), "{typo:#}");
        let bad_mode = Config::parse("[privacy]\nmode = \"loose\"\n").unwrap_err();
        assert!(format!("{bad_mode:#}").contains("loose"), "{bad_mode:#}");
        assert!(Config::parse("[search]\ndefault_min_score = 9\n").is_err());
        let threads = Config::parse("[embedding]\nquery_threads = 99\n").unwrap_err();
        assert!(format!("{threads:#}").contains("embedding.query_threads"), "{threads:#}");
        assert_eq!(Config::parse("[embedding]\nquery_threads = 0\n").unwrap().embedding.query_threads, 0);
    }
}
