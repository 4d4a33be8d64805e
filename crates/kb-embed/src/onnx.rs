//! [`LocalModel`]: a local model directory run on ONNX Runtime directly: its tokenizer (the
//! compact Unigram for SentencePiece models, `tokenizers`' own for the others), one session,
//! mean pooling over the attention mask and unit length, as fastembed does it.
//!
//! Why not fastembed's `TextEmbedding` for local models: it builds `tokenizers`' Unigram trie
//! (281 MiB for multilingual-e5-small's vocabulary) and does not let ONNX Runtime's CPU arena
//! be turned off (about 200 MiB kept after long texts). The tokens and vectors are the same:
//! `tests/compact_unigram.rs` compares both with fastembed's.

use ort::environment::Environment;
use ort::session::Session;
use ort::value::Tensor;
use tokenizers::decoders::DecoderWrapper;
use tokenizers::normalizers::NormalizerWrapper;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::processors::PostProcessorWrapper;
use tokenizers::{AddedToken, Encoding, Model, PaddingParams, PaddingStrategy, TokenizerImpl, TruncationParams};

use crate::unigram::CompactUnigram;

type CompactTokenizer =
    TokenizerImpl<CompactUnigram, NormalizerWrapper, PreTokenizerWrapper, PostProcessorWrapper, DecoderWrapper>;

/// A model directory's tokenizer: the compact Unigram when `tokenizer.json` holds a Unigram
/// model, `tokenizers`' own otherwise (WordPiece and BPE vocabularies are small).
pub enum LocalTokenizer {
    Compact(Box<CompactTokenizer>),
    Wrapped(Box<tokenizers::Tokenizer>),
}

/// The four tokenizer files of a model directory, read.
pub struct TokenizerBytes<'a> {
    pub tokenizer: &'a [u8],
    pub config: &'a [u8],
    pub special_tokens_map: &'a [u8],
    pub tokenizer_config: &'a [u8],
}

impl LocalTokenizer {
    /// Reads `tokenizer.json` and sets it up as fastembed does: padding to the longest text of a
    /// batch with the configured pad token, truncation to `max_length` (or the tokenizer's own
    /// `model_max_length` when smaller), and the special tokens of `special_tokens_map.json`.
    pub fn load(files: &TokenizerBytes<'_>, max_length: usize) -> Result<LocalTokenizer, String> {
        #[derive(serde::Deserialize)]
        struct Peek {
            model: PeekModel,
        }
        #[derive(serde::Deserialize)]
        struct PeekModel {
            #[serde(rename = "type")]
            kind: Option<String>,
        }
        let json = |name: &str, bytes: &[u8]| {
            serde_json::from_slice::<serde_json::Value>(bytes).map_err(|error| format!("{name}: {error}"))
        };
        let config = json("config.json", files.config)?;
        let special_tokens_map = json("special_tokens_map.json", files.special_tokens_map)?;
        let tokenizer_config = json("tokenizer_config.json", files.tokenizer_config)?;
        let kind = serde_json::from_slice::<Peek>(files.tokenizer)
            .map_err(|error| format!("tokenizer.json: {error}"))?
            .model
            .kind;
        let settings = Settings::read(&config, &tokenizer_config, max_length)?;
        if kind.as_deref() == Some("Unigram") {
            let mut tokenizer: CompactTokenizer =
                serde_json::from_slice(files.tokenizer).map_err(|error| format!("tokenizer.json: {error}"))?;
            settings.apply(&mut tokenizer, &special_tokens_map)?;
            Ok(LocalTokenizer::Compact(Box::new(tokenizer)))
        } else {
            let mut tokenizer = tokenizers::Tokenizer::from_bytes(files.tokenizer)
                .map_err(|error| format!("tokenizer.json: {error}"))?;
            settings.apply(&mut tokenizer, &special_tokens_map)?;
            Ok(LocalTokenizer::Wrapped(Box::new(tokenizer)))
        }
    }

