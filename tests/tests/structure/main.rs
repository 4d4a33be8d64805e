//! Structure checks: each crate depends only on crates of lower layers, and no crate's modules
//! refer to each other in a circle. The checker's own tests, at the end, prove it can fail.
//!
//! The crate layers are read from `cargo metadata`; the module references are read from the
//! sources with a small lexer (comments and string literals stripped), not with rustc, so the
//! check sees `crate::`, `super::` and `self::` paths (in `use` trees and in code) but not names
//! brought in by a glob and then used bare.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod lexer;

use lexer::scan_file;

/// The crates' layers, lowest first. A crate may depend (normal and build dependencies) only on
/// crates of strictly lower layers; its dev-dependencies may also be on its own layer, never
/// higher. Every crate of the workspace must be placed here, so a new crate is placed on purpose;
/// a crate placed here but absent from the workspace (one still to be written) is fine.
const LAYERS: &[&[&str]] = &[
    &["kb-core"],
    &["kb-store", "kb-index", "kb-embed", "kb-extract", "kb-hub", "kb-proto"],
    &["kb-engine"],
    &["knowhubd"],
    &["kbctl", "kb-bench", "kb-tests"],
];

#[test]
fn crates_depend_only_on_lower_layers() {
    let mut placed = BTreeSet::new();
    for name in LAYERS.iter().flat_map(|layer| layer.iter()) {
        assert!(placed.insert(*name), "`{name}` is placed twice in LAYERS");
    }
    let violations = layer_violations(&workspace_metadata(), LAYERS);
    assert!(violations.is_empty(), "the crate layers are broken:\n{}", violations.join("\n"));
}

#[test]
fn no_crate_has_a_circle_between_its_modules() {
    let metadata = workspace_metadata();
    let workspace_root = PathBuf::from(metadata["workspace_root"].as_str().expect("workspace_root"));
    let mut report = String::new();
    for (label, root_file) in source_roots(&metadata) {
        let circles = module_circles(&root_file, &workspace_root);
        if !circles.is_empty() {
            report.push_str(&format!("{label}: {} circle(s)\n", circles.len()));
            for circle in circles {
                report.push_str(&circle.to_string());
            }
        }
    }
    assert!(report.is_empty(), "modules refer to each other in a circle:\n{report}");
}

/// The longest a source file may grow: past it, a file holds more than one concern and is split
/// by concern (data files and generated files are not source files).
const MAX_SOURCE_LINES: usize = 800;

#[test]
fn no_source_file_is_longer_than_the_limit() {
    let metadata = workspace_metadata();
    let workspace_root = PathBuf::from(metadata["workspace_root"].as_str().expect("workspace_root"));
    let mut files = Vec::new();
    for top in ["crates", "tests", "plugin-stub"] {
        source_files(&workspace_root.join(top), &mut files);
    }
    assert!(files.len() > 50, "found only {} source files under {}", files.len(), workspace_root.display());
    let too_long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path).ok()?.lines().count();
            (lines > MAX_SOURCE_LINES).then(|| format!("{} has {lines} lines", path.display()))
        })
        .collect();
    assert!(too_long.is_empty(), "split these by concern (at most {MAX_SOURCE_LINES} lines):\n{}", too_long.join("\n"));
}

