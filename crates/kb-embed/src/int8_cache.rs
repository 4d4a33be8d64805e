//! The int8 rewrite of a local model kept on disk between starts ([`LoadOptions::int8_cache`]):
//! `<cache>/<model id>/model.onnx` with its large tables in `weights.bin` at aligned offsets,
//! which ONNX Runtime maps instead of copying.
//!
//! Two things follow. Only the pages of a table that some token reads become resident (for
//! multilingual-e5-small the int8 word table is 92 MiB; Chinese and English text touch a small
//! part of its 250k rows). And a start that finds the cache does not read the 470 MB float file:
//! its id is remembered beside the cache ([`remembered_float_id`]), so the start neither hashes
//! it, holds it in memory nor rewrites it. The first start maps the float file and lets each
//! piece go once it is rewritten, writing the tables as they are made (`quantize_int8_to`).
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
/// Beside the model directories: the float model's id and what identified its file.
const FLOAT_ID: &str = "float-model-id";
/// Initializers at least this large go to the tables file (the word table, the int8 matrices).
const MIN_EXTERNAL_BYTES: usize = 1 << 20;

/// The cached graph of `model_id` under `cache_root`, written there first if it is not yet:
/// the float model at `onnx_path` mapped, rewritten in int8 with its large tables written to a
/// file of their own as they are made.
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
    std::fs::create_dir_all(cache_root).map_err(|error| format!("cannot create {}: {error}", cache_root.display()))?;
    let temporary = cache_root.join(format!(".{}.{}.tmp", dir_name(model_id), std::process::id()));
    let cannot_write =
        |error: std::io::Error| format!("cannot write the int8 model into {}: {error}", cache_root.display());
    let moved = write_rewrite(onnx_path, &temporary, cannot_write)
        .and_then(|moved| std::fs::rename(&temporary, &dir).map(|()| moved).map_err(cannot_write))
        .inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&temporary);
        })?;
    drop_cached_pages(&dir.join(TABLES));
    tracing::info!(path = %dir.display(), tables = moved, "int8 model cached");
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

/// Writes the int8 rewrite of the float model at `onnx_path` into the directory `into`: the
/// tables as they are made, then the graph and the checksums, all durable. Returns how many
/// initializers went to the tables; a write error is described by `cannot_write`.
///
/// The float model is mapped, not read, and each piece of it is let go once rewritten, so the
/// rewrite of multilingual-e5-small's 470 MB never has more than a few megabytes of it resident
/// (measured by `examples/model_memory`: peak 830 MiB when it was read whole and the tables made
/// in memory).
fn write_rewrite(
    onnx_path: &Path,
    into: &Path,
    cannot_write: impl Fn(std::io::Error) -> String,
) -> Result<usize, String> {
    use std::io::Write;
    let cannot_read = |error: std::io::Error| format!("cannot read {}: {error}", onnx_path.display());
    let float = std::fs::File::open(onnx_path).map_err(cannot_read)?;
    // SAFETY: the map is read-only and private, and lives only while this function runs. The
    // model files are the daemon's own (downloaded into its data directory, or a directory the
    // user named); one truncated by another process during these seconds would fault the read,
    // as it would ONNX Runtime's own map of external weights.
    let map = unsafe { memmap2::Mmap::map(&float).map_err(cannot_read)? };
    let _ = map.advise(memmap2::Advice::Sequential);
    let let_go = |piece: &[u8]| {
        let offset = piece.as_ptr() as usize - map.as_ptr() as usize;
        // SAFETY: `piece` lies in `map` (the rewrite only hands back slices of its input), and
        // MADV_DONTNEED on a read-only private file mapping only drops this process's copy of
        // those pages: read again, they come back from the file unchanged.
        let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, piece.len()) };
    };
    std::fs::create_dir_all(into).map_err(&cannot_write)?;
    let tables = std::fs::File::create(into.join(TABLES)).map_err(&cannot_write)?;
    let mut tables = std::io::BufWriter::with_capacity(1 << 20, tables);
    let tables_file = crate::TablesFile { writer: &mut tables, file_name: TABLES, min_bytes: MIN_EXTERNAL_BYTES };
    let quantized = crate::quantize_int8_to(&map, Some(tables_file), &let_go)?;
    drop(map);
    drop_cached_pages(onnx_path);
    // Durable before the rename makes it the cache.
    let durable = || -> std::io::Result<()> {
        tables.into_inner().map_err(|error| error.into_error())?.sync_all()?;
        let mut graph = std::fs::File::create(into.join(GRAPH))?;
        graph.write_all(&quantized.model)?;
        graph.sync_all()?;
        let mut sums = std::fs::File::create(into.join(CHECKSUMS))?;
        sums.write_all(checksums(into)?.as_bytes())?;
        sums.sync_all()
    };
    durable().map_err(cannot_write)?;
    Ok(quantized.moved)
}

