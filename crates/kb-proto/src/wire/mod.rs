//! Parameter and result types of every method, as they travel in JSON, one module per area
//! (`store`: experiences, search and the review queue; `hooks`; `status`, the hub's included;
//! `extraction`; `identity`, the daemon's proof), all re-exported here, and the parsing that names the field at fault.

mod extraction;
mod hooks;
mod identity;
mod status;
mod store;

pub use extraction::*;
pub use hooks::*;
pub use identity::*;
pub use status::*;
pub use store::*;

use serde::de::DeserializeOwned;

/// A parameter error: which field is wrong and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError {
    /// The path of the offending field (`items[3].score`), or empty when the whole params are off.
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ParamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "invalid params: {}", self.message)
        } else {
            write!(f, "invalid `{}`: {}", self.field, self.message)
        }
    }
}

/// Parses named params (a JSON object) into `T`, naming the field at fault on error.
/// Absent params parse as `{}`, so methods whose params are all optional accept none.
pub fn parse_params<T: DeserializeOwned>(raw: Option<&str>) -> Result<T, ParamError> {
    let raw = raw.unwrap_or("{}");
    if raw.trim_start().starts_with('[') {
        return Err(ParamError {
            field: String::new(),
            message: "params must be an object of named parameters, not an array".to_owned(),
        });
    }
    parse_value_str(raw)
}

/// Parses one JSON text into `T`, naming the field at fault on error.
pub fn parse_value_str<T: DeserializeOwned>(raw: &str) -> Result<T, ParamError> {
    let mut deserializer = serde_json::Deserializer::from_str(raw);
    serde_path_to_error::deserialize(&mut deserializer).map_err(param_error)
}

/// Parses an already-decoded JSON value into `T` (no re-serialization), naming the field at
/// fault on error.
pub fn parse_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ParamError> {
    serde_path_to_error::deserialize(value).map_err(param_error)
}

fn param_error(error: serde_path_to_error::Error<serde_json::Error>) -> ParamError {
    let path = error.path().to_string();
    let inner = error.into_inner();
    // serde_json appends " at line L column C", which means nothing to a caller of a
    // JSON-RPC method; the field path says where instead.
    let mut message = inner.to_string();
    if let Some(position) = message.rfind(" at line ") {
        message.truncate(position);
    }
    // For a missing field serde reports the parent's path, so name the field from the message.
    let field = match (path.as_str(), missing_field(&message)) {
        (".", Some(missing)) => missing.to_owned(),
        (parent, Some(missing)) => format!("{parent}.{missing}"),
        (".", None) => String::new(),
        (path, None) => path.to_owned(),
    };
    ParamError { field, message }
}

fn missing_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("missing field `")?;
    rest.split('`').next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_errors_name_the_field() {
        let missing = parse_params::<SubmitParams>(Some(r#"{"task":"t","resource":"r"}"#)).unwrap_err();
        assert_eq!(missing.field, "result");
        let wrong_type =
            parse_params::<SubmitParams>(Some(r#"{"task":"t","resource":"r","result":"x","score":"five"}"#))
                .unwrap_err();
        assert_eq!(wrong_type.field, "score");
        assert!(!wrong_type.message.contains("line"), "{}", wrong_type.message);
        let unknown = parse_params::<SearchParams>(Some(r#"{"query":"q","topk":3}"#)).unwrap_err();
        assert!(unknown.message.contains("topk"), "{}", unknown.message);
        let array = parse_params::<SearchParams>(Some(r#"["q"]"#)).unwrap_err();
        assert!(array.message.contains("named parameters"));
        let none = parse_params::<ListParams>(None).unwrap();
        assert_eq!(none, ListParams::default());
    }

    #[test]
    fn reindex_params_are_optional_and_checked() {
        assert_eq!(parse_params::<ReindexParams>(None).unwrap(), ReindexParams::default());
        let off = parse_params::<ReindexParams>(Some(r#"{"embeddings":false}"#)).unwrap();
        assert_eq!(off.embeddings, Some(false));
        let wrong_type = parse_params::<ReindexParams>(Some(r#"{"embeddings":"yes"}"#)).unwrap_err();
        assert_eq!(wrong_type.field, "embeddings");
        let unknown = parse_params::<ReindexParams>(Some(r#"{"embedings":true}"#)).unwrap_err();
        assert!(unknown.to_string().contains("embedings"), "{unknown}");
    }

    #[test]
    fn a_reindex_result_of_an_older_daemon_still_parses() {
        let old: ReindexResult = parse_value_str(r#"{"indexed":3,"took_ms":12}"#).unwrap();
        assert_eq!((old.indexed, old.queued_embeddings, old.embeddings), (3, 0, None));
    }

    #[test]
    fn an_export_line_is_an_import_item() {
        let line = r#"{"id":"01J","task":"t","resource":"r","result":"x","score":4,"has_content":true,
            "source":"tool","status":"active","created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z",
            "merge_count":0,"recall_count":2,"content":"body","content_type":"text/markdown"}"#;
        let item: ImportItem = parse_value_str(line).unwrap();
        assert_eq!(item.content.as_deref(), Some("body"));
        let from_value: ImportItem = parse_value(serde_json::from_str(line).unwrap()).unwrap();
        assert_eq!(from_value, item);
        let bad =
            parse_value::<ImportItem>(serde_json::json!({"task": "t", "resource": "r", "result": "x", "score": "5"}))
                .unwrap_err();
        assert_eq!(bad.field, "score");
        assert_eq!(item.score, Some(4));
    }
}
