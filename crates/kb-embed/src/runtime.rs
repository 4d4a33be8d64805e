//! Loading ONNX Runtime from a library file at run time, turning every failure into an [`Error`].
//!
//! `ort` built with `load-dynamic` opens the library lazily, on its first API call, and panics
//! when that fails. So nothing here or in `fastembed` may touch `ort` before
//! [`environment`] has called `ort::init_from` with a path that loaded: that call reports a
//! missing file, a file that is not a library, a library that is not ONNX Runtime and one that
//! is too old as errors, and then pins the library for the rest of the process.
//!
//! ONNX Runtime is process-global in two ways: one library per process (a second
//! `ort::init_from` is silently ignored, so a different path is refused here rather than
//! ignored) and one environment per process (kept here and handed to every session).
//!
//! Tests and benchmarks find the library with [`library_for_tests_and_benchmarks`], which asks
//! Python; the daemon never does.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use ort::environment::Environment;

use crate::{Error, Result};

/// The environment variable that names the ONNX Runtime library file.
pub const ORT_DYLIB_PATH: &str = "ORT_DYLIB_PATH";

/// The library's file name on this platform, searched for on the loader's path when neither
/// the caller nor `ORT_DYLIB_PATH` names a file.
pub const LIBRARY_NAME: &str = if cfg!(target_os = "windows") {
    "onnxruntime.dll"
} else if cfg!(target_os = "macos") {
    "libonnxruntime.dylib"
} else {
    "libonnxruntime.so"
};

/// The runtime this process loaded: the library (as given, made absolute when it is a path) and
/// the one environment every session shares.
struct LoadedRuntime {
    library: PathBuf,
    environment: Environment,
}

static LOADED: Mutex<Option<LoadedRuntime>> = Mutex::new(None);

/// Which library to load: the caller's choice (from the config), else `ORT_DYLIB_PATH`, else
/// the bare [`LIBRARY_NAME`] for the dynamic loader to search.
pub fn resolve_library(explicit: Option<&Path>) -> PathBuf {
    if let Some(path) = explicit {
        return path.to_path_buf();
    }
    match std::env::var_os(ORT_DYLIB_PATH) {
        Some(value) if !value.is_empty() => PathBuf::from(value),
        _ => PathBuf::from(LIBRARY_NAME),
    }
}

/// Finds the ONNX Runtime library for tests and benchmarks: `ORT_DYLIB_PATH` when set (it must
/// name a file), else the newest `libonnxruntime` in the `capi` directory of the `onnxruntime`
/// package that `python3` imports (`pip install onnxruntime==1.31.1` puts one there). The error
/// says why there is none and how to install one.
///
/// Only for tests and benchmarks, which need a library and may assume a development machine: it
/// runs `python3`. The daemon never calls it, because nothing of KnowHub runs Python at run
/// time; it loads the library that the config, `ORT_DYLIB_PATH` or the loader's search path
/// names ([`resolve_library`]).
pub fn library_for_tests_and_benchmarks() -> std::result::Result<PathBuf, String> {
    let install_hint = format!(
        "install it with `python3 -m pip install onnxruntime==1.31.1`, or set {ORT_DYLIB_PATH} to a {LIBRARY_NAME} \
         of ONNX Runtime 1.{} or newer",
        ort::MINOR_VERSION
    );
    if let Some(path) = std::env::var_os(ORT_DYLIB_PATH).filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            return Err(format!("{ORT_DYLIB_PATH}={} is not a file; {install_hint}", path.display()));
        }
        return Ok(path);
    }
    let output = std::process::Command::new("python3")
        .args(["-c", "import onnxruntime, os; print(os.path.dirname(onnxruntime.__file__))"])
        .output();
    let package_dir = match output {
        Ok(output) if output.status.success() => PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()),
        Ok(output) => {
            return Err(format!(
                "ONNX Runtime not found: python3 cannot import onnxruntime ({}); {install_hint}",
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Err(error) => return Err(format!("ONNX Runtime not found: cannot run python3 ({error}); {install_hint}")),
    };
    let capi = package_dir.join("capi");
    let entries = std::fs::read_dir(&capi)
        .map_err(|error| format!("ONNX Runtime not found: cannot list {} ({error}); {install_hint}", capi.display()))?;
    let mut libraries: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            // `libonnxruntime.so.1.31.1` on Linux, `libonnxruntime.1.31.1.dylib` on macOS, never
            // `libonnxruntime_providers_shared.so` beside them.
            name.starts_with("libonnxruntime.so")
                || name.starts_with("libonnxruntime.") && name.ends_with(".dylib")
                || name == "onnxruntime.dll"
        })
        .collect();
    libraries.sort();
    libraries.pop().ok_or_else(|| format!("ONNX Runtime not found in {}; {install_hint}", capi.display()))
}

/// The library loaded in this process, if any.
pub fn loaded_library() -> Option<PathBuf> {
    LOADED.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map(|loaded| loaded.library.clone())
}

/// Loads ONNX Runtime (once per process) from the library [`resolve_library`] picks and returns
/// the process's environment. Safe to call again: the same library gives the same environment, a
/// different one is an error.
pub fn environment(explicit: Option<&Path>) -> Result<Environment> {
    let requested = resolve_library(explicit);
    let is_bare_name = requested.components().count() == 1 && !requested.is_absolute();
    let requested = if is_bare_name {
        requested
    } else {
        // A path must name an existing file; making it absolute keeps `ort` from resolving it
        // against the executable's directory instead of the working directory.
        if !requested.is_file() {
            return Err(Error::RuntimeMissing { path: requested });
        }
        std::path::absolute(&requested).unwrap_or(requested)
    };

    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(runtime) = loaded.as_ref() {
        if same_file(&runtime.library, &requested) {
            return Ok(runtime.environment.clone());
        }
        return Err(Error::RuntimeAlreadyLoaded { loaded: runtime.library.clone(), requested });
    }

    let builder = ort::init_from(&requested).map_err(|error| load_error(error, &requested, is_bare_name))?;
    let environment = builder
        .with_name("knowhub")
        .with_telemetry(false)
        .build()
        .map_err(|error| Error::Runtime { reason: error.to_string() })?;
    *loaded = Some(LoadedRuntime { library: requested, environment: environment.clone() });
    Ok(environment)
}

fn load_error(error: ort::LoadDynamicError, requested: &Path, is_bare_name: bool) -> Error {
    use ort::LoadDynamicError as Load;
    match error {
        Load::Dlopen { error, path } if is_bare_name => Error::RuntimeUnloadable {
            path,
            reason: format!(
                "{} ({ORT_DYLIB_PATH} is not set and {LIBRARY_NAME} is not on the library search path; \
                 `pip install onnxruntime==1.31.1` provides one under site-packages/onnxruntime/capi)",
                crate::error_chain(&error)
            ),
        },
        Load::Dlopen { error, path } => Error::RuntimeUnloadable { path, reason: crate::error_chain(&error) },
        Load::MissingApi { path } => Error::RuntimeNotOnnx { path },
        Load::BadVersion { version_str, path } => {
            Error::RuntimeTooOld { path, found: version_str, required: ort::MINOR_VERSION }
        }
        Load::InvalidVersionString => Error::RuntimeNotOnnx { path: requested.to_path_buf() },
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
