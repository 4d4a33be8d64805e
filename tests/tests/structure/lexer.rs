//! The structure check's reader of Rust sources: comments and string literals stripped, the
//! rest tokenized, and every `crate::`, `super::` and `self::` path (in `use` trees and in code)
//! resolved from the crate root, with the `mod name;` declarations of each file.

use crate::ReferenceSite;

/// What one file declares and refers to.
pub(crate) struct FileScan {
    /// `mod name;` declarations: the inline modules around them and the name.
    pub(crate) declared_modules: Vec<(Vec<String>, String)>,
    /// Paths of the crate resolved from the crate root, with where they were written.
    pub(crate) references: Vec<(Vec<String>, ReferenceSite)>,
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    PathSeparator,
    Punct(char),
}

/// Reads the file of module `module` (shown as `shown`): its `mod name;` declarations and every
/// `crate::`, `super::` and `self::` path, in `use` trees and in code, resolved from the crate root.
pub(crate) fn scan_file(source: &str, module: &[String], shown: &str) -> FileScan {
    let stripped = strip_comments_and_strings(source);
    let tokens = tokenize(&stripped);
    let source_lines: Vec<&str> = source.lines().collect();
    let file_is_tests = module.iter().any(|segment| segment == "tests");
    let mut scan = FileScan { declared_modules: Vec::new(), references: Vec::new() };
    // Inline modules around the current token, with the brace depth inside each.
    let mut inline_modules: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut position = 0;
    let ident = |index: usize| match tokens.get(index) {
        Some((Token::Ident(name), _)) => Some(name.as_str()),
        _ => None,
    };
    let is = |index: usize, wanted: &Token| tokens.get(index).is_some_and(|(token, _)| token == wanted);
    while position < tokens.len() {
        let current_module = || {
            let mut path = module.to_vec();
            path.extend(inline_modules.iter().map(|(name, _)| name.clone()));
            path
        };
        let in_test = file_is_tests || inline_modules.iter().any(|(name, _)| name == "tests");
        let site = |line: usize| ReferenceSite {
            file: shown.to_owned(),
            line,
            text: source_lines.get(line - 1).map(|text| text.trim()).unwrap_or("").chars().take(140).collect(),
            in_test,
        };
        let (token, _) = &tokens[position];
        match token {
            Token::Punct('#') if is(position + 1, &Token::Punct('[')) && ident(position + 2) == Some("path") => {
                panic!("{shown}: #[path] attributes are not followed by the structure check");
            }
            Token::Punct('{') => {
                depth += 1;
                position += 1;
            }
            Token::Punct('}') => {
                if inline_modules.last().is_some_and(|(_, module_depth)| *module_depth == depth) {
                    inline_modules.pop();
                }
                depth = depth.saturating_sub(1);
                position += 1;
            }
            Token::Ident(keyword) if keyword == "mod" && ident(position + 1).is_some() => {
                let name = ident(position + 1).expect("checked").to_owned();
                if is(position + 2, &Token::Punct('{')) {
                    inline_modules.push((name, depth + 1));
                    position += 2;
                } else {
                    if is(position + 2, &Token::Punct(';')) {
                        let inline = inline_modules.iter().map(|(name, _)| name.clone()).collect();
                        scan.declared_modules.push((inline, name));
                    }
                    position += 3;
                }
            }
            Token::Ident(keyword) if keyword == "use" => {
                position += 1;
                let mut paths = Vec::new();
                parse_use_tree(&tokens, &mut position, Vec::new(), &mut paths);
                let module_here = current_module();
                for (path, line) in paths {
                    if let Some(resolved) = resolve(&path, &module_here) {
                        scan.references.push((resolved, site(line)));
                    }
                }
            }
            Token::Ident(first)
                if matches!(first.as_str(), "crate" | "super" | "self") && is(position + 1, &Token::PathSeparator) =>
            {
                // `$crate::` in a macro, or `a::self::`, is not a path from here.
                let continues_a_path =
                    position > 0 && matches!(&tokens[position - 1].0, Token::PathSeparator | Token::Punct('$'));
                let mut path = vec![first.clone()];
                let mut line = tokens[position].1;
                position += 1;
                while is(position, &Token::PathSeparator) && ident(position + 1).is_some() {
                    path.push(ident(position + 1).expect("checked").to_owned());
                    line = tokens[position + 1].1;
                    position += 2;
                }
                if !continues_a_path && let Some(resolved) = resolve(&path, &current_module()) {
                    scan.references.push((resolved, site(line)));
                }
            }
            _ => position += 1,
        }
    }
    scan
}

