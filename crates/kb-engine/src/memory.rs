//! Keeps the daemon's heap small: glibc's allocator gives every thread that allocates under
//! contention an arena of its own (up to eight per core) and keeps what is freed in each.
//!
//! The daemon's threads (tokio workers, tantivy's indexing and merging threads, the embedder)
//! all allocate, so freed memory piled up in arenas the next request never used. Measured with
//! `kb-bench load --sizes 100000` (BM25 only): heap after the import 145 MiB with glibc's
//! default, 95 MiB with two arenas, 87 MiB with one; import throughput 27k, 24k and 19k
//! experiences/s (the indexing threads then contend for the arena's lock).

/// Arenas glibc may create: one for the main thread and one shared by all the others.
const MAX_ARENAS: i32 = 2;

/// Caps glibc's malloc arenas. Must run first in `main`, before any thread starts; without
/// glibc (musl, macOS) it does nothing. `MALLOC_ARENA_MAX` in the environment still wins.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets an allocator parameter; no other thread is running yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MAX_ARENAS);
        }
    }
}

/// Hands memory freed inside the allocator's arenas back to the system. Worth its few
/// milliseconds after a burst of large temporary allocations: loading a model reads the whole
/// file and ONNX Runtime copies it while building the session.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of the allocator's own arenas to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}
