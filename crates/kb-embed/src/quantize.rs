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

use std::collections::{HashMap, HashSet};

/// Appended to the id of a model loaded with int8 weights: its vectors differ slightly from the
/// float model's. Change it whenever the rewrite changes what a model computes.
pub const MODEL_ID_SUFFIX: &str = "+int8";

/// A word table is quantized, written and let go in blocks of this many rows (1.5 MiB of float
/// data for 384 dimensions).
const TABLE_BLOCK_ROWS: usize = 1024;

/// Weight tensors smaller than this stay float: they cost little, and small ones (biases turned
/// into matrices, tiny projections) are where int8 loses the most.
const MIN_ELEMENTS: usize = 4_096;

/// ONNX `TensorProto.DataType` values used here.
const FLOAT: u64 = 1;
const INT8: u64 = 3;
/// `TensorProto.DataLocation.EXTERNAL`.
const EXTERNAL: u64 = 1;
/// `AttributeProto.AttributeType.INT`.
const ATTRIBUTE_INT: u64 = 2;

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

/// Writes the rewritten graph's initializers: into the graph, or into the tables file when
/// there is one and they are large enough.
struct Initializers<'w> {
    tables: Option<TablesFile<'w>>,
    /// Bytes written to the tables file so far.
    written: usize,
    moved: usize,
}

/// An initializer being written: its data so far when it stays in the graph, else where it
/// starts in the tables file.
struct Pending {
    inline: Option<Vec<u8>>,
    offset: usize,
}

impl Initializers<'_> {
    /// Starts an initializer of `len` bytes of data.
    fn begin(&mut self, len: usize) -> Result<Pending, String> {
        let Some(tables) = self.tables.as_mut().filter(|tables| len >= tables.min_bytes) else {
            return Ok(Pending { inline: Some(Vec::with_capacity(len)), offset: 0 });
        };
        let offset = self.written.next_multiple_of(EXTERNAL_ALIGNMENT);
        let padding = [0u8; 4096];
        while self.written < offset {
            let n = (offset - self.written).min(padding.len());
            tables.writer.write_all(&padding[..n]).map_err(|error| format!("cannot write the tables: {error}"))?;
            self.written += n;
        }
        Ok(Pending { inline: None, offset })
    }

    fn push(&mut self, pending: &mut Pending, bytes: &[u8]) -> Result<(), String> {
        match (&mut pending.inline, &mut self.tables) {
            (Some(inline), _) => inline.extend_from_slice(bytes),
            (None, Some(tables)) => {
                tables.writer.write_all(bytes).map_err(|error| format!("cannot write the tables: {error}"))?;
                self.written += bytes.len();
            }
            (None, None) => unreachable!("an initializer goes to the tables file only when there is one"),
        }
        Ok(())
    }

    /// Appends the finished initializer to `graph`: `fields` are its encoded fields other than
    /// the data, which goes last, as `raw_data` or as a reference into the tables file.
    fn finish(&mut self, graph: &mut Vec<u8>, pending: Pending, fields: &[u8]) {
        let mut tensor = Vec::with_capacity(fields.len() + pending.inline.as_ref().map_or(64, |raw| raw.len() + 8));
        tensor.extend_from_slice(fields);
        match (pending.inline, &self.tables) {
            (Some(raw), _) => put_bytes(&mut tensor, 9, &raw),
            (None, Some(tables)) => {
                let length = self.written - pending.offset;
                for (key, value) in [
                    ("location", tables.file_name.to_owned()),
                    ("offset", pending.offset.to_string()),
                    ("length", length.to_string()),
                ] {
                    let mut entry = Vec::new();
                    put_bytes(&mut entry, 1, key.as_bytes());
                    put_bytes(&mut entry, 2, value.as_bytes());
                    put_bytes(&mut tensor, 13, &entry);
                }
                put_varint_field(&mut tensor, 14, EXTERNAL);
                self.moved += 1;
            }
            (None, None) => unreachable!("an initializer goes to the tables file only when there is one"),
        }
        put_bytes(graph, 5, &tensor);
    }

    /// Writes a new initializer whose data is all of `raw`.
    fn put(&mut self, graph: &mut Vec<u8>, name: &str, data_type: u64, dims: &[u64], raw: &[u8]) -> Result<(), String> {
        let mut pending = self.begin(raw.len())?;
        self.push(&mut pending, raw)?;
        self.finish(graph, pending, &tensor_header(name, data_type, dims));
        Ok(())
    }

    /// Copies an initializer of the input unchanged, or with its `raw_data` moved to the tables
    /// file when it is large enough (and not external already).
    fn copy(
        &mut self,
        graph: &mut Vec<u8>,
        initializer: &Initializer<'_>,
        consumed: &dyn Fn(&[u8]),
    ) -> Result<(), String> {
        let movable = initializer.raw_data.filter(|raw| {
            !initializer.external && self.tables.as_ref().is_some_and(|tables| raw.len() >= tables.min_bytes)
        });
        let Some(raw) = movable else {
            put_bytes(graph, 5, initializer.encoded);
            return Ok(());
        };
        let tensor_fields = fields(initializer.encoded).map_err(|error| format!("bad initializer: {error}"))?;
        let other_fields: Vec<u8> = tensor_fields
            .iter()
            .filter(|field| field.number != 9)
            .flat_map(|field| field.encoded.iter().copied())
            .collect();
        let mut pending = self.begin(raw.len())?;
        self.push(&mut pending, raw)?;
        consumed(raw);
        self.finish(graph, pending, &other_fields);
        Ok(())
    }
}

