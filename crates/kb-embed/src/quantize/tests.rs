//! Unit tests of the int8 rewrite: on the tiny test model, on hand-made graphs, and on bytes
//! that are not a model.

use std::collections::{HashMap, HashSet};

use super::messages::{FLOAT, Floats, INT8, Initializer, Node, parse_initializer, parse_node, put_node, tensor_header};
use super::rewrite::{quantize_columns, quantize_row};
use super::wire::{fields, put_bytes, put_varint_field};
use super::*;

fn tiny_model() -> Vec<u8> {
    std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tiny-model/model.onnx")).unwrap()
}

#[test]
fn everything_but_the_graph_is_copied_byte_for_byte() {
    let model = tiny_model();
    let quantized = quantize_int8(&model).unwrap();
    let outside_graph = |bytes: &[u8]| -> Vec<Vec<u8>> {
        fields(bytes).unwrap().iter().filter(|field| field.number != 7).map(|field| field.encoded.to_vec()).collect()
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
