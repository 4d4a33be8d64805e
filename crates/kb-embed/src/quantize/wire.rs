//! The protobuf wire format, just what a rewrite needs: the fields of an encoded message, read
//! in order with their encodings kept for copying, and fields written back.

#[derive(Debug, Clone, Copy)]
pub(super) enum Value<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32(u32),
}

/// One field of an encoded message: its number, its value and its whole encoding (key
/// included), to copy it unchanged.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field<'a> {
    pub(super) number: u64,
    pub(super) value: Value<'a>,
    pub(super) encoded: &'a [u8],
}

impl<'a> Field<'a> {
    pub(super) fn bytes(&self) -> Option<&'a [u8]> {
        match self.value {
            Value::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }

    pub(super) fn string(&self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }

    pub(super) fn varint(&self) -> Option<u64> {
        match self.value {
            Value::Varint(value) => Some(value),
            _ => None,
        }
    }
}

/// The fields of an encoded message, in order.
pub(super) fn fields(buffer: &[u8]) -> Result<Vec<Field<'_>>, String> {
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

pub(super) fn packed_varints(packed: &[u8]) -> Result<Vec<u64>, String> {
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

pub(super) fn put_varint_field(out: &mut Vec<u8>, number: u64, value: u64) {
    put_varint(out, number << 3);
    put_varint(out, value);
}

pub(super) fn put_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    put_varint(out, (number << 3) | 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}