/// The version of the default (`ai.onnx`) operator set the model imports.
fn default_opset(model_fields: &[Field<'_>]) -> Result<u64, String> {
    for field in model_fields.iter().filter(|field| field.number == 8) {
        let entry = fields(field.bytes().ok_or("bad opset_import")?).map_err(|error| error.to_string())?;
        let domain = entry.iter().find(|field| field.number == 1).and_then(Field::string).unwrap_or("");
        if domain.is_empty() || domain == "ai.onnx" {
            return Ok(entry.iter().find(|field| field.number == 2).and_then(Field::varint).unwrap_or(0));
        }
    }
    Err("the model imports no ai.onnx operator set".to_owned())
}

struct Node<'a> {
    encoded: &'a [u8],
    op_type: &'a str,
    domain: &'a str,
    name: &'a str,
    inputs: Vec<&'a str>,
    outputs: Vec<&'a str>,
    /// Encoded `attribute` fields, copied to the nodes that replace this one.
    attributes: Vec<&'a [u8]>,
}

struct Initializer<'a> {
    encoded: &'a [u8],
    name: &'a str,
    data_type: u64,
    dims: Vec<u64>,
    raw_data: Option<&'a [u8]>,
    float_data: Vec<f32>,
    external: bool,
}

impl Initializer<'_> {
    fn n_elements(&self) -> usize {
        self.dims.iter().map(|&dim| dim as usize).product()
    }

    /// The values of a float tensor, read where they are stored: no copy, a word table is
    /// tens of megabytes.
    fn floats(&self) -> Option<Floats<'_>> {
        let floats = match self.raw_data {
            Some(raw) => Floats::Raw(raw),
            None => Floats::Decoded(&self.float_data),
        };
        (floats.len() == self.n_elements()).then_some(floats)
    }
}