    /// The encodings of `texts`, with special tokens, padded to the longest.
    pub fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Encoding>, String> {
        let texts = texts.to_vec();
        match self {
            LocalTokenizer::Compact(tokenizer) => tokenizer.encode_batch(texts, true),
            LocalTokenizer::Wrapped(tokenizer) => tokenizer.encode_batch(texts, true),
        }
        .map_err(|error| format!("cannot tokenize: {error}"))
    }
}

/// The share of each of `texts`' own tokens (special tokens left out) that `tokenizer`'s window
/// holds: each text is tokenized whole (truncation and padding off), then the settings are put
/// back, also when tokenizing panics. 1 for a text that fits, and for every text of a
/// tokenizer that does not truncate.
pub fn window_shares<M, N, PT, PP, D>(
    tokenizer: &mut TokenizerImpl<M, N, PT, PP, D>,
    texts: &[&str],
) -> Result<Vec<f32>, String>
where
    M: Model,
    N: tokenizers::Normalizer,
    PT: tokenizers::PreTokenizer,
    PP: tokenizers::PostProcessor,
    D: tokenizers::Decoder,
{
    let (truncation, padding) = (tokenizer.get_truncation().cloned(), tokenizer.get_padding().cloned());
    let Some(window) = truncation.as_ref().map(|truncation| truncation.max_length) else {
        return Ok(vec![1.0; texts.len()]);
    };
    tokenizer.with_truncation(None).map_err(|error| format!("truncation: {error}"))?;
    tokenizer.with_padding(None);
    let encoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        texts.iter().map(|text| tokenizer.encode(*text, true)).collect::<tokenizers::Result<Vec<Encoding>>>()
    }));
    tokenizer.with_padding(padding);
    tokenizer.with_truncation(truncation).map_err(|error| format!("truncation: {error}"))?;
    let encodings = encoded
        .map_err(|_| "the tokenizer panicked".to_owned())?
        .map_err(|error| format!("cannot tokenize: {error}"))?;
    Ok(encodings
        .iter()
        .map(|encoding| {
            let special = encoding.get_special_tokens_mask().iter().filter(|&&flag| flag == 1).count();
            let own = encoding.len() - special;
            let room = window.saturating_sub(special);
            if own <= room { 1.0 } else { room as f32 / own as f32 }
        })
        .collect())
}

/// Padding and truncation as fastembed's `load_tokenizer` sets them.
struct Settings {
    max_length: usize,
    pad_token: String,
    pad_id: Option<u32>,
}

impl Settings {
    fn read(
        config: &serde_json::Value,
        tokenizer_config: &serde_json::Value,
        max_length: usize,
    ) -> Result<Settings, String> {
        let model_max_length = tokenizer_config["model_max_length"]
            .as_f64()
            .ok_or("tokenizer_config.json has no numeric model_max_length")?;
        let pad_token = &tokenizer_config["pad_token"];
        let pad_token = pad_token
            .as_str()
            .or_else(|| pad_token["content"].as_str())
            .ok_or("tokenizer_config.json has no string pad_token")?
            .to_owned();
        let pad_id = config["pad_token_id"].as_u64().and_then(|id| u32::try_from(id).ok());
        Ok(Settings { max_length: max_length.min(model_max_length as usize), pad_token, pad_id })
    }

    fn apply<M, N, PT, PP, D>(
        &self,
        tokenizer: &mut TokenizerImpl<M, N, PT, PP, D>,
        special_tokens_map: &serde_json::Value,
    ) -> Result<(), String>
    where
        M: Model,
        N: tokenizers::Normalizer,
        PT: tokenizers::PreTokenizer,
        PP: tokenizers::PostProcessor,
        D: tokenizers::Decoder,
    {
        let pad_id = self.pad_id.or_else(|| tokenizer.token_to_id(&self.pad_token)).unwrap_or(0);
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_token: self.pad_token.clone(),
            pad_id,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: self.max_length, ..TruncationParams::default() }))
            .map_err(|error| format!("truncation: {error}"))?;
        if let serde_json::Value::Object(tokens) = special_tokens_map {
            for value in tokens.values() {
                let token = match value {
                    serde_json::Value::String(content) => {
                        Some(AddedToken { content: content.clone(), special: true, ..AddedToken::default() })
                    }
                    serde_json::Value::Object(_) => match (
                        value["content"].as_str(),
                        value["single_word"].as_bool(),
                        value["lstrip"].as_bool(),
                        value["rstrip"].as_bool(),
                        value["normalized"].as_bool(),
                    ) {
                        (Some(content), Some(single_word), Some(lstrip), Some(rstrip), Some(normalized)) => {
                            Some(AddedToken {
                                content: content.to_owned(),
                                special: true,
                                single_word,
                                lstrip,
                                rstrip,
                                normalized,
                            })
                        }
                        _ => None,
                    },
                    _ => None,
                };
                if let Some(token) = token {
                    tokenizer.add_special_tokens([token]).map_err(|error| format!("special token: {error}"))?;
                }
            }
        }
        Ok(())
    }
}