/// The Rust, TypeScript and JavaScript sources under `dir`, without installed packages, build
/// output (`target`, the plugin's generated `dist`) or data.
fn source_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["node_modules", "target", "dist", "data", "fixtures"].contains(&name.as_str())
                && !name.starts_with('.')
            {
                source_files(&path, files);
            }
        } else if [".rs", ".ts", ".mjs"].iter().any(|extension| name.ends_with(extension)) {
            files.push(path);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Crate layers
// ---------------------------------------------------------------------------------------------

/// The workspace's `cargo metadata`, run with the cargo that runs the tests.
fn workspace_metadata() -> Value {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("Cargo.toml");
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("cargo metadata could not be started");
    assert!(output.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("cargo metadata printed JSON")
}

/// The workspace's own packages in `metadata`, by name.
fn workspace_packages(metadata: &Value) -> BTreeMap<String, &Value> {
    let members: BTreeSet<&str> =
        metadata["workspace_members"].as_array().expect("workspace_members").iter().filter_map(Value::as_str).collect();
    metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|package| package["id"].as_str().is_some_and(|id| members.contains(id)))
        .map(|package| (package["name"].as_str().expect("package name").to_owned(), package))
        .collect()
}

/// Every dependency of a workspace crate on another that `layers` forbids, and every workspace
/// crate `layers` does not place, one sentence each.
fn layer_violations(metadata: &Value, layers: &[&[&str]]) -> Vec<String> {
    let layer_of = |name: &str| layers.iter().position(|layer| layer.contains(&name));
    let packages = workspace_packages(metadata);
    let mut violations = Vec::new();
    for (name, package) in &packages {
        let Some(layer) = layer_of(name) else {
            violations.push(format!(
                "`{name}` is not in the layer table (LAYERS in tests/tests/structure.rs): place it in a layer"
            ));
            continue;
        };
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            let dependency_name = dependency["name"].as_str().expect("dependency name");
            if !packages.contains_key(dependency_name) {
                continue;
            }
            // An unplaced dependency is reported as a crate of its own above.
            let Some(dependency_layer) = layer_of(dependency_name) else { continue };
            let kind = dependency["kind"].as_str().unwrap_or("normal");
            let (allowed, rule) = if kind == "dev" {
                (dependency_layer <= layer, "a dev-dependency may be on the same layer or lower, never higher")
            } else {
                (dependency_layer < layer, "a crate may depend only on crates of strictly lower layers")
            };
            if !allowed {
                violations.push(format!(
                    "`{name}` (layer {layer}) has a {kind} dependency on `{dependency_name}` (layer {dependency_layer}): {rule}"
                ));
            }
        }
    }
    violations
}

/// Each workspace crate's library and binary roots under its `src/`, with a label such as
/// `knowhubd (lib crates/knowhubd/src/lib.rs)`. A binary's `main.rs` next to a `lib.rs` is a root
/// of its own, above the library (it names the library by the crate's name, not `crate::`).
fn source_roots(metadata: &Value) -> Vec<(String, PathBuf)> {
    let workspace_root = Path::new(metadata["workspace_root"].as_str().expect("workspace_root"));
    let mut roots = Vec::new();
    for (name, package) in workspace_packages(metadata) {
        let manifest = Path::new(package["manifest_path"].as_str().expect("manifest_path"));
        let source_dir = manifest.parent().expect("a manifest has a directory").join("src");
        let mut seen = BTreeSet::new();
        for target in package["targets"].as_array().into_iter().flatten() {
            let kinds: Vec<&str> = target["kind"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let is_library_or_binary = kinds
                .iter()
                .any(|kind| matches!(*kind, "lib" | "rlib" | "dylib" | "cdylib" | "staticlib" | "proc-macro" | "bin"));
            let source = PathBuf::from(target["src_path"].as_str().expect("src_path"));
            if is_library_or_binary && source.starts_with(&source_dir) && seen.insert(source.clone()) {
                let shown = source.strip_prefix(workspace_root).unwrap_or(&source).display().to_string();
                roots.push((format!("{name} ({} {shown})", kinds.join("+")), source));
            }
        }
    }
    roots
}

// ---------------------------------------------------------------------------------------------
// Module circles
// ---------------------------------------------------------------------------------------------

/// One place a file refers to another module.
#[derive(Clone, Debug)]
struct ReferenceSite {
    file: String,
    line: usize,
    text: String,
    /// Inside a `mod tests` (inline, or a file `tests.rs`).
    in_test: bool,
}

/// The references from child `from` to child `to` of one parent module.
#[derive(Debug)]
struct Edge {
    from: String,
    to: String,
    sites: Vec<ReferenceSite>,
}

impl Edge {
    fn only_from_tests(&self) -> bool {
        self.sites.iter().all(|site| site.in_test)
    }
}

/// A strongly connected set of children of one parent module: each reaches every other.
#[derive(Debug)]
struct Circle {
    /// `crate`, or the parent's path such as `crate::server`.
    parent: String,
    members: Vec<String>,
    files: Vec<String>,
    edges: Vec<Edge>,
    /// The circle disappears (or shrinks) once references from test code are left out.
    only_through_tests: bool,
}

impl fmt::Display for Circle {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(formatter, "  among the children of `{}`: {}", self.parent, self.members.join(", "))?;
        if self.only_through_tests {
            writeln!(formatter, "    (this circle exists only through references from test code)")?;
        }
        writeln!(formatter, "    files: {}", self.files.join(", "))?;
        for edge in &self.edges {
            let site = &edge.sites[0];
            let more = match edge.sites.len() {
                1 => String::new(),
                n => format!(" (+{} more)", n - 1),
            };
            let tests = if edge.only_from_tests() { " [only from test code]" } else { "" };
            writeln!(
                formatter,
                "    {} -> {}: {}:{}: {}{more}{tests}",
                edge.from, edge.to, site.file, site.line, site.text
            )?;
        }
        Ok(())
    }
}

