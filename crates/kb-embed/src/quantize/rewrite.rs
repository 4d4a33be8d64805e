//! The rewrite of a graph: each `MatMul` by a constant weight matrix becomes dynamic
//! quantization with int8 weights, each `Gather` from an embedding table reads int8 rows, and
//! the weights are coded symmetrically per column (matrices) or per row (tables).

use std::collections::{HashMap, HashSet};

use super::messages::{
    FLOAT, Floats, INT8, Initializer, Node, cast_to_float, gather_axis, has_subgraph, parse_initializer, parse_node,
    put_node, tensor_header,
};
use super::tables::Initializers;
use super::wire::{Field, fields, put_bytes};

/// A word table is quantized, written and let go in blocks of this many rows (1.5 MiB of float
/// data for 384 dimensions).
const TABLE_BLOCK_ROWS: usize = 1024;

/// Weight tensors smaller than this stay float: they cost little, and small ones (biases turned
/// into matrices, tiny projections) are where int8 loses the most.
const MIN_ELEMENTS: usize = 4_096;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    /// The weight matrix (second input) of a `MatMul`.
    MatMulWeights,
    /// The table (first input) of a `Gather` along axis 0.
    GatherTable,
    Other,
}

pub(super) struct Rewritten {
    pub(super) graph: Vec<u8>,
    pub(super) matmuls: usize,
    pub(super) gathers: usize,
    pub(super) bytes_before: usize,
    pub(super) bytes_after: usize,
}