/// A float tensor's values: little-endian bytes (`raw_data`) or decoded `float_data`.
enum Floats<'a> {
    Raw(&'a [u8]),
    Decoded(&'a [f32]),
}

impl Floats<'_> {
    fn len(&self) -> usize {
        match self {
            Floats::Raw(raw) => raw.len() / 4,
            Floats::Decoded(values) => values.len(),
        }
    }

    /// Tells `consumed` that the values in `range` will not be read again (when they are the
    /// input's bytes; decoded values are the rewrite's own).
    fn consumed(&self, range: std::ops::Range<usize>, consumed: &dyn Fn(&[u8])) {
        if let Floats::Raw(raw) = self {
            consumed(&raw[range.start * 4..range.end * 4]);
        }
    }

    fn get(&self, index: usize) -> f32 {
        match self {
            Floats::Raw(raw) => {
                let bytes = &raw[index * 4..index * 4 + 4];
                f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
            }
            Floats::Decoded(values) => values[index],
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    /// The weight matrix (second input) of a `MatMul`.
    MatMulWeights,
    /// The table (first input) of a `Gather` along axis 0.
    GatherTable,
    Other,
}

struct Rewritten {
    graph: Vec<u8>,
    matmuls: usize,
    gathers: usize,
    bytes_before: usize,
    bytes_after: usize,
}

fn rewrite_graph(graph: &[u8], writer: &mut Initializers<'_>, consumed: &dyn Fn(&[u8])) -> Result<Rewritten, String> {
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
fn quantize_columns(values: &Floats<'_>, rows: usize, columns: usize) -> (Vec<u8>, Vec<f32>) {
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
fn quantize_row(values: &Floats<'_>, start: usize, columns: usize, codes: &mut Vec<u8>) -> f32 {
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

fn gather_axis(node: &Node<'_>) -> Option<i64> {
    for attribute in &node.attributes {
        let attribute_fields = fields(attribute).ok()?;
        if attribute_fields.iter().find(|field| field.number == 1).and_then(Field::string) == Some("axis") {
            return attribute_fields
                .iter()
                .find(|field| field.number == 3)
                .and_then(Field::varint)
                .map(|axis| axis as i64);
        }
    }
    Some(0)
}

/// Whether an encoded `AttributeProto` holds a graph (`g`, field 6) or graphs (`graphs`, 11).
fn has_subgraph(attribute: &[u8]) -> bool {
    fields(attribute)
        .map_or(true, |attribute_fields| attribute_fields.iter().any(|field| field.number == 6 || field.number == 11))
}

fn parse_node(bytes: &[u8]) -> Result<Node<'_>, String> {
    let mut node = Node {
        encoded: bytes,
        op_type: "",
        domain: "",
        name: "",
        inputs: Vec::new(),
        outputs: Vec::new(),
        attributes: Vec::new(),
    };
    for field in fields(bytes).map_err(|error| format!("bad node: {error}"))? {
        match field.number {
            1 => node.inputs.push(field.string().ok_or("bad node input")?),
            2 => node.outputs.push(field.string().ok_or("bad node output")?),
            3 => node.name = field.string().ok_or("bad node name")?,
            4 => node.op_type = field.string().ok_or("bad op_type")?,
            5 => node.attributes.push(field.bytes().ok_or("bad attribute")?),
            7 => node.domain = field.string().ok_or("bad domain")?,
            _ => {}
        }
    }
    Ok(node)
}

fn parse_initializer(bytes: &[u8]) -> Result<Initializer<'_>, String> {
    let mut tensor = Initializer {
        encoded: bytes,
        name: "",
        data_type: 0,
        dims: Vec::new(),
        raw_data: None,
        float_data: Vec::new(),
        external: false,
    };
    for field in fields(bytes).map_err(|error| format!("bad initializer: {error}"))? {
        match (field.number, field.value) {
            (1, Value::Varint(dim)) => tensor.dims.push(dim),
            (1, Value::Bytes(packed)) => tensor.dims.extend(packed_varints(packed)?),
            (2, Value::Varint(data_type)) => tensor.data_type = data_type,
            (4, Value::Fixed32(bits)) => tensor.float_data.push(f32::from_bits(bits)),
            (4, Value::Bytes(packed)) => tensor.float_data.extend(
                packed.chunks_exact(4).map(|bytes| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
            ),
            (8, _) => tensor.name = field.string().ok_or("bad tensor name")?,
            (9, Value::Bytes(raw)) => tensor.raw_data = Some(raw),
            (13, _) => tensor.external = true,
            (14, Value::Varint(location)) => tensor.external |= location == EXTERNAL,
            _ => {}
        }
    }
    Ok(tensor)
}

/// The attribute `to = FLOAT` of a `Cast`.
fn cast_to_float() -> Vec<u8> {
    let mut attribute = Vec::new();
    put_bytes(&mut attribute, 1, b"to");
    put_varint_field(&mut attribute, 3, FLOAT);
    put_varint_field(&mut attribute, 20, ATTRIBUTE_INT);
    attribute
}

/// Appends a `node` field (a `NodeProto`) to a graph.
fn put_node(out: &mut Vec<u8>, name: &str, op_type: &str, inputs: &[&str], outputs: &[&str], attributes: &[&[u8]]) {
    let mut node = Vec::new();
    for input in inputs {
        put_bytes(&mut node, 1, input.as_bytes());
    }
    for output in outputs {
        put_bytes(&mut node, 2, output.as_bytes());
    }
    put_bytes(&mut node, 3, name.as_bytes());
    put_bytes(&mut node, 4, op_type.as_bytes());
    for attribute in attributes {
        put_bytes(&mut node, 5, attribute);
    }
    put_bytes(out, 1, &node);
}

/// The fields of a `TensorProto` before its data: dims, data type and name.
fn tensor_header(name: &str, data_type: u64, dims: &[u64]) -> Vec<u8> {
    let mut tensor = Vec::with_capacity(name.len() + 32);
    for &dim in dims {
        put_varint_field(&mut tensor, 1, dim);
    }
    put_varint_field(&mut tensor, 2, data_type);
    put_bytes(&mut tensor, 8, name.as_bytes());
    tensor
}

// ---- The protobuf wire format: just what a rewrite needs. ----

#[derive(Debug, Clone, Copy)]
enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// One field of an encoded message: its number, its value and its whole encoding (key
/// included), to copy it unchanged.
#[derive(Debug, Clone, Copy)]
struct Field<'a> {
    number: u64,
    value: Value<'a>,
    encoded: &'a [u8],
}

impl<'a> Field<'a> {
    fn bytes(&self) -> Option<&'a [u8]> {
        match self.value {
            Value::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }

    fn string(&self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }

    fn varint(&self) -> Option<u64> {
        match self.value {
            Value::Varint(value) => Some(value),
            _ => None,
        }
    }
}

/// The fields of an encoded message, in order.
fn fields(buffer: &[u8]) -> Result<Vec<Field<'_>>, String> {
    let mut fields = Vec::new();
    let mut position = 0;
    while position < buffer.len() {
        let start = position;
        let key = read_varint(buffer, &mut position)?;
        let number = key >> 3;
        let value = match key & 7 {
            0 => Value::Varint(read_varint(buffer, &mut position)?),
            1 => {
                take(buffer, &mut position, 8)?;
                Value::Fixed64
            }
            2 => {
                let length = usize::try_from(read_varint(buffer, &mut position)?).map_err(|_| "length overflows")?;
                Value::Bytes(take(buffer, &mut position, length)?)
            }
            5 => Value::Fixed32(u32::from_le_bytes(
                take(buffer, &mut position, 4)?.try_into().map_err(|_| "short fixed32")?,
            )),
            wire_type => return Err(format!("unsupported wire type {wire_type} at byte {start}")),
        };
        if number == 0 {
            return Err(format!("field number 0 at byte {start}"));
        }
        fields.push(Field { number, value, encoded: &buffer[start..position] });
    }
    Ok(fields)
}

fn take<'a>(buffer: &'a [u8], position: &mut usize, length: usize) -> Result<&'a [u8], String> {
    let end = position.checked_add(length).filter(|&end| end <= buffer.len()).ok_or("truncated message")?;
    let bytes = &buffer[*position..end];
    *position = end;
    Ok(bytes)
}