/// Every circle between sibling modules of the module tree rooted at `root_file` (a `lib.rs` or
/// `main.rs`), for every parent module. Files are shown relative to `display_base`.
fn module_circles(root_file: &Path, display_base: &Path) -> Vec<Circle> {
    let tree = ModuleTree::read(root_file, display_base);
    let mut circles = Vec::new();
    for (parent, edges) in tree.edges_by_parent() {
        let all_edges: BTreeSet<(String, String)> = edges.keys().cloned().collect();
        let without_tests: BTreeSet<(String, String)> =
            edges.iter().filter(|(_, edge)| !edge.only_from_tests()).map(|(key, _)| key.clone()).collect();
        let components_without_tests = strongly_connected_components(&without_tests);
        for members in strongly_connected_components(&all_edges) {
            let only_through_tests = !components_without_tests.contains(&members);
            let member_set: BTreeSet<&String> = members.iter().collect();
            let mut files = BTreeSet::new();
            let mut circle_edges = Vec::new();
            for ((from, to), edge) in &edges {
                if member_set.contains(from) && member_set.contains(to) {
                    files.extend(edge.sites.iter().map(|site| site.file.clone()));
                    circle_edges.push(Edge { from: from.clone(), to: to.clone(), sites: edge.sites.clone() });
                }
            }
            for member in &members {
                let mut module = parent.clone();
                module.push(member.clone());
                if let Some(file) = tree.files.get(&module) {
                    files.insert(file.clone());
                }
            }
            circles.push(Circle {
                parent: module_name(&parent),
                members,
                files: files.into_iter().collect(),
                edges: circle_edges,
                only_through_tests,
            });
        }
    }
    circles
}

fn module_name(path: &[String]) -> String {
    std::iter::once("crate").chain(path.iter().map(String::as_str)).collect::<Vec<_>>().join("::")
}

