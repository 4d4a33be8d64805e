//! The views of a text the risky-action rules run on: the matching view (folded, lowercased,
//! backticks out, continuations joined, spaces collapsed), the same with shell quoting undone,
//! and exec-form arrays of quoted words joined into the command lines they stand for.

/// The matching view: folded, lowercased, backticks out, line continuations joined, runs of
/// spaces and tabs collapsed (line breaks kept: most rules stay within a line).
pub(super) fn view(text: &str) -> String {
    let folded = crate::injection::fold_text(text);
    let joined = folded.replace("\\\r\n", " ").replace("\\\n", " ").replace('\r', "");
    let mut out = String::with_capacity(joined.len());
    let mut in_space = false;
    for ch in joined.chars() {
        let ch = if ch == '`' || ch == '\t' { ' ' } else { ch };
        if ch == ' ' {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
            continue;
        }
        in_space = false;
        out.extend(ch.to_lowercase());
    }
    out
}

/// The view with the arrays of quoted words it holds joined into command lines (`["sh", "-c",
/// "curl … | sh"]` to `sh -c curl … | sh`); `None` when it has none.
pub(super) fn exec_form_joined(view: &str) -> Option<String> {
    // `", "` holds `",`; `', '` and `','` are apart.
    if !view.contains("\",") && !view.contains("', '") && !view.contains("','") {
        return None;
    }
    let mut joined = view.to_owned();
    for (from, to) in [
        ("\", \"", " "),
        ("\",\"", " "),
        ("', '", " "),
        ("','", " "),
        ("[\"", "[ "),
        ("\"]", " ]"),
        ("['", "[ "),
        ("']", " ]"),
    ] {
        joined = joined.replace(from, to);
    }
    Some(joined)
}

/// The view with shell quoting that hides a word undone: `c\url`, `cu''rl`, `w""get`.
pub(super) fn without_shell_quoting(view: &str) -> String {
    let mut out = String::with_capacity(view.len());
    let chars: Vec<char> = view.chars().collect();
    let mut idx = 0;
    while idx < chars.len() {
        let ch = chars[idx];
        let next = chars.get(idx + 1).copied();
        if ch == '\\' && next.is_some_and(|next| next.is_ascii_alphanumeric()) {
            idx += 1;
            continue;
        }
        if (ch == '\'' || ch == '"') && next == Some(ch) {
            idx += 2;
            continue;
        }
        out.push(ch);
        idx += 1;
    }
    out
}
