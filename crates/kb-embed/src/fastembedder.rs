//! [`FastEmbedder`]: text embedding on ONNX Runtime, from a local model directory (run by
//! [`crate::onnx`]) or from a model fastembed downloads, behind the [`Embedder`] trait.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use fastembed::{EmbeddingModel, TextEmbedding, TextInitOptions, TokenizerFiles};

use crate::onnx::{Graph, LocalModel, LocalTokenizer, SessionOptions, TokenizerBytes};
use crate::{Embedder, Error, Result, runtime};

/// The files a local model directory must hold, as fastembed's `UserDefinedEmbeddingModel`
/// reads them. `model.onnx` may also sit in an `onnx/` subdirectory, as in Hugging Face repos.
pub const LOCAL_MODEL_FILES: [&str; 5] =
    ["model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"];

/// The model downloaded for users who configure none: multilingual-e5-small (MIT; Chinese,
/// English and about 100 more languages), 384 dimensions, mean pooling, `query: ` / `passage: `
/// prefixes, about 470 MB. Measured on the project's Chinese sets it finds the right paragraph
/// by vectors alone about as often as BM25 does, where all-MiniLM-L6-v2 finds a quarter.
pub const DEFAULT_DOWNLOAD_MODEL: &str = "intfloat/multilingual-e5-small";

/// What is written before a text before it is embedded: asymmetric models were trained with one
/// prefix for queries and another for the passages they should find (E5: `query: `,
/// `passage: `); symmetric ones with none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prefixes {
    pub query: String,
    pub passage: String,
}

impl Prefixes {
    /// E5's, as its model card prescribes.
    pub fn e5() -> Prefixes {
        Prefixes { query: "query: ".to_owned(), passage: "passage: ".to_owned() }
    }

    /// The prefixes a model directory declares in sentence-transformers' own file
    /// (`config_sentence_transformers.json`, `"prompts": {"query": .., "passage" or "document": ..}`);
    /// else E5's when `config.json` names an E5 model; else none.
    /// `config_json` is the directory's `config.json`, already read by the caller.
    pub fn for_local_dir(dir: &Path, config_json: &[u8]) -> Prefixes {
        let declared = dir.join("config_sentence_transformers.json");
        // A regular file only: reading anything else (a pipe) could block the load.
        let declared = declared
            .metadata()
            .is_ok_and(|meta| meta.is_file())
            .then(|| std::fs::read(&declared).ok())
            .flatten()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
        if let Some(prompts) = declared.and_then(|config| config.get("prompts").cloned()) {
            let prompt = |keys: &[&str]| {
                keys.iter().find_map(|key| prompts.get(*key).and_then(|value| value.as_str())).unwrap_or("").to_owned()
            };
            return Prefixes { query: prompt(&["query"]), passage: prompt(&["passage", "document"]) };
        }
        let name = serde_json::from_slice::<serde_json::Value>(config_json)
            .ok()
            .and_then(|config| config.get("_name_or_path").and_then(|name| name.as_str().map(str::to_owned)))
            .unwrap_or_default();
        if is_e5(&name) || dir.file_name().is_some_and(|dir| is_e5(&dir.to_string_lossy())) {
            Prefixes::e5()
        } else {
            Prefixes::default()
        }
    }

    /// E5's for a downloaded E5 model, none for the others fastembed offers.
    pub fn for_download(model_code: &str) -> Prefixes {
        if is_e5(model_code) { Prefixes::e5() } else { Prefixes::default() }
    }

    fn describe(&self) -> String {
        format!("query_prefix={:?} passage_prefix={:?}", self.query, self.passage)
    }
}

/// Whether a model name is one of the E5 family (`intfloat/multilingual-e5-small`, `e5-base-v2`..).
pub fn is_e5(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.split(|c: char| !c.is_ascii_alphanumeric()).any(|part| part == "e5")
}