/// The id of the float model at `onnx_path`, as `compute` gives it (by hashing the whole file),
/// remembered under `cache_root` with what identifies the file (its path, size, device, inode,
/// modification and change times; any write changes the last) and `settings` (everything else
/// the id covers): a start that finds them unchanged does not read the 470 MB file again.
pub fn remembered_float_id(
    cache_root: &Path,
    onnx_path: &Path,
    settings: &str,
    compute: impl FnOnce() -> std::io::Result<String>,
) -> std::io::Result<String> {
    let memo = cache_root.join(FLOAT_ID);
    let stamp = file_stamp(onnx_path, settings);
    if let (Some(stamp), Ok(text)) = (&stamp, std::fs::read_to_string(&memo))
        && let Some((remembered, id)) = text.split_once('\n')
        && remembered == stamp
        && !id.trim().is_empty()
    {
        return Ok(id.trim().to_owned());
    }
    let id = compute()?;
    // A cache that cannot be written costs the next start a hash, nothing else.
    if let Some(stamp) = stamp
        && std::fs::create_dir_all(cache_root).is_ok()
    {
        let temporary = cache_root.join(format!(".{FLOAT_ID}.{}.tmp", std::process::id()));
        if std::fs::write(&temporary, format!("{stamp}\n{id}\n"))
            .and_then(|()| std::fs::rename(&temporary, &memo))
            .is_err()
        {
            let _ = std::fs::remove_file(&temporary);
        }
    }
    Ok(id)
}

/// What identifies the file at `path` and the `settings` it is used with, on one line; `None`
/// when the file cannot be looked at (the id is then computed every time).
fn file_stamp(path: &Path, settings: &str) -> Option<String> {
    let canonical = path.canonicalize().ok()?;
    let metadata = std::fs::metadata(&canonical).ok()?;
    let modified = metadata.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    #[cfg(unix)]
    let identity = {
        use std::os::unix::fs::MetadataExt;
        format!("dev={} ino={} ctime={}.{:09}", metadata.dev(), metadata.ino(), metadata.ctime(), metadata.ctime_nsec())
    };
    #[cfg(not(unix))]
    let identity = String::new();
    let stamp =
        format!("{} len={} mtime={modified} {identity} settings={settings}", canonical.display(), metadata.len());
    (!stamp.contains('\n')).then_some(stamp)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_float_model_id_is_remembered_until_the_file_or_the_settings_change() {
        let dir = tempfile::tempdir().unwrap();
        let (model, cache) = (dir.path().join("model.onnx"), dir.path().join("cache"));
        std::fs::write(&model, b"float weights").unwrap();
        let computed = std::cell::Cell::new(0);
        let id = |settings: &str| {
            remembered_float_id(&cache, &model, settings, || {
                computed.set(computed.get() + 1);
                Ok(format!("model@{}", std::fs::read_to_string(&model).unwrap().len()))
            })
            .unwrap()
        };
        assert_eq!(id("max_length=512"), "model@13");
        assert_eq!(id("max_length=512"), "model@13");
        assert_eq!(computed.get(), 1, "the second start must not hash the file again");
        assert_eq!(id("max_length=256"), "model@13");
        assert_eq!(computed.get(), 2, "other settings, computed again");
        // Replaced by a file of the same size (a new download renamed over it): computed again.
        // (Rewriting in place changes the change time, but two writes within one clock tick of
        // the file system can share it, which a test would meet and a start does not.)
        std::fs::write(dir.path().join("new.onnx"), b"other weights").unwrap();
        std::fs::rename(dir.path().join("new.onnx"), &model).unwrap();
        assert_eq!(id("max_length=256"), "model@13");
        assert_eq!(computed.get(), 3, "a written file must be hashed again");
        std::fs::write(&model, b"weights, longer now").unwrap();
        assert_eq!(id("max_length=256"), "model@19");
        // A damaged memo is only a reason to compute again.
        std::fs::write(cache.join(FLOAT_ID), b"garbage").unwrap();
        assert_eq!(id("max_length=256"), "model@19");
        assert_eq!(computed.get(), 5);
    }
}