/// A model ready to run: its tokenizer and its session.
pub struct LocalModel {
    tokenizer: LocalTokenizer,
    session: Session,
    needs_token_type_ids: bool,
    output: String,
}

/// How a session is built.
pub struct SessionOptions<'a> {
    pub intra_threads: Option<usize>,
    pub config_entries: &'a [(&'a str, &'a str)],
    /// ONNX Runtime's CPU arena keeps the largest activations it ever allocated (about 200 MiB
    /// after a batch of long texts); without it they go back to the allocator after each run.
    pub cpu_arena: bool,
    /// Called first on each thread ONNX Runtime starts for the session (see
    /// `LoadOptions::on_thread_start`).
    pub on_thread_start: Option<fn()>,
}

/// Starts ONNX Runtime's threads for a session, each calling a hook first (see
/// [`SessionOptions::on_thread_start`]).
struct HookedThreads(fn());

impl ort::environment::ThreadManager for HookedThreads {
    type Thread = std::thread::JoinHandle<()>;

    fn create(&self, work: impl FnOnce() + Send + 'static) -> ort::Result<Self::Thread> {
        let hook = self.0;
        std::thread::Builder::new()
            .name("onnxruntime".to_owned())
            .spawn(move || {
                hook();
                work();
            })
            .map_err(|error| ort::Error::new(format!("cannot start a thread: {error}")))
    }

    fn join(thread: Self::Thread) -> ort::Result<()> {
        thread.join().map_err(|_| ort::Error::new("an ONNX Runtime thread panicked"))
    }
}

/// Where a session's graph comes from.
pub enum Graph<'a> {
    /// Bytes in memory, with the external weights they name, if any (ONNX Runtime copies both).
    Memory { onnx: &'a [u8], external: Option<(&'a str, Vec<u8>)> },
    /// A file; external weights beside it whose offsets are aligned are mapped, not copied.
    File(&'a std::path::Path),
}

impl LocalModel {
    /// A session over `graph` and `tokenizer`.
    pub fn load(
        environment: &Environment,
        graph: Graph<'_>,
        tokenizer: LocalTokenizer,
        options: &SessionOptions<'_>,
    ) -> Result<LocalModel, String> {
        let error = |error: ort::Error<ort::session::builder::SessionBuilder>| error.to_string();
        let threads = options
            .intra_threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
        let mut builder = Session::builder(environment)
            .map_err(|error| error.to_string())?
            .with_execution_providers([ort::ep::CPU::default().with_arena_allocator(options.cpu_arena).build()])
            .map_err(error)?
            .with_optimization_level(ort::session::builder::GraphOptimizationLevel::Level3)
            .map_err(error)?
            .with_intra_threads(threads)
            .map_err(error)?;
        if let Some(hook) = options.on_thread_start {
            builder = builder.with_thread_manager(HookedThreads(hook)).map_err(error)?;
        }
        for (key, value) in options.config_entries {
            builder = builder.with_config_entry(*key, *value).map_err(error)?;
        }
        let session = match graph {
            Graph::Memory { onnx, external } => {
                if let Some((name, bytes)) = external {
                    builder = builder.with_external_initializer_file_in_memory(name, bytes.into()).map_err(error)?;
                }
                builder.commit_from_memory(onnx)
            }
            Graph::File(path) => builder.commit_from_file(path),
        }
        .map_err(|error| error.to_string())?;
        let needs_token_type_ids = session.inputs().iter().any(|input| input.name() == "token_type_ids");
        let outputs: Vec<String> = session.outputs().iter().map(|output| output.name().to_owned()).collect();
        let output = if outputs.len() == 1 {
            outputs[0].clone()
        } else {
            ["text_embeds", "last_hidden_state", "sentence_embedding"]
                .into_iter()
                .find(|name| outputs.iter().any(|output| output == name))
                .map(str::to_owned)
                .ok_or_else(|| format!("none of the model's outputs {outputs:?} is an embedding"))?
        };
        Ok(LocalModel { tokenizer, session, needs_token_type_ids, output })
    }