/// Where a model comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// A directory with [`LOCAL_MODEL_FILES`], a BERT-style model whose output is the token
    /// embeddings (`last_hidden_state`), mean-pooled over the attention mask.
    LocalDir(PathBuf),
    /// A model fastembed knows, by its `EmbeddingModel` name (`ParaphraseMLMiniLML12V2`) or its
    /// Hugging Face repository (`Xenova/paraphrase-multilingual-MiniLM-L12-v2`), downloaded into
    /// `cache_dir` the first time. Needs the network once; `HF_ENDPOINT` and `HF_HOME` apply.
    Download { name: String, cache_dir: PathBuf },
}

impl ModelSpec {
    /// [`DEFAULT_DOWNLOAD_MODEL`], cached in `cache_dir`.
    pub fn default_download(cache_dir: impl Into<PathBuf>) -> ModelSpec {
        ModelSpec::Download { name: DEFAULT_DOWNLOAD_MODEL.to_owned(), cache_dir: cache_dir.into() }
    }
}

/// ONNX Runtime's intra-op threads wait for work asleep rather than spinning: the daemon's
/// own threads (BM25, the socket) need the cores between runs.
const NO_SPINNING: (&str, &str) = ("session.intra_op.allow_spinning", "0");

/// Settings that are fixed for the life of a [`FastEmbedder`].
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Texts are truncated to this many tokens (the local MiniLM was trained with 256).
    pub max_length: usize,
    /// Texts per ONNX Runtime run.
    pub batch_size: usize,
    /// ONNX Runtime's threads per run; `None` uses every core. Two by default (one on a
    /// single core), and they sleep instead of spinning when idle: measured with `kb-bench
    /// hybrid` at 100k on the 2-core machine (all-MiniLM-L6-v2), hybrid search p50/p99 went
    /// from 6.8/10.1 ms on one thread to 4.8/8.1 ms, import from 42 to 74 experiences/s, and
    /// searches during an import from 56/86 to 33/48 ms. Spinning threads (ONNX Runtime's
    /// default) took the CPU from the daemon's other threads: vector search p99 10.2 ms.
    pub intra_threads: Option<usize>,
    /// Rewrite a local model's float weights as int8 before loading it ([`crate::quantize_int8`]):
    /// about a quarter of the memory and half the time per query, at a small cost in recall.
    /// Downloaded models are used as published (fastembed offers quantized ones by name).
    pub quantize: bool,
    /// Keep ONNX Runtime's CPU arena (local models): it holds on to the largest activations
    /// ever allocated. Off by default, measured with `examples/model_memory.rs`.
    pub cpu_arena: bool,
    /// Where the int8 rewrite of a local model is kept between starts, its large tables in a
    /// data file that ONNX Runtime maps instead of copying (only the rows of the tokens a text
    /// uses are then resident: multilingual-e5-small's word table is 92 MiB in int8). A start
    /// that finds it there does not read the float model at all. `None`: rewritten in memory
    /// at every start.
    pub int8_cache: Option<PathBuf>,
    /// Called first on each thread ONNX Runtime starts for a local model's session (its
    /// intra-op threads; the thread that asks for a run works on it too): the daemon lowers the
    /// priority of the session that embeds writes and the backlog, so that searches come first.
    /// Models fastembed downloads start their threads the usual way.
    pub on_thread_start: Option<fn()>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |cores| cores.get().min(2));
        LoadOptions {
            max_length: 256,
            batch_size: 32,
            intra_threads: Some(threads),
            quantize: false,
            cpu_arena: false,
            int8_cache: None,
            on_thread_start: None,
        }
    }
}

/// A fastembed model ready to embed. Loading checks the whole path once: the runtime, the
/// files, the session, and one embedding of a probe text, which also gives the dimensions.
pub struct FastEmbedder {
    model_id: String,
    dimensions: usize,
    prefixes: Prefixes,
    batch_size: usize,
    /// Runs need `&mut`; one run at a time is what ONNX Runtime's own threads expect.
    model: Mutex<Runner>,
}