/// Expands the `use` tree at `position` (after `use`) into full paths, each with the line of its
/// last segment; stops after the tree.
fn parse_use_tree(
    tokens: &[(Token, usize)],
    position: &mut usize,
    prefix: Vec<String>,
    paths: &mut Vec<(Vec<String>, usize)>,
) {
    let mut path = prefix;
    let mut line = tokens.get(*position).map_or(0, |(_, line)| *line);
    if matches!(tokens.get(*position), Some((Token::PathSeparator, _))) {
        // `use ::other_crate::…`: never this crate.
        path.push("::".to_owned());
        *position += 1;
    }
    loop {
        match tokens.get(*position) {
            Some((Token::Ident(name), name_line)) => {
                path.push(name.clone());
                line = *name_line;
                *position += 1;
            }
            Some((Token::Punct('{'), _)) => {
                *position += 1;
                loop {
                    match tokens.get(*position) {
                        None => return,
                        Some((Token::Punct('}'), _)) => {
                            *position += 1;
                            return;
                        }
                        Some((Token::Punct(','), _)) => *position += 1,
                        Some(_) => {
                            let before = *position;
                            parse_use_tree(tokens, position, path.clone(), paths);
                            if *position == before {
                                *position += 1;
                            }
                        }
                    }
                }
            }
            Some((Token::Punct('*'), star_line)) => {
                *position += 1;
                paths.push((path, *star_line));
                return;
            }
            _ => break,
        }
        if matches!(tokens.get(*position), Some((Token::PathSeparator, _))) {
            *position += 1;
        } else {
            break;
        }
    }
    if matches!(tokens.get(*position), Some((Token::Ident(word), _)) if word == "as") {
        *position += 2;
    }
    // `use crate::a::{self, …}` names `crate::a` itself.
    if path.len() > 1 && path.last().is_some_and(|last| last == "self") {
        path.pop();
    }
    if !path.is_empty() {
        paths.push((path, line));
    }
}

/// `path` as written in module `module`, resolved from the crate root; `None` for paths that do
/// not start with `crate`, `super` or `self` (other crates, or names in scope).
fn resolve(path: &[String], module: &[String]) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    match first.as_str() {
        "crate" => Some(rest.to_vec()),
        "self" => Some(module.iter().chain(rest).cloned().collect()),
        "super" => {
            let mut base = module.to_vec();
            base.pop()?;
            let mut rest = rest;
            while let Some(("super", tail)) = rest.split_first().map(|(head, tail)| (head.as_str(), tail)) {
                base.pop()?;
                rest = tail;
            }
            base.extend(rest.iter().cloned());
            Some(base)
        }
        _ => None,
    }
}

