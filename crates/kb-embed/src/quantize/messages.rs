//! The ONNX messages the rewrite reads and writes: the model's operator set, nodes,
//! initializers (with their float values read in place) and attributes.

use super::wire::{Field, Value, fields, packed_varints, put_bytes, put_varint_field};

/// ONNX `TensorProto.DataType` values used here.
pub(super) const FLOAT: u64 = 1;
pub(super) const INT8: u64 = 3;
/// `TensorProto.DataLocation.EXTERNAL`.
pub(super) const EXTERNAL: u64 = 1;
/// `AttributeProto.AttributeType.INT`.
const ATTRIBUTE_INT: u64 = 2;

/// The version of the default (`ai.onnx`) operator set the model imports.
pub(super) fn default_opset(model_fields: &[Field<'_>]) -> Result<u64, String> {
    for field in model_fields.iter().filter(|field| field.number == 8) {
        let entry = fields(field.bytes().ok_or("bad opset_import")?).map_err(|error| error.to_string())?;
        let domain = entry.iter().find(|field| field.number == 1).and_then(Field::string).unwrap_or("");
        if domain.is_empty() || domain == "ai.onnx" {
            return Ok(entry.iter().find(|field| field.number == 2).and_then(Field::varint).unwrap_or(0));
        }
    }
    Err("the model imports no ai.onnx operator set".to_owned())
}

pub(super) struct Node<'a> {
    pub(super) encoded: &'a [u8],
    pub(super) op_type: &'a str,
    pub(super) domain: &'a str,
    pub(super) name: &'a str,
    pub(super) inputs: Vec<&'a str>,
    pub(super) outputs: Vec<&'a str>,
    /// Encoded `attribute` fields, copied to the nodes that replace this one.
    pub(super) attributes: Vec<&'a [u8]>,
}

pub(super) struct Initializer<'a> {
    pub(super) encoded: &'a [u8],
    pub(super) name: &'a str,
    pub(super) data_type: u64,
    pub(super) dims: Vec<u64>,
    pub(super) raw_data: Option<&'a [u8]>,
    pub(super) float_data: Vec<f32>,
    pub(super) external: bool,
}

impl Initializer<'_> {
    pub(super) fn n_elements(&self) -> usize {
        self.dims.iter().map(|&dim| dim as usize).product()
    }

    /// The values of a float tensor, read where they are stored: no copy, a word table is
    /// tens of megabytes.
    pub(super) fn floats(&self) -> Option<Floats<'_>> {
        let floats = match self.raw_data {
            Some(raw) => Floats::Raw(raw),
            None => Floats::Decoded(&self.float_data),
        };
        (floats.len() == self.n_elements()).then_some(floats)
    }
}

/// A float tensor's values: little-endian bytes (`raw_data`) or decoded `float_data`.
pub(super) enum Floats<'a> {
    Raw(&'a [u8]),
    Decoded(&'a [f32]),
}

impl Floats<'_> {
    pub(super) fn len(&self) -> usize {
        match self {
            Floats::Raw(raw) => raw.len() / 4,
            Floats::Decoded(values) => values.len(),
        }
    }

    /// Tells `consumed` that the values in `range` will not be read again (when they are the
    /// input's bytes; decoded values are the rewrite's own).
    pub(super) fn consumed(&self, range: std::ops::Range<usize>, consumed: &dyn Fn(&[u8])) {
        if let Floats::Raw(raw) = self {
            consumed(&raw[range.start * 4..range.end * 4]);
        }
    }

    pub(super) fn get(&self, index: usize) -> f32 {
        match self {
            Floats::Raw(raw) => {
                let bytes = &raw[index * 4..index * 4 + 4];
                f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
            }
            Floats::Decoded(values) => values[index],
        }
    }
}

pub(super) fn gather_axis(node: &Node<'_>) -> Option<i64> {
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
pub(super) fn has_subgraph(attribute: &[u8]) -> bool {
    fields(attribute)
        .map_or(true, |attribute_fields| attribute_fields.iter().any(|field| field.number == 6 || field.number == 11))
}

pub(super) fn parse_node(bytes: &[u8]) -> Result<Node<'_>, String> {
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

pub(super) fn parse_initializer(bytes: &[u8]) -> Result<Initializer<'_>, String> {
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
pub(super) fn cast_to_float() -> Vec<u8> {
    let mut attribute = Vec::new();
    put_bytes(&mut attribute, 1, b"to");
    put_varint_field(&mut attribute, 3, FLOAT);
    put_varint_field(&mut attribute, 20, ATTRIBUTE_INT);
    attribute
}

/// Appends a `node` field (a `NodeProto`) to a graph.
pub(super) fn put_node(
    out: &mut Vec<u8>,
    name: &str,
    op_type: &str,
    inputs: &[&str],
    outputs: &[&str],
    attributes: &[&[u8]],
) {
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
pub(super) fn tensor_header(name: &str, data_type: u64, dims: &[u64]) -> Vec<u8> {
    let mut tensor = Vec::with_capacity(name.len() + 32);
    for &dim in dims {
        put_varint_field(&mut tensor, 1, dim);
    }
    put_varint_field(&mut tensor, 2, data_type);
    put_bytes(&mut tensor, 8, name.as_bytes());
    tensor
}