/// What runs the model: this crate's own session for local directories, fastembed's for a
/// download used as published.
enum Runner {
    Local(Box<LocalModel>),
    Fastembed(Box<TextEmbedding>),
}

impl std::fmt::Debug for FastEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastEmbedder").field("model_id", &self.model_id).field("dimensions", &self.dimensions).finish()
    }
}

impl FastEmbedder {
    /// Loads ONNX Runtime from `ort_dylib` (else `ORT_DYLIB_PATH`, else the loader's search path)
    /// and then the model, with the default [`LoadOptions`].
    pub fn load(spec: &ModelSpec, ort_dylib: Option<&Path>) -> Result<FastEmbedder> {
        FastEmbedder::load_with(spec, ort_dylib, &LoadOptions::default())
    }

    /// [`FastEmbedder::load`] with explicit options.
    pub fn load_with(spec: &ModelSpec, ort_dylib: Option<&Path>, options: &LoadOptions) -> Result<FastEmbedder> {
        let environment = runtime::environment(ort_dylib)?;
        let (model, model_id, prefixes) = match spec {
            ModelSpec::LocalDir(dir) => load_local(dir, environment, options)?,
            ModelSpec::Download { name, cache_dir } => load_download(name, cache_dir, environment, options)?,
        };
        let mut embedder = FastEmbedder {
            model_id,
            dimensions: 0,
            prefixes,
            batch_size: options.batch_size.max(1),
            model: Mutex::new(model),
        };
        let probe = embedder.run_batch(&["dimension probe"])?;
        let dimensions = probe.first().map_or(0, Vec::len);
        if dimensions == 0 {
            return Err(Error::BadOutput { model: embedder.model_id, reason: "it returned an empty vector".into() });
        }
        embedder.dimensions = dimensions;
        embedder.check_vectors(&probe)?;
        tracing::info!(model_id = %embedder.model_id, dimensions, query_prefix = %embedder.prefixes.query,
            passage_prefix = %embedder.prefixes.passage, "embedding model loaded");
        Ok(embedder)
    }

    /// The prefixes this model's texts get.
    pub fn prefixes(&self) -> &Prefixes {
        &self.prefixes
    }

    /// Embeds `texts` after `prefix`, in batches of similar length, in order.
    fn embed_prefixed(&self, prefix: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let prefixed: Vec<String>;
        let texts: Vec<&str> = if prefix.is_empty() {
            texts.to_vec()
        } else {
            prefixed = texts.iter().map(|text| format!("{prefix}{text}")).collect();
            prefixed.iter().map(String::as_str).collect()
        };
        // Batches of similar lengths waste little on padding; the order is restored at the end.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_cached_key(|&text_idx| estimated_tokens(texts[text_idx]));
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in order.chunks(self.batch_size) {
            let batch_texts: Vec<&str> = batch.iter().map(|&text_idx| texts[text_idx]).collect();
            let batch_vectors = self.run_batch(&batch_texts)?;
            self.check_vectors(&batch_vectors)?;
            for (&text_idx, vector) in batch.iter().zip(batch_vectors) {
                vectors[text_idx] = vector;
            }
        }
        Ok(vectors)
    }