/// The strongly connected components of more than one node (Tarjan's algorithm), each sorted, in
/// the order of their smallest node.
fn strongly_connected_components(edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        successors: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, node: &'a str) {
            let node_index = self.index.len();
            self.index.insert(node, node_index);
            self.low.insert(node, node_index);
            self.stack.push(node);
            self.on_stack.insert(node);
            for successor in self.successors.get(node).cloned().unwrap_or_default() {
                if !self.index.contains_key(successor) {
                    self.visit(successor);
                    let low = self.low[node].min(self.low[successor]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(successor) {
                    let low = self.low[node].min(self.index[successor]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member.to_owned());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.components.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        successors: BTreeMap::new(),
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for (from, to) in edges {
        tarjan.successors.entry(from.as_str()).or_default().push(to.as_str());
        tarjan.successors.entry(to.as_str()).or_default();
    }
    let nodes: Vec<&str> = tarjan.successors.keys().copied().collect();
    for node in nodes {
        if !tarjan.index.contains_key(node) {
            tarjan.visit(node);
        }
    }
    let mut components = tarjan.components;
    components.sort();
    components
}

/// A crate's module tree as read from its files: which file each module is, and every reference
/// from a file to a module path of the same crate.
struct ModuleTree {
    /// Module path (empty for the root) to the file, relative to the display base.
    files: BTreeMap<Vec<String>, String>,
    /// Every module path with a file, and every ancestor of one (an inline module holding a
    /// file module).
    known_modules: BTreeSet<Vec<String>>,
    /// (module path of the referring file, referred path resolved from the crate root, site).
    references: Vec<(Vec<String>, Vec<String>, ReferenceSite)>,
}

impl ModuleTree {
    fn read(root_file: &Path, display_base: &Path) -> ModuleTree {
        let mut tree = ModuleTree { files: BTreeMap::new(), known_modules: BTreeSet::new(), references: Vec::new() };
        // (file, module path, whether the file owns its directory as `lib.rs`, `main.rs` and `mod.rs` do)
        let mut pending = vec![(root_file.to_path_buf(), Vec::<String>::new(), true)];
        while let Some((file, module, owns_directory)) = pending.pop() {
            let source =
                std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("reading {}: {error}", file.display()));
            let shown = file.strip_prefix(display_base).unwrap_or(&file).display().to_string();
            let scan = scan_file(&source, &module, &shown);
            let directory = if owns_directory {
                file.parent().expect("a file has a directory").to_path_buf()
            } else {
                file.with_extension("")
            };
            for (inline_modules, name) in scan.declared_modules {
                let child_directory = inline_modules.iter().fold(directory.clone(), |path, inline| path.join(inline));
                let mut child_module = module.clone();
                child_module.extend(inline_modules);
                child_module.push(name.clone());
                let flat = child_directory.join(format!("{name}.rs"));
                let nested = child_directory.join(&name).join("mod.rs");
                if flat.is_file() {
                    pending.push((flat, child_module, false));
                } else if nested.is_file() {
                    pending.push((nested, child_module, true));
                } else {
                    panic!("{shown}: `mod {name};` has neither {} nor {}", flat.display(), nested.display());
                }
            }
            tree.references.extend(scan.references.into_iter().map(|(path, site)| (module.clone(), path, site)));
            for length in 0..=module.len() {
                tree.known_modules.insert(module[..length].to_vec());
            }
            tree.files.insert(module, shown);
        }
        tree
    }

    /// For every parent module, the references between its direct children, keyed by (from, to).
    fn edges_by_parent(&self) -> BTreeMap<Vec<String>, BTreeMap<(String, String), Edge>> {
        let mut by_parent: BTreeMap<Vec<String>, BTreeMap<(String, String), Edge>> = BTreeMap::new();
        for (from_module, to_path, site) in &self.references {
            let common = from_module.iter().zip(to_path).take_while(|(a, b)| a == b).count();
            // A module and its own descendants (or ancestors) refer to each other freely.
            if common == from_module.len() || common == to_path.len() {
                continue;
            }
            let to_child = to_path[..=common].to_vec();
            // An item of the parent itself (`crate::Config`), or of an inline module: not a child.
            if !self.known_modules.contains(&to_child) {
                continue;
            }
            let parent = from_module[..common].to_vec();
            let key = (from_module[common].clone(), to_path[common].clone());
            by_parent
                .entry(parent)
                .or_default()
                .entry(key.clone())
                .or_insert_with(|| Edge { from: key.0, to: key.1, sites: Vec::new() })
                .sites
                .push(site.clone());
        }
        by_parent
    }
}

/// Writes `files` (path relative to a new temporary directory, contents) and returns the directory.
fn synthetic_crate(files: &[(&str, &str)]) -> tempfile::TempDir {
    let directory = tempfile::tempdir().expect("a temporary directory");
    for (path, contents) in files {
        let path = directory.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("creating a directory");
        std::fs::write(path, contents).expect("writing a file");
    }
    directory
}

fn circles_of(files: &[(&str, &str)]) -> Vec<Circle> {
    let directory = synthetic_crate(files);
    module_circles(&directory.path().join("src/lib.rs"), directory.path())
}

fn edge_list(circle: &Circle) -> Vec<(String, String)> {
    circle.edges.iter().map(|edge| (edge.from.clone(), edge.to.clone())).collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(from, to)| (from.to_string(), to.to_string())).collect()
}

#[test]
fn checker_finds_a_circle_through_crate_and_super_paths() {
    let circles = circles_of(&[
        ("src/lib.rs", "//! Root.\nmod a;\nmod b;\n"),
        ("src/a.rs", "//! A.\nuse crate::b::X;\npub struct Y;\n"),
        ("src/b.rs", "//! B.\npub struct X;\n\nfn make() -> super::a::Y {\n    super::a::Y\n}\n"),
    ]);
    assert_eq!(circles.len(), 1, "{circles:?}");
    let circle = &circles[0];
    assert_eq!(circle.parent, "crate");
    assert_eq!(circle.members, ["a", "b"]);
    assert_eq!(circle.files, ["src/a.rs", "src/b.rs"]);
    assert!(!circle.only_through_tests);
    let report = circle.to_string();
    assert!(report.contains("a -> b: src/a.rs:2: use crate::b::X;"), "{report}");
    assert!(report.contains("b -> a: src/b.rs:4: fn make() -> super::a::Y { (+1 more)"), "{report}");
}

#[test]
fn checker_lets_parents_and_children_refer_to_each_other() {
    let circles = circles_of(&[
        ("src/lib.rs", "//! Root.\nmod a;\nmod b;\nuse crate::a::X;\npub use self::b::Z;\npub struct Root;\n"),
        ("src/a.rs", "//! A.\nmod inner;\nuse crate::Root;\nuse self::inner::Deep;\npub struct X;\n"),
        (
            "src/a/inner.rs",
            "//! A's child.\nuse super::X;\nuse super::super::Root;\nuse crate::a::X as Again;\npub struct Deep;\n",
        ),
        ("src/b/mod.rs", "//! B, in the mod.rs layout.\nmod c;\nuse crate::Root;\npub use c::Z;\n"),
        ("src/b/c.rs", "//! B's child.\nuse crate::b::*;\nuse super::super::Root;\npub struct Z;\n"),
    ]);
    assert!(circles.is_empty(), "{circles:?}");
}

#[test]
fn checker_reads_grouped_and_nested_use_trees_and_skips_comments_and_strings() {
    let circles = circles_of(&[
        ("src/lib.rs", "//! Root.\nmod a;\nmod b;\nmod c;\n"),
        (
            "src/a.rs",
            "//! A (mentions crate::c::C only in comments and strings).\n\
             use crate::{b::B, Root};\n\
             // use crate::c::C;\n\
             /* crate::c::C /* nested */ crate::c::C */\n\
             const TEXT: &str = \"crate::c::C\";\n\
             const RAW: &str = r#\"crate::c::C \"quoted\" {\"#;\n\
             const BRACE: char = '{';\n\
             fn borrow<'a>(text: &'a str) -> &'a str { text }\n\
             pub struct A;\n",
        ),
        ("src/b.rs", "//! B.\nuse crate::{\n    c::{self, C as _},\n};\npub struct B;\n"),
        ("src/c.rs", "//! C.\nuse crate::{a::*};\nmacro_rules! m { () => { $crate::b::B } }\npub struct C;\n"),
    ]);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(circles[0].members, ["a", "b", "c"]);
    assert_eq!(edge_list(&circles[0]), pairs(&[("a", "b"), ("b", "c"), ("c", "a")]));
    assert_eq!(circles[0].edges[1].sites[0].line, 3, "the line of the nested path's last segment");
}

#[test]
fn checker_finds_circles_below_the_root_and_marks_those_made_by_tests() {
    let circles = circles_of(&[
        ("src/lib.rs", "//! Root.\nmod server;\n"),
        ("src/server.rs", "//! Server.\nmod body;\nmod ids;\n"),
        ("src/server/body.rs", "//! Body.\nuse super::ids::Id;\npub struct Body;\n"),
        (
            "src/server/ids.rs",
            "//! Ids.\npub struct Id;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::server::body::Body;\n}\n",
        ),
    ]);
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert_eq!(circles[0].parent, "crate::server");
    assert_eq!(edge_list(&circles[0]), pairs(&[("body", "ids"), ("ids", "body")]));
    assert!(circles[0].only_through_tests);
    assert!(
        circles[0]
            .to_string()
            .contains("ids -> body: src/server/ids.rs:6: use crate::server::body::Body; [only from test code]")
    );
}

#[test]
fn checker_flags_layering_violations_in_metadata() {
    let package = |name: &str, dependencies: &[(&str, Option<&str>)]| {
        serde_json::json!({
            "name": name,
            "id": format!("path+file:///w/{name}#0.1.0"),
            "dependencies": dependencies
                .iter()
                .map(|(dependency, kind)| serde_json::json!({"name": dependency, "kind": kind}))
                .collect::<Vec<_>>(),
        })
    };
    let packages = vec![
        package("kb-core", &[("serde", None), ("kb-store", None)]),
        package("kb-store", &[("kb-core", None), ("kb-index", Some("dev"))]),
        package("kb-index", &[("kb-core", None), ("knowhubd", Some("dev"))]),
        package("kb-proto", &[("kb-hub", Some("build"))]),
        package("kb-hub", &[("kb-core", None)]),
        package("knowhubd", &[("kb-store", None), ("kb-index", None)]),
        package("kb-new", &[("kb-core", None)]),
    ];
    let members: Vec<Value> = packages.iter().map(|package| package["id"].clone()).collect();
    let metadata = serde_json::json!({"packages": packages, "workspace_members": members});
    let violations = layer_violations(&metadata, LAYERS);
    assert_eq!(
        violations,
        [
            "`kb-core` (layer 0) has a normal dependency on `kb-store` (layer 1): a crate may depend only on crates of strictly lower layers",
            "`kb-index` (layer 1) has a dev dependency on `knowhubd` (layer 3): a dev-dependency may be on the same layer or lower, never higher",
            "`kb-new` is not in the layer table (LAYERS in tests/tests/structure.rs): place it in a layer",
            "`kb-proto` (layer 1) has a build dependency on `kb-hub` (layer 1): a crate may depend only on crates of strictly lower layers",
        ]
    );
}
