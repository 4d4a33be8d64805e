//! Int8 weights for a float ONNX model, rewritten in memory before ONNX Runtime loads it.
//!
//! Every `MatMul` by a constant weight matrix becomes ONNX's standard dynamic quantization
//! (`DynamicQuantizeLinear` of the input, `MatMulInteger` with int8 weights, then the product
//! scaled back to float), which ONNX Runtime fuses into one kernel; every embedding table read by
//! `Gather` is stored as int8 rows. Weights are quantized symmetrically per output column (per
//! row for tables), which keeps more precision than one scale per tensor. For all-MiniLM-L6-v2
//! the weights shrink from 87 MiB to 22 MiB and a query embeds about twice as fast; `kb-bench
//! quality` measures what it costs in recall.
//!
//! The rewrite works on the protobuf wire format: only the graph's nodes and initializers are
//! decoded, everything else is copied byte for byte, so fields this code does not know survive.
//! A model it cannot rewrite safely (weights in external files, subgraphs, an opset older than
//! 11, nothing to quantize) is left as it is, with the reason.
//!
//! The pieces below this module: `wire` reads and writes the protobuf wire format, `messages`
//! the ONNX nodes, initializers and attributes, `rewrite` turns the graph's `MatMul`s and
//! `Gather`s into their int8 forms, and `tables` writes each initializer into the graph or the
//! tables file.

mod messages;
mod rewrite;
mod tables;
#[cfg(test)]
mod tests;
mod wire;

use messages::default_opset;
use rewrite::rewrite_graph;
use tables::Initializers;
use wire::{fields, put_bytes};

/// Appended to the id of a model loaded with int8 weights: its vectors differ slightly from the
/// float model's. Change it whenever the rewrite changes what a model computes.
pub const MODEL_ID_SUFFIX: &str = "+int8";

/// What [`quantize_int8`] made of a model.
#[derive(Debug, Clone)]
pub struct Quantized {
    /// The rewritten model, an ONNX protobuf like the input.
    pub model: Vec<u8>,
    /// Weight matrices of `MatMul`s and tables of `Gather`s now stored as int8.
    pub matmuls: usize,
    pub gathers: usize,
    /// Bytes of the quantized weights before (float) and after (int8 plus scales).
    pub bytes_before: usize,
    pub bytes_after: usize,
    /// Initializers written to the tables file ([`quantize_int8_to`]) instead of the model.
    pub moved: usize,
}

/// Rewrites `model` (an ONNX `ModelProto`) with int8 weights. `Err` says why it was left alone;
/// the model is then used as it is.
pub fn quantize_int8(model: &[u8]) -> Result<Quantized, String> {
    quantize_int8_to(model, None, &|_| {})
}

/// Where [`quantize_int8_to`] writes large initializers: one data file, which the graph names
/// `file_name`, each initializer at an offset aligned to [`EXTERNAL_ALIGNMENT`].
pub struct TablesFile<'w> {
    pub writer: &'w mut dyn std::io::Write,
    pub file_name: &'w str,
    /// Initializers with at least this many bytes of data go to the file; smaller ones stay in
    /// the graph.
    pub min_bytes: usize,
}

/// Where in the data file each initializer starts: a multiple of this. ONNX Runtime maps an
/// external initializer into memory, instead of copying it, when its offset is aligned to the
/// allocation granularity (the page size, 64 KiB on Windows); the pages of a mapped table that
/// no token reads are then never resident.
pub const EXTERNAL_ALIGNMENT: usize = 1 << 16;

/// [`quantize_int8`], with every initializer of at least `tables.min_bytes` (the int8 tables
/// and matrices it makes, large ones it copies) written to `tables` as it is made, never held
/// whole in memory, and the model pointing at them. `consumed` is called with each piece of
/// the input's float data once it has been read for the last time, in order: a caller that
/// mapped the input can let those pages go, so the rewrite of a 470 MB model never has it all
/// resident (see `int8_cache`).
pub fn quantize_int8_to(
    model: &[u8],
    tables: Option<TablesFile<'_>>,
    consumed: &dyn Fn(&[u8]),
) -> Result<Quantized, String> {
    let model_fields = fields(model).map_err(|error| format!("not an ONNX model: {error}"))?;
    let opset = default_opset(&model_fields)?;
    if opset < 11 {
        return Err(format!("opset {opset} is older than 11, which dynamic quantization needs"));
    }
    let graph = model_fields
        .iter()
        .find_map(|field| (field.number == 7).then_some(field.bytes()).flatten())
        .ok_or("the model has no graph")?;
    let mut initializers = Initializers { tables, written: 0, moved: 0 };
    let rewritten = rewrite_graph(graph, &mut initializers, consumed)?;
    if let Some(tables) = &mut initializers.tables {
        tables.writer.flush().map_err(|error| format!("cannot write the tables: {error}"))?;
    }
    let mut out = Vec::with_capacity(model.len().saturating_sub(graph.len()) + rewritten.graph.len() + 16);
    for field in &model_fields {
        if field.number == 7 {
            put_bytes(&mut out, 7, &rewritten.graph);
        } else {
            out.extend_from_slice(field.encoded);
        }
    }
    Ok(Quantized {
        model: out,
        matmuls: rewritten.matmuls,
        gathers: rewritten.gathers,
        bytes_before: rewritten.bytes_before,
        bytes_after: rewritten.bytes_after,
        moved: initializers.moved,
    })
}