    /// One ONNX Runtime run over `texts`, turning panics inside fastembed or `ort` into errors so
    /// that a bad model can never take the daemon down.
    fn run_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut model = self.model.lock().unwrap_or_else(PoisonError::into_inner);
        let outcome = catch_unwind(AssertUnwindSafe(|| match &mut *model {
            Runner::Local(model) => model.embed(texts),
            Runner::Fastembed(model) => {
                model.embed(texts, Some(texts.len())).map_err(|error| crate::error_chain(&error))
            }
        }));
        let embed_error =
            |reason: String| Error::Embed { model_id: self.model_id.clone(), n_texts: texts.len(), reason };
        match outcome {
            Ok(Ok(vectors)) if vectors.len() == texts.len() => Ok(vectors),
            Ok(Ok(vectors)) => Err(embed_error(format!("got {} vectors back", vectors.len()))),
            Ok(Err(reason)) => Err(embed_error(reason)),
            Err(panic) => Err(embed_error(format!("panicked: {}", panic_message(&panic)))),
        }
    }

    fn check_vectors(&self, vectors: &[Vec<f32>]) -> Result<()> {
        for vector in vectors {
            let reason = if vector.len() != self.dimensions {
                format!("{} dimensions instead of {}", vector.len(), self.dimensions)
            } else if vector.iter().any(|value| !value.is_finite()) {
                "it contains NaN or infinity".to_owned()
            } else if (crate::vector::dot(vector, vector) - 1.0).abs() > 1e-3 {
                "it is not unit length (all tokens unknown or padding?)".to_owned()
            } else {
                continue;
            };
            return Err(Error::BadOutput { model: self.model_id.clone(), reason });
        }
        Ok(())
    }
}

impl Embedder for FastEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_prefixed(&self.prefixes.passage, texts)
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        let mut vectors = self.embed_prefixed(&self.prefixes.query, &[query])?;
        Ok(vectors.pop().unwrap_or_default())
    }

    /// One passage per hold of the model's lock: writes that need a vector wait on it, and the
    /// longest texts the gate admits take long to tokenize (256 of 12,000 characters took
    /// 1.5–2.5 s with e5 in one go, one of them 6–10 ms).
    fn window_shares(&self, passages: &[&str]) -> Result<Vec<f32>> {
        let prefix = &self.prefixes.passage;
        let mut shares = Vec::with_capacity(passages.len());
        for passage in passages {
            let prefixed = format!("{prefix}{passage}");
            let text = [prefixed.as_str()];
            let mut model = self.model.lock().unwrap_or_else(PoisonError::into_inner);
            let outcome = catch_unwind(AssertUnwindSafe(|| match &mut *model {
                Runner::Local(model) => model.window_shares(&text),
                Runner::Fastembed(model) => crate::onnx::window_shares(&mut model.tokenizer, &text),
            }));
            drop(model);
            let reason = match outcome {
                Ok(Ok(share)) if share.len() == 1 => {
                    shares.push(share[0]);
                    continue;
                }
                Ok(Ok(share)) => format!("got {} shares back for one text", share.len()),
                Ok(Err(reason)) => reason,
                Err(panic) => format!("panicked: {}", panic_message(&panic)),
            };
            return Err(Error::Embed { model_id: self.model_id.clone(), n_texts: passages.len(), reason });
        }
        Ok(shares)
    }
}

/// About how many tokens a BERT-style tokenizer makes of `text`, to sort texts into batches of
/// similar length without tokenizing them: one per Han character (or other non-ASCII letter),
/// one per four bytes of ASCII (a short word and its space, or a piece of a long one).
pub fn estimated_tokens(text: &str) -> usize {
    let n_ascii = text.bytes().filter(u8::is_ascii).count();
    let n_other = text.chars().filter(|character| !character.is_ascii()).count();
    n_other + n_ascii.div_ceil(4)
}

