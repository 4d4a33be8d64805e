//! Validation of proposed experiences: required fields, the rating range and size limits.

use std::fmt;

use crate::NewExperience;

/// Size limits on each field, counted in characters (not bytes) so CJK text is not penalised.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub max_task_chars: usize,
    pub max_resource_chars: usize,
    pub max_result_chars: usize,
    pub max_content_chars: usize,
    /// For short identifiers: agent_id, submitted_by, session_key, content_type.
    pub max_identifier_chars: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_task_chars: 2_000,
            max_resource_chars: 2_000,
            max_result_chars: 8_000,
            max_content_chars: 1_000_000,
            max_identifier_chars: 256,
        }
    }
}

/// A proposed experience was refused; `field` names the parameter at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    pub field: String,
    pub message: String,
}

impl ValidationError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> ValidationError {
        ValidationError { field: field.into(), message: message.into() }
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid `{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for ValidationError {}

/// Checks a proposed experience against the limits. Text is checked as given; the gate trims
/// it first, so whitespace-only required fields count as missing.
pub fn validate(new: &NewExperience, limits: &Limits) -> Result<(), ValidationError> {
    required("task", &new.task, limits.max_task_chars)?;
    required("resource", &new.resource, limits.max_resource_chars)?;
    required("result", &new.result, limits.max_result_chars)?;
    if let Some(score) = new.score
        && !(1..=5).contains(&score)
    {
        return Err(ValidationError::new("score", format!("must be an integer from 1 to 5, got {score}")));
    }
    if let Some(content) = &new.content {
        within("content", content, limits.max_content_chars)?;
    }
    for (field, value) in [
        ("content_type", &new.content_type),
        ("agent_id", &new.agent_id),
        ("submitted_by", &new.submitted_by),
        ("session_key", &new.session_key),
    ] {
        if let Some(value) = value {
            within(field, value, limits.max_identifier_chars)?;
            if value.chars().any(char::is_control) {
                return Err(ValidationError::new(field, "must not contain control characters"));
            }
        }
    }
    // NaN fails `contains` too, so it is refused here rather than stored.
    if let Some(confidence) = new.confidence
        && !(0.0..=1.0).contains(&confidence)
    {
        return Err(ValidationError::new("confidence", format!("must be between 0 and 1, got {confidence}")));
    }
    Ok(())
}

fn required(field: &str, value: &str, max_chars: usize) -> Result<(), ValidationError> {
    if value.trim().is_empty() {
        return Err(ValidationError::new(field, "is required and must not be empty"));
    }
    within(field, value, max_chars)
}

fn within(field: &str, value: &str, max_chars: usize) -> Result<(), ValidationError> {
    // Counting stops one past the limit so a huge value is not walked to its end.
    let n_chars = value.chars().take(max_chars + 1).count();
    if n_chars > max_chars {
        return Err(ValidationError::new(field, format!("is too long: at most {max_chars} characters")));
    }
    if value.contains('\0') {
        return Err(ValidationError::new(field, "must not contain NUL characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> NewExperience {
        NewExperience {
            task: "run tests".to_owned(),
            resource: "vitest --run".to_owned(),
            result: "no watch mode".to_owned(),
            ..NewExperience::default()
        }
    }

    #[test]
    fn a_complete_experience_passes() {
        let full = NewExperience {
            score: Some(5),
            content: Some("steps\n\t1. run\r\n".to_owned()),
            content_type: Some("text/markdown".to_owned()),
            agent_id: Some("main".to_owned()),
            submitted_by: Some("dev@example.com".to_owned()),
            session_key: Some("agent:main:1".to_owned()),
            confidence: Some(0.0),
            ..valid()
        };
        assert_eq!(validate(&full, &Limits::default()), Ok(()));
        assert_eq!(validate(&valid(), &Limits::default()), Ok(()));
    }

    #[test]
    fn each_rule_names_its_field() {
        let limits = Limits { max_task_chars: 10, max_identifier_chars: 8, ..Limits::default() };
        let cases: Vec<(NewExperience, &str, &str)> = vec![
            (NewExperience { task: String::new(), ..valid() }, "task", "required"),
            (NewExperience { resource: " \t".to_owned(), ..valid() }, "resource", "required"),
            (NewExperience { result: String::new(), ..valid() }, "result", "required"),
            (NewExperience { task: "x".repeat(11), ..valid() }, "task", "too long"),
            (NewExperience { score: Some(0), ..valid() }, "score", "got 0"),
            (NewExperience { score: Some(6), ..valid() }, "score", "got 6"),
            (NewExperience { score: Some(-1), ..valid() }, "score", "1 to 5"),
            (NewExperience { result: "a\0".to_owned(), ..valid() }, "result", "NUL"),
            (NewExperience { agent_id: Some("a\u{1b}[31m".to_owned()), ..valid() }, "agent_id", "control"),
            (NewExperience { submitted_by: Some("\u{85}x".to_owned()), ..valid() }, "submitted_by", "control"),
            (NewExperience { content_type: Some("text/plain; x".to_owned()), ..valid() }, "content_type", "too long"),
            (NewExperience { agent_id: Some("a\0".to_owned()), ..valid() }, "agent_id", "NUL"),
            (NewExperience { confidence: Some(-0.1), ..valid() }, "confidence", "between 0 and 1"),
            (NewExperience { confidence: Some(f64::NAN), ..valid() }, "confidence", "between 0 and 1"),
        ];
        for (new, field, message) in cases {
            let error = validate(&new, &limits).unwrap_err();
            assert_eq!(error.field, field, "{new:?}");
            assert!(error.message.contains(message), "{error}");
            assert!(error.to_string().starts_with(&format!("invalid `{field}`")), "{error}");
        }
    }

    #[test]
    fn limits_count_characters_not_bytes() {
        let limits = Limits { max_task_chars: 4, ..Limits::default() };
        // Four CJK characters are twelve bytes, and still within a four-character limit.
        assert_eq!(validate(&NewExperience { task: "修复构建".to_owned(), ..valid() }, &limits), Ok(()));
        let error = validate(&NewExperience { task: "修复构建了".to_owned(), ..valid() }, &limits).unwrap_err();
        assert_eq!(error.field, "task");
    }

    #[test]
    fn every_score_from_one_to_five_is_accepted() {
        for score in 1..=5 {
            assert_eq!(validate(&NewExperience { score: Some(score), ..valid() }, &Limits::default()), Ok(()));
        }
    }

    #[test]
    fn newlines_and_tabs_are_fine_in_text_fields() {
        let new = NewExperience { result: "line one\n\tline two\r\n".to_owned(), ..valid() };
        assert_eq!(validate(&new, &Limits::default()), Ok(()));
    }
}