fn read_varint(buffer: &[u8], position: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *buffer.get(*position).ok_or("truncated varint")?;
        *position += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("varint longer than 10 bytes".to_owned())
}

fn packed_varints(packed: &[u8]) -> Result<Vec<u64>, String> {
    let mut values = Vec::new();
    let mut position = 0;
    while position < packed.len() {
        values.push(read_varint(packed, &mut position)?);
    }
    Ok(values)
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn put_varint_field(out: &mut Vec<u8>, number: u64, value: u64) {
    put_varint(out, number << 3);
    put_varint(out, value);
}

fn put_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    put_varint(out, (number << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_model() -> Vec<u8> {
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny-model/model.onnx")).unwrap()
    }

    #[test]
    fn everything_but_the_graph_is_copied_byte_for_byte() {
        let model = tiny_model();
        let quantized = quantize_int8(&model).unwrap();
        let outside_graph = |bytes: &[u8]| -> Vec<Vec<u8>> {
            fields(bytes)
                .unwrap()
                .iter()
                .filter(|field| field.number != 7)
                .map(|field| field.encoded.to_vec())
                .collect()
        };
        assert_eq!(outside_graph(&quantized.model), outside_graph(&model));
        assert!(!outside_graph(&model).is_empty(), "ir_version, producer and opset are outside the graph");
    }

    #[test]
    fn the_rewritten_graph_reads_the_int8_table_and_scales_it_back() {
        let quantized = quantize_int8(&tiny_model()).unwrap();
        let graph = fields(&quantized.model).unwrap().into_iter().find(|field| field.number == 7).unwrap();
        let graph_fields = fields(graph.bytes().unwrap()).unwrap();
        let nodes: Vec<Node<'_>> = graph_fields
            .iter()
            .filter(|field| field.number == 1)
            .map(|field| parse_node(field.bytes().unwrap()).unwrap())
            .collect();
        let tensors: Vec<Initializer<'_>> = graph_fields
            .iter()
            .filter(|field| field.number == 5)
            .map(|field| parse_initializer(field.bytes().unwrap()).unwrap())
            .collect();
        let table = tensors.iter().find(|tensor| tensor.name == "word_embeddings/kb_int8_q").expect("the int8 table");
        assert_eq!((table.data_type, table.dims.as_slice()), (INT8, [570, 64].as_slice()));
        let scales = tensors.iter().find(|tensor| tensor.name == "word_embeddings/kb_int8_scale").unwrap();
        assert_eq!(scales.dims, [570, 1]);
        assert!(tensors.iter().all(|tensor| tensor.name != "word_embeddings"), "the float table is gone");
        // The table's rows are gathered as int8, made float and scaled by their gathered scales.
        let ops: Vec<&str> = nodes.iter().map(|node| node.op_type).collect();
        let gather = ops.iter().position(|&op| op == "Gather").unwrap();
        assert_eq!(&ops[gather..gather + 4], ["Gather", "Cast", "Gather", "Mul"]);
    }

    /// A model computing `Z = (X × W1) × W2`: the product of one quantized `MatMul` is the
    /// input of the next, so its derived names must not clash.
    fn chained_matmuls() -> Vec<u8> {
        let mut graph = Vec::new();
        put_node(&mut graph, "", "MatMul", &["X", "W1"], &["Y"], &[]);
        put_node(&mut graph, "", "MatMul", &["Y", "W2"], &["Z"], &[]);
        let weights: Vec<u8> = (0..64 * 64).flat_map(|index| (index as f32 / 4096.0 - 0.5).to_le_bytes()).collect();
        for name in ["W1", "W2"] {
            let mut tensor = tensor_header(name, FLOAT, &[64, 64]);
            put_bytes(&mut tensor, 9, &weights);
            put_bytes(&mut graph, 5, &tensor);
        }
        let mut model = Vec::new();
        put_varint_field(&mut model, 1, 8);
        let mut opset = Vec::new();
        put_varint_field(&mut opset, 2, 17);
        put_bytes(&mut model, 8, &opset);
        put_bytes(&mut model, 7, &graph);
        model
    }

    #[test]
    fn every_tensor_of_the_rewritten_graph_is_made_once_and_made_before_it_is_used() {
        let quantized = quantize_int8(&chained_matmuls()).unwrap();
        assert_eq!((quantized.matmuls, quantized.gathers), (2, 0));
        let graph = fields(&quantized.model).unwrap().into_iter().find(|field| field.number == 7).unwrap();
        let graph_fields = fields(graph.bytes().unwrap()).unwrap();
        let mut made: HashSet<&str> = HashSet::from(["X"]);
        for field in graph_fields.iter().filter(|field| field.number == 5) {
            assert!(made.insert(parse_initializer(field.bytes().unwrap()).unwrap().name));
        }
        let mut node_names = HashSet::new();
        for field in graph_fields.iter().filter(|field| field.number == 1) {
            let node = parse_node(field.bytes().unwrap()).unwrap();
            for input in &node.inputs {
                assert!(made.contains(input), "{} reads {input} before it is made", node.op_type);
            }
            for output in &node.outputs {
                assert!(made.insert(output), "{output} is made twice");
            }
            assert!(node.name.is_empty() || node_names.insert(node.name), "node name {} twice", node.name);
        }
        assert!(made.contains("Z") && !made.contains("W1"), "same output, float weights gone");
    }

    #[test]
    fn weights_are_coded_symmetrically_per_column_and_per_row() {
        // Two rows, three columns.
        let values = [1.0, -0.5, 0.0, -2.0, 0.25, 0.0];
        let (codes, scales) = quantize_columns(&Floats::Decoded(&values), 2, 3);
        assert_eq!(scales, [2.0 / 127.0, 0.5 / 127.0, 1.0]);
        assert_eq!(codes.iter().map(|&byte| byte as i8).collect::<Vec<_>>(), [64, -127, 0, -127, 64, 0]);
        let mut codes = Vec::new();
        let scales = [0, 3].map(|start| quantize_row(&Floats::Decoded(&values), start, 3, &mut codes));
        assert_eq!(scales, [1.0 / 127.0, 2.0 / 127.0]);
        assert_eq!(codes.iter().map(|&byte| byte as i8).collect::<Vec<_>>(), [127, -64, 0, -127, 16, 0]);
    }

    /// The initializers of an encoded model's graph, by name, each with its data: `raw_data`,
    /// or the bytes of `tables` its external data entries point at.
    fn tensors_with_data(model: &[u8], tables: &[u8]) -> HashMap<String, (Vec<u8>, Vec<u8>)> {
        let graph = fields(model).unwrap().into_iter().find(|field| field.number == 7).unwrap();
        let mut tensors = HashMap::new();
        for initializer in fields(graph.bytes().unwrap()).unwrap().into_iter().filter(|field| field.number == 5) {
            let tensor = fields(initializer.bytes().unwrap()).unwrap();
            let entries: HashMap<&str, &str> = tensor
                .iter()
                .filter(|field| field.number == 13)
                .map(|field| {
                    let entry = fields(field.bytes().unwrap()).unwrap();
                    (entry[0].string().unwrap(), entry[1].string().unwrap())
                })
                .collect();
            let data = match tensor.iter().find(|field| field.number == 9) {
                Some(raw) => {
                    assert!(entries.is_empty(), "raw_data and external data at once");
                    raw.bytes().unwrap().to_vec()
                }
                None if entries.is_empty() => Vec::new(),
                None => {
                    assert_eq!(entries["location"], "weights.bin");
                    let offset: usize = entries["offset"].parse().unwrap();
                    let length: usize = entries["length"].parse().unwrap();
                    assert_eq!(offset % EXTERNAL_ALIGNMENT, 0, "offsets are aligned for mapping");
                    tables[offset..offset + length].to_vec()
                }
            };
            let header: Vec<u8> = tensor
                .iter()
                .filter(|field| matches!(field.number, 1 | 2 | 8))
                .flat_map(|field| field.encoded.iter().copied())
                .collect();
            let name = tensor.iter().find(|field| field.number == 8).unwrap().string().unwrap().to_owned();
            tensors.insert(name, (header, data));
        }
        tensors
    }

    #[test]
    fn large_initializers_are_written_to_the_tables_file_with_the_same_bytes_and_the_input_let_go() {
        let model = tiny_model();
        let inline = quantize_int8(&model).unwrap();
        let mut tables = Vec::new();
        let consumed = std::cell::RefCell::new(Vec::new());
        let note = |bytes: &[u8]| {
            let start = bytes.as_ptr() as usize - model.as_ptr() as usize;
            consumed.borrow_mut().push(start..start + bytes.len());
        };
        let tables_file = TablesFile { writer: &mut tables, file_name: "weights.bin", min_bytes: 1024 };
        let external = quantize_int8_to(&model, Some(tables_file), &note).unwrap();
        assert!(external.moved >= 1, "{external:?}");
        assert_eq!((external.matmuls, external.gathers), (inline.matmuls, inline.gathers));
        assert!(external.model.len() + 1024 < inline.model.len());
        // Every tensor, with its data wherever it went, is the in-memory rewrite's.
        assert_eq!(tensors_with_data(&external.model, &tables), tensors_with_data(&inline.model, &[]));
        // The float data of the quantized table was let go, in order, in pieces.
        let consumed = consumed.into_inner();
        assert!(consumed.windows(2).all(|pair| pair[0].end <= pair[1].start), "{consumed:?}");
        let table_bytes: usize = consumed.iter().map(|range| range.len()).sum();
        assert!(table_bytes >= 570 * 64 * 4, "{table_bytes} bytes let go");
    }

    #[test]
    fn truncated_or_malformed_bytes_are_errors_not_panics() {
        let model = tiny_model();
        for cut in [1, 7, model.len() / 2, model.len() - 1] {
            assert!(quantize_int8(&model[..cut]).is_err(), "cut at {cut}");
        }
        assert!(fields(&[0x80; 11]).is_err(), "an endless varint");
        assert!(fields(&[0x0b]).is_err(), "wire type 3 (groups)");
    }
}