fn load_local(
    dir: &Path,
    environment: ort::environment::Environment,
    options: &LoadOptions,
) -> Result<(Runner, String, Prefixes)> {
    if !dir.is_dir() {
        return Err(Error::ModelDirMissing { path: dir.to_path_buf() });
    }
    let read = |path: PathBuf| std::fs::read(&path).map_err(|source| Error::ModelFile { path, source });
    let onnx_path = [dir.join("model.onnx"), dir.join("onnx").join("model.onnx")]
        .into_iter()
        .find(|path| path.is_file())
        .unwrap_or_else(|| dir.join("model.onnx"));
    let [tokenizer_file, config_file, special_tokens_map_file, tokenizer_config_file] =
        ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]
            .map(|name| read(dir.join(name)));
    let tokenizer_files = TokenizerFiles {
        tokenizer_file: tokenizer_file?,
        config_file: config_file?,
        special_tokens_map_file: special_tokens_map_file?,
        tokenizer_config_file: tokenizer_config_file?,
    };
    let prefixes = Prefixes::for_local_dir(dir, &tokenizer_files.config_file);
    let label = dir.display().to_string();
    let model_error = |reason: String| Error::ModelLoad { model: label.clone(), reason };
    let session_options = SessionOptions {
        intra_threads: options.intra_threads,
        config_entries: &[NO_SPINNING],
        cpu_arena: options.cpu_arena,
        on_thread_start: options.on_thread_start,
    };
    let tokenizer_bytes = TokenizerBytes {
        tokenizer: &tokenizer_files.tokenizer_file,
        config: &tokenizer_files.config_file,
        special_tokens_map: &tokenizer_files.special_tokens_map_file,
        tokenizer_config: &tokenizer_files.tokenizer_config_file,
    };
    let load = |graph: Graph<'_>| match catch_unwind(AssertUnwindSafe(|| {
        let tokenizer = LocalTokenizer::load(&tokenizer_bytes, options.max_length)?;
        LocalModel::load(&environment, graph, tokenizer, &session_options)
    })) {
        Ok(Ok(model)) => Ok(Runner::Local(Box::new(model))),
        Ok(Err(reason)) => Err(reason),
        Err(panic) => Err(format!("panicked: {}", panic_message(&panic))),
    };
    // Large models keep their weights beside the graph; ONNX Runtime must be handed them.
    let external_data_path = onnx_path.with_extension("onnx_data");
    let has_external_data = external_data_path.is_file();

    if options.quantize
        && !has_external_data
        && let Some(cache_root) = &options.int8_cache
    {
        // Everything the id covers but the float file: cheap, and part of what is remembered.
        let settings = local_model_id(dir, ModelBytes::Read(&[]), None, &tokenizer_files, options, &prefixes)
            .map_err(|source| Error::ModelFile { path: onnx_path.clone(), source })?;
        let float_id = crate::int8_cache::remembered_float_id(cache_root, &onnx_path, &settings, || {
            local_model_id(dir, ModelBytes::File(&onnx_path), None, &tokenizer_files, options, &prefixes)
        })
        .map_err(|source| Error::ModelFile { path: onnx_path.clone(), source })?;
        let model_id = format!("{float_id}{}", crate::quantize::MODEL_ID_SUFFIX);
        match crate::int8_cache::prepare(&onnx_path, &model_id, cache_root) {
            Ok(cached) => match load(Graph::File(&cached)) {
                Ok(runner) => {
                    crate::int8_cache::advise_random_access(&cached);
                    return Ok((runner, model_id, prefixes));
                }
                Err(reason) => {
                    tracing::warn!(path = %cached.display(), "the cached int8 model does not load, so it is removed: {reason}");
                    crate::int8_cache::remove(&cached);
                }
            },
            Err(reason) => tracing::info!("int8 model not cached, rewritten in memory: {reason}"),
        }
    }

    let onnx_file = read(onnx_path.clone())?;
    let external_data = if has_external_data { Some(read(external_data_path)?) } else { None };
    let mut model_id = local_model_id(
        dir,
        ModelBytes::Read(&onnx_file),
        external_data.as_deref(),
        &tokenizer_files,
        options,
        &prefixes,
    )
    .map_err(|source| Error::ModelFile { path: onnx_path.clone(), source })?;
    let quantized = if options.quantize && external_data.is_none() {
        match crate::quantize_int8(&onnx_file) {
            Ok(quantized) => {
                tracing::info!(
                    matmuls = quantized.matmuls,
                    tables = quantized.gathers,
                    weights_mib = quantized.bytes_before / (1 << 20),
                    int8_mib = quantized.bytes_after / (1 << 20),
                    "model weights quantized to int8"
                );
                model_id.push_str(crate::quantize::MODEL_ID_SUFFIX);
                Some(quantized.model)
            }
            Err(reason) => {
                tracing::info!("model weights left as they are: {reason}");
                None
            }
        }
    } else {
        None
    };
    let onnx_file = match quantized {
        Some(model) => {
            // Freed before ONNX Runtime copies the model: the float file is 4× the size.
            drop(onnx_file);
            model
        }
        None => onnx_file,
    };
    let external = external_data.map(|buffer| ("model.onnx_data", buffer));
    let runner = load(Graph::Memory { onnx: &onnx_file, external }).map_err(model_error)?;
    Ok((runner, model_id, prefixes))
}

