//! The int8 rewrite of a local model kept on disk between starts ([`LoadOptions::int8_cache`]):
//! `<cache>/<model id>/model.onnx` with its large tables in `weights.bin` at aligned offsets,
//! which ONNX Runtime maps instead of copying.
//!
//! Two things follow. Only the pages of a table that some token reads become resident (for
//! multilingual-e5-small the int8 word table is 92 MiB; Chinese and English text touch a small
//! part of its 250k rows). And a start that finds the cache does not read the 470 MB float file,
//! so it neither holds it in memory nor rewrites it again.
//!
//! The directory is written under a temporary name and renamed when complete, so a crash leaves
//! no half-written model under a real name. Its `checksums` file holds the blake3 of both files,
//! checked at every start (about 0.1 s, read through the page cache, nothing mapped): a damaged
//! cache is rewritten; one that still does not load is removed and the model is rewritten in
//! memory instead. Directories of other model ids are removed once a
//! new one is in place: the cache holds one model.
//!
//! [`LoadOptions::int8_cache`]: crate::LoadOptions::int8_cache

use std::path::{Path, PathBuf};

/// The graph, and its tables (the names the graph's external data entries use).
const GRAPH: &str = "model.onnx";
const TABLES: &str = "weights.bin";
const CHECKSUMS: &str = "checksums";
/// Initializers at least this large go to the tables file (the word table, the int8 matrices).
const MIN_EXTERNAL_BYTES: usize = 1 << 20;

/// The cached graph of `model_id` under `cache_root`, written there first if it is not yet:
/// the float model at `onnx_path` read, rewritten in int8 and its large tables moved out.
pub fn prepare(onnx_path: &Path, model_id: &str, cache_root: &Path) -> Result<PathBuf, String> {
    let dir = cache_root.join(dir_name(model_id));
    let graph = dir.join(GRAPH);
    if dir.exists() {
        match (std::fs::read_to_string(dir.join(CHECKSUMS)), checksums(&dir)) {
            (Ok(expected), Ok(found)) if expected == found => {
                drop_cached_pages(&dir.join(TABLES));
                return Ok(graph);
            }
            _ => {
                tracing::warn!(path = %dir.display(), "the cached int8 model is damaged or incomplete: written again");
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
    let float = std::fs::read(onnx_path).map_err(|error| format!("cannot read {}: {error}", onnx_path.display()))?;
    let quantized = crate::quantize_int8(&float)?;
    drop(float);
    let externalized = crate::quantize::externalize(&quantized.model, TABLES, MIN_EXTERNAL_BYTES)?;
    drop(quantized);
    std::fs::create_dir_all(cache_root).map_err(|error| format!("cannot create {}: {error}", cache_root.display()))?;
    let temporary = cache_root.join(format!(".{}.{}.tmp", dir_name(model_id), std::process::id()));
    let written = (|| {
        std::fs::create_dir_all(&temporary)?;
        std::fs::write(temporary.join(TABLES), &externalized.data)?;
        std::fs::write(temporary.join(GRAPH), &externalized.model)?;
        std::fs::write(temporary.join(CHECKSUMS), checksums(&temporary)?)?;
        // Durable before the rename makes it the cache.
        for name in [TABLES, GRAPH, CHECKSUMS] {
            std::fs::File::open(temporary.join(name))?.sync_all()?;
        }
        std::fs::rename(&temporary, &dir)
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_dir_all(&temporary);
        return Err(format!("cannot write the int8 model into {}: {error}", cache_root.display()));
    }
    drop_cached_pages(&dir.join(TABLES));
    tracing::info!(path = %dir.display(), tables = externalized.moved, "int8 model cached");
    // One model at a time: the others' ids are no longer loaded.
    if let Ok(entries) = std::fs::read_dir(cache_root) {
        for entry in entries.flatten() {
            if entry.path() != dir && entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    Ok(graph)
}

/// The blake3 of the graph and the tables in `dir`, one line each.
fn checksums(dir: &Path) -> std::io::Result<String> {
    let mut lines = String::new();
    for name in [GRAPH, TABLES] {
        let mut hasher = blake3::Hasher::new();
        std::io::copy(&mut std::fs::File::open(dir.join(name))?, &mut hasher)?;
        lines.push_str(&format!("{name} {}\n", hasher.finalize().to_hex()));
    }
    Ok(lines)
}

/// Tells the kernel that the tables file beside `graph`, once ONNX Runtime has mapped it, is
/// read at random: a token's row is a fraction of a page, and read-ahead would bring in the
/// rows around it that no text asked for (Linux; elsewhere nothing). Together with the page
/// cache dropped first ([`drop_cached_pages`]), 100 short queries and 64 long texts left 0.4 MiB
/// of multilingual-e5-small's 92 MiB table resident (`examples/model_memory.rs`); with the
/// cache still holding the just-written file, 26 MiB.
pub fn advise_random_access(graph: &Path) {
    #[cfg(target_os = "linux")]
    {
        let Some(tables) = graph.parent().map(|dir| dir.join(TABLES)) else { return };
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return };
        let tables = tables.to_string_lossy();
        for line in maps.lines().filter(|line| line.ends_with(tables.as_ref())) {
            let Some((start, end)) = line.split_whitespace().next().and_then(|range| range.split_once('-')) else {
                continue;
            };
            let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
                continue;
            };
            // SAFETY: MADV_RANDOM only changes the kernel's read-ahead for pages of a mapping
            // this process holds (the range comes from its own /proc/self/maps); it never
            // changes their contents or unmaps them.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_RANDOM);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = graph;
}

/// Evicts `path` from the page cache (Linux; elsewhere nothing). Just written or just read for
/// its checksum, the tables sit in the page cache in large folios, and a mapping then makes a
/// whole folio resident for one row; evicted, each row read faults in one page.
fn drop_cached_pages(path: &Path) {
    #[cfg(target_os = "linux")]
    if let Ok(file) = std::fs::File::open(path) {
        use std::os::fd::AsRawFd;
        // SAFETY: posix_fadvise only advises the kernel about the page cache of an open file.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = path;
}

/// Removes the cached model whose graph is `graph` (it did not load).
pub fn remove(graph: &Path) {
    if let Some(dir) = graph.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// A directory name for a model id: its letters, digits, `-`, `.` and `@`, the rest as `_`.
fn dir_name(model_id: &str) -> String {
    model_id.chars().map(|c| if c.is_ascii_alphanumeric() || "-.@".contains(c) { c } else { '_' }).collect()
}