pub(super) fn rewrite_graph(
    graph: &[u8],
    writer: &mut Initializers<'_>,
    consumed: &dyn Fn(&[u8]),
) -> Result<Rewritten, String> {
    let graph_fields = fields(graph).map_err(|error| format!("bad graph: {error}"))?;
    let mut nodes = Vec::new();
    let mut initializers = Vec::new();
    let mut graph_io = HashSet::new();
    for field in &graph_fields {
        match field.number {
            1 => nodes.push(parse_node(field.bytes().ok_or("bad node")?)?),
            5 => initializers.push(parse_initializer(field.bytes().ok_or("bad initializer")?)?),
            // Inputs and outputs of the graph: an initializer listed there may be fed or read.
            11 | 12 => {
                let value_info = fields(field.bytes().ok_or("bad graph input")?).map_err(|error| error.to_string())?;
                if let Some(name) = value_info.iter().find(|field| field.number == 1).and_then(Field::string) {
                    graph_io.insert(name);
                }
            }
            _ => {}
        }
    }
    if nodes.iter().any(|node| node.attributes.iter().any(|attribute| has_subgraph(attribute))) {
        return Err("the graph has subgraphs (If, Loop, Scan), which this rewrite leaves alone".to_owned());
    }

    let mut uses: HashMap<&str, Vec<Use>> = HashMap::new();
    for node in &nodes {
        let default_domain = node.domain.is_empty() || node.domain == "ai.onnx";
        for (input_idx, &input) in node.inputs.iter().enumerate() {
            let kind = match (default_domain, node.op_type, input_idx) {
                (true, "MatMul", 1) => Use::MatMulWeights,
                (true, "Gather", 0) if gather_axis(node) == Some(0) => Use::GatherTable,
                _ => Use::Other,
            };
            uses.entry(input).or_default().push(kind);
        }
    }
    let kind_of = |initializer: &Initializer<'_>| -> Option<Use> {
        if initializer.data_type != FLOAT
            || initializer.external
            || initializer.dims.len() != 2
            || initializer.n_elements() < MIN_ELEMENTS
            || graph_io.contains(initializer.name)
        {
            return None;
        }
        let kinds = uses.get(initializer.name)?;
        let first = *kinds.first()?;
        (first != Use::Other && kinds.iter().all(|&kind| kind == first)).then_some(first)
    };

    let mut names = Names::new(&nodes, &initializers);
    let mut quantized: HashMap<&str, Use> = HashMap::new();
    for initializer in &initializers {
        let Some(kind) = kind_of(initializer) else { continue };
        if initializer.floats().is_some() {
            quantized.insert(initializer.name, kind);
        }
    }
    if quantized.is_empty() {
        return Err("no float weight matrix of a MatMul or table of a Gather to quantize".to_owned());
    }

    // The float weights are most of the graph; int8 codes take a quarter of their bytes, and
    // none when they go to a tables file.
    let float_weight_bytes: usize = initializers
        .iter()
        .filter(|initializer| quantized.contains_key(initializer.name))
        .map(|initializer| initializer.n_elements() * 4)
        .sum();
    let capacity = match writer.tables {
        Some(_) => 1 << 20,
        None => graph.len().saturating_sub(float_weight_bytes * 3 / 4) + 4096,
    };
    let mut out = Vec::with_capacity(capacity);
    for field in &graph_fields {
        if field.number != 1 && field.number != 5 {
            out.extend_from_slice(field.encoded);
        }
    }
    let (mut matmuls, mut gathers) = (0, 0);
    // Per quantized activation: its int8 codes, scale and zero point.
    let mut activations: HashMap<&str, [String; 3]> = HashMap::new();
    for node in &nodes {
        let weights = node.inputs.get(usize::from(node.op_type == "MatMul")).copied().unwrap_or_default();
        // Nodes made from this one are named after it, or after its output when it has no name.
        let base = if node.name.is_empty() { node.outputs.first().copied().unwrap_or_default() } else { node.name };
        match quantized.get(weights) {
            Some(Use::MatMulWeights) if node.op_type == "MatMul" => {
                let (input, output) = (node.inputs[0], node.outputs[0]);
                if !activations.contains_key(input) {
                    let codes = [
                        names.tensor(input, "act_q")?,
                        names.tensor(input, "act_scale")?,
                        names.tensor(input, "act_zero")?,
                    ];
                    let outputs = [codes[0].as_str(), codes[1].as_str(), codes[2].as_str()];
                    put_node(
                        &mut out,
                        &names.node(input, "quantize")?,
                        "DynamicQuantizeLinear",
                        &[input],
                        &outputs,
                        &[],
                    );
                    activations.insert(input, codes);
                }
                let [input_q, input_scale, input_zero] = &activations[input];
                let (scale, integers, floats) = (
                    names.tensor(output, "out_scale")?,
                    names.tensor(output, "out_i32")?,
                    names.tensor(output, "out_f32")?,
                );
                put_node(
                    &mut out,
                    &names.node(base, "scale")?,
                    "Mul",
                    &[input_scale, &derived(weights, "scale")],
                    &[&scale],
                    &[],
                );
                put_node(
                    &mut out,
                    &names.node(base, "int8")?,
                    "MatMulInteger",
                    &[input_q, &derived(weights, "q"), input_zero, &derived(weights, "zero")],
                    &[&integers],
                    &[],
                );
                put_node(
                    &mut out,
                    &names.node(base, "cast")?,
                    "Cast",
                    &[&integers],
                    &[&floats],
                    &[cast_to_float().as_slice()],
                );
                put_node(&mut out, node.name, "Mul", &[&floats, &scale], &[output], &[]);
                matmuls += 1;
            }
            Some(Use::GatherTable) if node.op_type == "Gather" => {
                let (indices, output) = (node.inputs[1], node.outputs[0]);
                let (codes, floats, scales) = (
                    names.tensor(output, "rows_q")?,
                    names.tensor(output, "rows_f32")?,
                    names.tensor(output, "rows_scale")?,
                );
                let table = weights;
                put_node(
                    &mut out,
                    &names.node(base, "int8")?,
                    "Gather",
                    &[&derived(table, "q"), indices],
                    &[&codes],
                    &node.attributes,
                );
                put_node(
                    &mut out,
                    &names.node(base, "cast")?,
                    "Cast",
                    &[&codes],
                    &[&floats],
                    &[cast_to_float().as_slice()],
                );
                put_node(
                    &mut out,
                    &names.node(base, "scales")?,
                    "Gather",
                    &[&derived(table, "scale"), indices],
                    &[&scales],
                    &node.attributes,
                );
                put_node(&mut out, node.name, "Mul", &[&floats, &scales], &[output], &[]);
                gathers += 1;
            }
            _ => put_bytes(&mut out, 1, node.encoded),
        }
    }
    let (mut bytes_before, mut bytes_after) = (0, 0);
    for initializer in &initializers {
        let Some(&kind) = quantized.get(initializer.name) else {
            writer.copy(&mut out, initializer, consumed)?;
            continue;
        };
        let Some(values) = initializer.floats() else { continue };
        let (rows, columns) = (initializer.dims[0] as usize, initializer.dims[1] as usize);
        let name = initializer.name;
        let codes_name = names.tensor(name, "q")?;
        let codes_header = tensor_header(&codes_name, INT8, &initializer.dims);
        let (scales, scale_dims) = match kind {
            Use::MatMulWeights => {
                // A matrix is a few megabytes: quantized whole, as each column's scale needs
                // every row.
                let (codes, scales) = quantize_columns(&values, rows, columns);
                values.consumed(0..values.len(), consumed);
                let mut pending = writer.begin(codes.len())?;
                writer.push(&mut pending, &codes)?;
                writer.finish(&mut out, pending, &codes_header);
                (scales, vec![columns as u64])
            }
            _ => {
                // A word table can be hundreds of megabytes: written and let go in blocks of rows.
                let mut pending = writer.begin(rows * columns)?;
                let mut scales = Vec::with_capacity(rows);
                let mut codes = Vec::with_capacity(TABLE_BLOCK_ROWS * columns);
                for block_start in (0..rows).step_by(TABLE_BLOCK_ROWS) {
                    let block_end = (block_start + TABLE_BLOCK_ROWS).min(rows);
                    codes.clear();
                    for row_idx in block_start..block_end {
                        scales.push(quantize_row(&values, row_idx * columns, columns, &mut codes));
                    }
                    writer.push(&mut pending, &codes)?;
                    values.consumed(block_start * columns..block_end * columns, consumed);
                }
                writer.finish(&mut out, pending, &codes_header);
                (scales, vec![rows as u64, 1])
            }
        };
        bytes_before += values.len() * 4;
        bytes_after += rows * columns + scales.len() * 4;
        let scale_bytes: Vec<u8> = scales.iter().flat_map(|scale| scale.to_le_bytes()).collect();
        writer.put(&mut out, &names.tensor(name, "scale")?, FLOAT, &scale_dims, &scale_bytes)?;
        if kind == Use::MatMulWeights {
            writer.put(&mut out, &names.tensor(name, "zero")?, INT8, &[], &[0])?;
        }
    }
    Ok(Rewritten { graph: out, matmuls, gathers, bytes_before, bytes_after })
}