/// A model file's bytes for [`local_model_id`]: read already, or to be streamed from disk
/// (a start that finds the int8 cache never holds the float model in memory).
enum ModelBytes<'a> {
    Read(&'a [u8]),
    File(&'a Path),
}

/// `<directory name>@<16 hex digits of blake3>` over every byte that decides the vectors: the
/// graph, its external weights, the tokenizer files, the pooling, the truncation length and the
/// prefixes (unchanged when there are none, so vectors stored before prefixes existed stay valid).
fn local_model_id(
    dir: &Path,
    onnx_file: ModelBytes<'_>,
    external_data: Option<&[u8]>,
    tokenizer_files: &TokenizerFiles,
    options: &LoadOptions,
    prefixes: &Prefixes,
) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"model.onnx");
    match onnx_file {
        ModelBytes::Read(bytes) => {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
        ModelBytes::File(path) => {
            let mut file = std::fs::File::open(path)?;
            hasher.update(&file.metadata()?.len().to_le_bytes());
            // In pieces: the float file is 470 MB for multilingual-e5-small.
            let hashed = std::io::copy(&mut file, &mut hasher)?;
            if hashed != file.metadata()?.len() {
                return Err(std::io::Error::other("the model file changed while it was read"));
            }
        }
    }
    let parts: [(&str, &[u8]); 5] = [
        ("model.onnx_data", external_data.unwrap_or_default()),
        ("tokenizer.json", &tokenizer_files.tokenizer_file),
        ("config.json", &tokenizer_files.config_file),
        ("special_tokens_map.json", &tokenizer_files.special_tokens_map_file),
        ("tokenizer_config.json", &tokenizer_files.tokenizer_config_file),
    ];
    for (name, bytes) in parts {
        hasher.update(name.as_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hasher.update(format!("pooling=mean max_length={}", options.max_length).as_bytes());
    if *prefixes != Prefixes::default() {
        hasher.update(prefixes.describe().as_bytes());
    }
    let label = dir.canonicalize().ok().and_then(|dir| dir.file_name().map(|name| name.to_string_lossy().into_owned()));
    let hash = hasher.finalize().to_hex();
    Ok(format!("{}@{}", label.as_deref().unwrap_or("local"), &hash[..16]))
}

fn load_download(
    name: &str,
    cache_dir: &Path,
    environment: ort::environment::Environment,
    options: &LoadOptions,
) -> Result<(Runner, String, Prefixes)> {
    let model = find_model(name)?;
    let model_code = TextEmbedding::get_model_info(&model)
        .map(|info| info.model_code.clone())
        .map_err(|error| Error::ModelLoad { model: name.to_owned(), reason: error.to_string() })?;
    let mut init = TextInitOptions::new(model)
        .with_cache_dir(cache_dir.to_path_buf())
        .with_environment(environment)
        .with_max_length(options.max_length)
        .with_show_download_progress(false);
    if let Some(threads) = options.intra_threads {
        init = init.with_intra_threads(threads);
    }
    init = init.with_session_config(NO_SPINNING.0, NO_SPINNING.1);
    let embedding = match catch_unwind(AssertUnwindSafe(|| TextEmbedding::try_new(init))) {
        Ok(Ok(embedding)) => embedding,
        Ok(Err(error @ fastembed::Error::ModelRetrieval { .. })) => {
            return Err(Error::Download {
                model: model_code,
                cache_dir: cache_dir.to_path_buf(),
                reason: crate::error_chain(&error),
            });
        }
        Ok(Err(error)) => return Err(Error::ModelLoad { model: model_code, reason: crate::error_chain(&error) }),
        Err(panic) => {
            return Err(Error::ModelLoad { model: model_code, reason: format!("panicked: {}", panic_message(&panic)) });
        }
    };
    // The hub cache records the revision it downloaded; it changes when the model does.
    let cache_root = std::env::var_os("HF_HOME").map_or_else(|| cache_dir.to_path_buf(), PathBuf::from);
    let revision_file = cache_root.join(format!("models--{}", model_code.replace('/', "--"))).join("refs").join("main");
    let revision = std::fs::read_to_string(&revision_file).ok().map(|revision| revision.trim().to_owned());
    // With int8 weights asked for, the downloaded files are loaded as a local directory, so
    // that the same rewrite applies as to any local model (a float E5 takes 470 MB of memory).
    if options.quantize
        && let Some(revision) = revision.as_deref().filter(|revision| !revision.is_empty())
    {
        let snapshot = revision_file.parent().and_then(Path::parent).map(|root| root.join("snapshots").join(revision));
        if let Some(snapshot) = snapshot.filter(|dir| dir.join("tokenizer.json").is_file()) {
            drop(embedding);
            let (embedding, local_id, _) = load_local(&snapshot, environment_for_reload()?, options)?;
            let suffix = local_id.split_once('@').map_or("", |(_, hash)| hash);
            let prefixes = Prefixes::for_download(&model_code);
            return Ok((embedding, format!("{model_code}@{suffix}"), prefixes));
        }
    }
    let prefixes = Prefixes::for_download(&model_code);
    let mut model_id = match revision.filter(|revision| !revision.is_empty()) {
        Some(revision) => {
            format!("{model_code}@{} max_length={}", &revision[..revision.len().min(12)], options.max_length)
        }
        None => format!("{model_code} max_length={}", options.max_length),
    };
    if prefixes != Prefixes::default() {
        model_id.push(' ');
        model_id.push_str(&prefixes.describe());
    }
    Ok((Runner::Fastembed(Box::new(embedding)), model_id, prefixes))
}

/// The process's ONNX Runtime environment, already loaded by the first load.
fn environment_for_reload() -> Result<ort::environment::Environment> {
    runtime::environment(runtime::loaded_library().as_deref())
}

/// fastembed's model by `EmbeddingModel` name or by repository, ignoring case.
fn find_model(name: &str) -> Result<EmbeddingModel> {
    if let Ok(model) = name.parse::<EmbeddingModel>() {
        return Ok(model);
    }
    TextEmbedding::list_supported_models()
        .into_iter()
        .find(|info| info.model_code.eq_ignore_ascii_case(name))
        .map(|info| info.model)
        .ok_or_else(|| Error::UnknownModel { name: name.to_owned(), example: DEFAULT_DOWNLOAD_MODEL })
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "unknown panic".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_estimates_count_han_characters_one_each() {
        assert_eq!(estimated_tokens(""), 0);
        assert_eq!(estimated_tokens("vitest --run"), 3);
        assert_eq!(estimated_tokens("数据库连接"), 5);
        // The same meaning takes more tokens in Chinese than its bytes / 4 would say.
        assert!(estimated_tokens("部署失败") > estimated_tokens("deploy"));
    }

    #[test]
    fn models_are_found_by_enum_name_and_by_repository() {
        assert_eq!(find_model("ParaphraseMLMiniLML12V2").unwrap(), EmbeddingModel::ParaphraseMLMiniLML12V2);
        assert_eq!(
            find_model("Xenova/paraphrase-multilingual-MiniLM-L12-v2").unwrap(),
            EmbeddingModel::ParaphraseMLMiniLML12V2
        );
        assert_eq!(find_model(DEFAULT_DOWNLOAD_MODEL).unwrap(), EmbeddingModel::MultilingualE5Small);
        assert_eq!(find_model("intfloat/multilingual-e5-small").unwrap(), EmbeddingModel::MultilingualE5Small);
        let error = find_model("no-such/model").unwrap_err();
        assert!(error.to_string().contains("unknown embedding model \"no-such/model\""), "{error}");
    }

    #[test]
    fn e5_models_get_their_prefixes_and_others_none() {
        assert_eq!(Prefixes::for_download("intfloat/multilingual-e5-small"), Prefixes::e5());
        assert_eq!(Prefixes::for_download("Qdrant/multilingual-e5-large-onnx"), Prefixes::e5());
        assert_eq!(Prefixes::for_download("Xenova/all-MiniLM-L6-v2"), Prefixes::default());
        assert_eq!(Prefixes::for_download("BAAI/bge-small-en-v1.5"), Prefixes::default());
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Prefixes::for_local_dir(dir.path(), b"{}"), Prefixes::default());
        let e5_config = br#"{"_name_or_path": "intfloat/multilingual-e5-small"}"#;
        assert_eq!(Prefixes::for_local_dir(dir.path(), e5_config), Prefixes::e5());
        // A declaration in the directory wins over the name.
        std::fs::write(
            dir.path().join("config_sentence_transformers.json"),
            r#"{"prompts": {"query": "search_query: ", "document": "search_document: "}}"#,
        )
        .unwrap();
        let declared = Prefixes { query: "search_query: ".into(), passage: "search_document: ".into() };
        assert_eq!(Prefixes::for_local_dir(dir.path(), e5_config), declared);
    }

    #[test]
    fn local_model_id_changes_with_the_model_bytes_and_the_settings() {
        let files = TokenizerFiles {
            tokenizer_file: b"{}".to_vec(),
            config_file: b"{}".to_vec(),
            special_tokens_map_file: b"{}".to_vec(),
            tokenizer_config_file: b"{}".to_vec(),
        };
        let dir = Path::new("/nonexistent/model-dir");
        let options = LoadOptions::default();
        let none = Prefixes::default();
        let base = local_model_id(dir, ModelBytes::Read(b"graph"), None, &files, &options, &none).unwrap();
        assert!(base.starts_with("local@"), "{base}");
        assert_eq!(base, local_model_id(dir, ModelBytes::Read(b"graph"), None, &files, &options, &none).unwrap());
        assert_ne!(base, local_model_id(dir, ModelBytes::Read(b"graph2"), None, &files, &options, &none).unwrap());
        assert_ne!(
            base,
            local_model_id(dir, ModelBytes::Read(b"graph"), Some(b"weights"), &files, &options, &none).unwrap()
        );
        let longer = LoadOptions { max_length: 512, ..LoadOptions::default() };
        assert_ne!(base, local_model_id(dir, ModelBytes::Read(b"graph"), None, &files, &longer, &none).unwrap());
        assert_ne!(
            base,
            local_model_id(dir, ModelBytes::Read(b"graph"), None, &files, &options, &Prefixes::e5()).unwrap()
        );
        // A file streamed from disk gives the id of its bytes read whole.
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), b"graph").unwrap();
        assert_eq!(base, local_model_id(dir, ModelBytes::File(file.path()), None, &files, &options, &none).unwrap());
        // Moving bytes between files is a different model too.
        assert_ne!(
            local_model_id(dir, ModelBytes::Read(b"ab"), None, &files, &options, &none).unwrap(),
            local_model_id(dir, ModelBytes::Read(b"a"), Some(b"b"), &files, &options, &none).unwrap()
        );
    }
}
