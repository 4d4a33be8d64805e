//! Where the rewritten graph's initializers go: into the graph, or into the tables file
//! ([`TablesFile`]) at offsets aligned for mapping, written as they are made.

use super::messages::{EXTERNAL, Initializer, tensor_header};
use super::wire::{fields, put_bytes, put_varint_field};
use super::{EXTERNAL_ALIGNMENT, TablesFile};

/// Writes the rewritten graph's initializers: into the graph, or into the tables file when
/// there is one and they are large enough.
pub(super) struct Initializers<'w> {
    pub(super) tables: Option<TablesFile<'w>>,
    /// Bytes written to the tables file so far.
    pub(super) written: usize,
    pub(super) moved: usize,
}

/// An initializer being written: its data so far when it stays in the graph, else where it
/// starts in the tables file.
pub(super) struct Pending {
    inline: Option<Vec<u8>>,
    offset: usize,
}

impl Initializers<'_> {
    /// Starts an initializer of `len` bytes of data.
    pub(super) fn begin(&mut self, len: usize) -> Result<Pending, String> {
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

    pub(super) fn push(&mut self, pending: &mut Pending, bytes: &[u8]) -> Result<(), String> {
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
    pub(super) fn finish(&mut self, graph: &mut Vec<u8>, pending: Pending, fields: &[u8]) {
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
    pub(super) fn put(
        &mut self,
        graph: &mut Vec<u8>,
        name: &str,
        data_type: u64,
        dims: &[u64],
        raw: &[u8],
    ) -> Result<(), String> {
        let mut pending = self.begin(raw.len())?;
        self.push(&mut pending, raw)?;
        self.finish(graph, pending, &tensor_header(name, data_type, dims));
        Ok(())
    }

    /// Copies an initializer of the input unchanged, or with its `raw_data` moved to the tables
    /// file when it is large enough (and not external already).
    pub(super) fn copy(
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