/// A name for a tensor or node made from `name`.
fn derived(name: &str, suffix: &str) -> String {
    format!("{name}/kb_int8_{suffix}")
}

/// The names the rewrite gives new tensors and nodes, [`derived`] from existing ones: each is
/// checked against every name the graph has and every name given before, so a clash (a model
/// that already uses such names, a tensor that is both a product and a factor) leaves the
/// model alone instead of making an invalid graph.
struct Names<'a> {
    tensors: HashSet<std::borrow::Cow<'a, str>>,
    nodes: HashSet<std::borrow::Cow<'a, str>>,
}

impl<'a> Names<'a> {
    fn new(nodes: &[Node<'a>], initializers: &[Initializer<'a>]) -> Names<'a> {
        let tensors = nodes
            .iter()
            .flat_map(|node| node.inputs.iter().chain(&node.outputs).copied())
            .chain(initializers.iter().map(|initializer| initializer.name))
            .map(std::borrow::Cow::Borrowed)
            .collect();
        let nodes = nodes.iter().map(|node| std::borrow::Cow::Borrowed(node.name)).collect();
        Names { tensors, nodes }
    }

    fn tensor(&mut self, base: &str, suffix: &str) -> Result<String, String> {
        Self::claim(&mut self.tensors, base, suffix)
    }

    fn node(&mut self, base: &str, suffix: &str) -> Result<String, String> {
        Self::claim(&mut self.nodes, base, suffix)
    }

    fn claim(taken: &mut HashSet<std::borrow::Cow<'a, str>>, base: &str, suffix: &str) -> Result<String, String> {
        let name = derived(base, suffix);
        if !taken.insert(std::borrow::Cow::Owned(name.clone())) {
            return Err(format!("the graph already has a name {name}, which the rewrite would give"));
        }
        Ok(name)
    }
}

/// Int8 codes (as their bytes) of a `rows × columns` matrix with one scale per column:
/// `value ≈ code × scale`.
pub(super) fn quantize_columns(values: &Floats<'_>, rows: usize, columns: usize) -> (Vec<u8>, Vec<f32>) {
    let mut max = vec![0.0f32; columns];
    for row_idx in 0..rows {
        for (column_idx, column_max) in max.iter_mut().enumerate() {
            *column_max = column_max.max(values.get(row_idx * columns + column_idx).abs());
        }
    }
    let scales: Vec<f32> = max.iter().map(|&max| scale_for(max)).collect();
    let mut codes = Vec::with_capacity(rows * columns);
    for row_idx in 0..rows {
        let row = scales.iter().enumerate();
        codes.extend(row.map(|(column_idx, &scale)| code(values.get(row_idx * columns + column_idx), scale)));
    }
    (codes, scales)
}

/// Appends the int8 codes (as their bytes) of the `columns` values from `start` to `codes`,
/// with one scale for them all, and returns the scale: a row of a table.
pub(super) fn quantize_row(values: &Floats<'_>, start: usize, columns: usize, codes: &mut Vec<u8>) -> f32 {
    let row = (start..start + columns).map(|index| values.get(index));
    let scale = scale_for(row.clone().fold(0.0f32, |max, value| max.max(value.abs())));
    codes.extend(row.map(|value| code(value, scale)));
    scale
}

/// The scale that maps `max` (the largest magnitude) to 127; 1 for an all-zero column or row.
fn scale_for(max: f32) -> f32 {
    if max > 0.0 && max.is_finite() { max / 127.0 } else { 1.0 }
}

/// `value / scale` rounded into -127..=127, as the byte of an int8.
fn code(value: f32, scale: f32) -> u8 {
    (value / scale).round().clamp(-127.0, 127.0) as i8 as u8
}