/// `source` with comments, string literals and character literals replaced by spaces, newlines
/// kept, so lines and braces still count right.
fn strip_comments_and_strings(source: &str) -> String {
    let characters: Vec<char> = source.chars().collect();
    let mut output = String::with_capacity(source.len());
    let blank = |character: char| if character == '\n' { '\n' } else { ' ' };
    let mut index = 0;
    while index < characters.len() {
        let character = characters[index];
        let next = characters.get(index + 1).copied();
        if character == '/' && next == Some('/') {
            while index < characters.len() && characters[index] != '\n' {
                output.push(' ');
                index += 1;
            }
        } else if character == '/' && next == Some('*') {
            let mut nesting = 0;
            while index < characters.len() {
                if characters[index] == '/' && characters.get(index + 1) == Some(&'*') {
                    nesting += 1;
                    output.push_str("  ");
                    index += 2;
                } else if characters[index] == '*' && characters.get(index + 1) == Some(&'/') {
                    nesting -= 1;
                    output.push_str("  ");
                    index += 2;
                    if nesting == 0 {
                        break;
                    }
                } else {
                    output.push(blank(characters[index]));
                    index += 1;
                }
            }
        } else if character == 'r' && raw_string_starts(&characters, index) {
            // A raw string: r"…", r#"…"#, br"…", cr"…".
            let hashes = characters[index + 1..].iter().take_while(|c| **c == '#').count();
            output.extend(std::iter::repeat_n(' ', 2 + hashes));
            index += 2 + hashes;
            while index < characters.len() {
                let closes = characters[index] == '"'
                    && characters[index + 1..].iter().take(hashes).filter(|c| **c == '#').count() == hashes;
                if closes {
                    output.extend(std::iter::repeat_n(' ', 1 + hashes));
                    index += 1 + hashes;
                    break;
                }
                output.push(blank(characters[index]));
                index += 1;
            }
        } else if character == '"' {
            output.push(' ');
            index += 1;
            while index < characters.len() {
                match characters[index] {
                    '\\' => {
                        output.push(' ');
                        if let Some(escaped) = characters.get(index + 1) {
                            output.push(blank(*escaped));
                        }
                        index += 2;
                    }
                    '"' => {
                        output.push(' ');
                        index += 1;
                        break;
                    }
                    other => {
                        output.push(blank(other));
                        index += 1;
                    }
                }
            }
        } else if character == '\'' && next == Some('\\') {
            // A character literal with an escape: '\n', '\'', '\u{7f}'.
            output.push_str("  ");
            index += 2;
            if index < characters.len() {
                output.push(' ');
                index += 1;
            }
            while index < characters.len() && characters[index] != '\'' && characters[index] != '\n' {
                output.push(' ');
                index += 1;
            }
            if index < characters.len() && characters[index] == '\'' {
                output.push(' ');
                index += 1;
            }
        } else if character == '\'' && next.is_some() && next != Some('\n') && characters.get(index + 2) == Some(&'\'')
        {
            // A character literal: 'x' (a lifetime such as 'a is never followed by a quote).
            output.push_str("   ");
            index += 3;
        } else {
            output.push(character);
            index += 1;
        }
    }
    output
}

/// Whether the `r` at `index` opens a raw string (`r"`, `r#"`, `br"`, `cr#"`), not ends a name.
fn raw_string_starts(characters: &[char], index: usize) -> bool {
    let is_ident = |character: &char| character.is_alphanumeric() || *character == '_';
    let hashes = characters[index + 1..].iter().take_while(|c| **c == '#').count();
    if characters.get(index + 1 + hashes) != Some(&'"') {
        return false;
    }
    match index.checked_sub(1).map(|previous| characters[previous]) {
        None => true,
        Some('b' | 'c') => index < 2 || !is_ident(&characters[index - 2]),
        Some(previous) => !is_ident(&previous),
    }
}

/// Identifiers (keywords and numbers included), `::`, and single punctuation, each with its line.
fn tokenize(stripped: &str) -> Vec<(Token, usize)> {
    let mut tokens = Vec::new();
    for (line_index, line) in stripped.lines().enumerate() {
        let line_number = line_index + 1;
        let characters: Vec<char> = line.chars().collect();
        let mut index = 0;
        while index < characters.len() {
            let character = characters[index];
            if character.is_alphanumeric() || character == '_' {
                let start = index;
                while index < characters.len() && (characters[index].is_alphanumeric() || characters[index] == '_') {
                    index += 1;
                }
                tokens.push((Token::Ident(characters[start..index].iter().collect()), line_number));
            } else if character == ':' && characters.get(index + 1) == Some(&':') {
                tokens.push((Token::PathSeparator, line_number));
                index += 2;
            } else {
                if !character.is_whitespace() {
                    tokens.push((Token::Punct(character), line_number));
                }
                index += 1;
            }
        }
    }
    tokens
}

// ---------------------------------------------------------------------------------------------
// The checker's own tests
// ---------------------------------------------------------------------------------------------