    /// The unit-length, mean-pooled vectors of `texts`, in one run.
    /// [`window_shares`] of `texts` with this model's tokenizer.
    pub fn window_shares(&mut self, texts: &[&str]) -> Result<Vec<f32>, String> {
        match &mut self.tokenizer {
            LocalTokenizer::Compact(tokenizer) => window_shares(tokenizer.as_mut(), texts),
            LocalTokenizer::Wrapped(tokenizer) => window_shares(tokenizer, texts),
        }
    }

    pub fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self.tokenizer.encode_batch(texts)?;
        let length = encodings.first().map_or(0, Encoding::len);
        let rows = encodings.len();
        let mut ids = Vec::with_capacity(rows * length);
        let mut mask = Vec::with_capacity(rows * length);
        let mut type_ids = Vec::with_capacity(rows * length);
        for encoding in &encodings {
            if encoding.len() != length {
                return Err(format!("the tokenizer padded to {} and {length} tokens", encoding.len()));
            }
            ids.extend(encoding.get_ids().iter().map(|&id| i64::from(id)));
            mask.extend(encoding.get_attention_mask().iter().map(|&bit| i64::from(bit)));
            type_ids.extend(encoding.get_type_ids().iter().map(|&id| i64::from(id)));
        }
        let shape = [rows, length];
        let tensor = |values: Vec<i64>| Tensor::from_array((shape, values)).map_err(|error| error.to_string());
        let mut inputs = ort::inputs!["input_ids" => tensor(ids)?, "attention_mask" => tensor(mask.clone())?];
        if self.needs_token_type_ids {
            inputs.push(("token_type_ids".into(), tensor(type_ids)?.into()));
        }
        let outputs = self.session.run(inputs).map_err(|error| error.to_string())?;
        let (output_shape, values) = outputs[self.output.as_str()]
            .try_extract_tensor::<f32>()
            .map_err(|error| format!("output {}: {error}", self.output))?;
        let dims: Vec<usize> = output_shape.iter().map(|&dim| usize::try_from(dim).unwrap_or(0)).collect();
        let vectors: Vec<Vec<f32>> = match dims.as_slice() {
            // Already pooled by the model.
            [batch, width] if *batch == rows => values.chunks(*width).map(<[f32]>::to_vec).collect(),
            [batch, tokens, width] if *batch == rows && *tokens == length => (0..rows)
                .map(|row| {
                    let mut sum = vec![0f32; *width];
                    let mut count = 0f32;
                    for token in 0..length {
                        let weight = mask[row * length + token] as f32;
                        if weight == 0.0 {
                            continue;
                        }
                        count += weight;
                        let at = (row * length + token) * width;
                        for (total, value) in sum.iter_mut().zip(&values[at..at + width]) {
                            *total += value * weight;
                        }
                    }
                    sum.iter_mut().for_each(|total| *total /= count.max(1e-9));
                    sum
                })
                .collect(),
            _ => return Err(format!("output {} has shape {dims:?} for {rows} texts of {length} tokens", self.output)),
        };
        Ok(vectors.into_iter().map(unit_length).collect())
    }
}

fn unit_length(mut vector: Vec<f32>) -> Vec<f32> {
    let norm = crate::vector::dot(&vector, &vector).sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|value| *value /= norm);
    }
    vector
}
