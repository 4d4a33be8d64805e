//! Filling in the `@NAME@` placeholders of the unit and plist templates, strictly: each one
//! given must be there, and none may be left.

use anyhow::bail;

/// Replaces each placeholder, all of which the template must contain, and checks none is left.
pub(super) fn fill(template: &str, values: &[(&str, String)]) -> anyhow::Result<String> {
    let mut text = template.to_owned();
    for (placeholder, value) in values {
        if !text.contains(placeholder) {
            bail!("the template has no {placeholder}");
        }
        text = text.replace(placeholder, value);
    }
    if let Some(name) = leftover_placeholder(&text) {
        bail!("the template's @{name}@ was not filled in");
    }
    Ok(text)
}

/// The first `@NAME@` (capitals and underscores) in `text`, if any.
pub(super) fn leftover_placeholder(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(start) = rest.find('@') {
        rest = &rest[start + 1..];
        let end = rest.find('@')?;
        let name = &rest[..end];
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            return Some(name);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placeholder_left_unfilled_is_an_error() {
        assert!(fill("a @X@ b", &[]).is_err());
        assert!(fill("a@b.c @Y@ @X@", &[("@X@", String::new())]).is_err());
        assert!(fill("a b", &[("@X@", String::new())]).is_err());
        assert_eq!(fill("user@example.org @X@", &[("@X@", "1".to_owned())]).unwrap(), "user@example.org 1");
    }
}
