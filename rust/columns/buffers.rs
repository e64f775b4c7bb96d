//! Columns in Arrow's memory layout (`_core.Column` on the Python side): contiguous
//! values, int64 offsets for strings, and a validity bitmap that exists only where a
//! value is missing, exactly as the pure core lays them out.

/// A bit-packed bitmap, least significant bit first.
#[derive(Debug, Default)]
pub struct Bits {
    pub bytes: Vec<u8>,
    pub len: usize,
}

impl Bits {
    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(8) {
            self.bytes.push(0);
        }
        if bit {
            if let Some(last) = self.bytes.last_mut() {
                *last |= 1 << (self.len % 8);
            }
        }
        self.len += 1;
    }
}

/// Which rows hold a value: every one until the first missing one.
#[derive(Debug, Default)]
pub struct Validity {
    bits: Option<Bits>,
    len: usize,
}

impl Validity {
    pub fn push(&mut self, present: bool) {
        if !present && self.bits.is_none() {
            let mut bits = Bits::default();
            for _ in 0..self.len {
                bits.push(true);
            }
            self.bits = Some(bits);
        }
        if let Some(bits) = self.bits.as_mut() {
            bits.push(present);
        }
        self.len += 1;
    }

    pub fn into_bytes(self) -> Option<Vec<u8>> {
        self.bits.map(|b| b.bytes)
    }
}

/// One finished column: kind, length, values, offsets (strings), validity.
pub struct Column {
    pub kind: &'static str,
    pub len: usize,
    pub values: Vec<u8>,
    pub offsets: Option<Vec<u8>>,
    pub validity: Option<Vec<u8>>,
}

#[derive(Debug)]
pub struct Strings {
    data: Vec<u8>,
    offsets: Vec<u8>,
    valid: Validity,
    len: usize,
    /// Where the last value ended in `data`.
    last: usize,
}

impl Default for Strings {
    fn default() -> Self {
        Strings {
            data: Vec::new(),
            offsets: 0i64.to_le_bytes().to_vec(),
            valid: Validity::default(),
            len: 0,
            last: 0,
        }
    }
}

impl Strings {
    pub fn with_capacity(bytes: usize) -> Self {
        let mut s = Strings::default();
        s.data.reserve(bytes);
        s
    }

    pub fn push(&mut self, value: Option<&[u8]>) {
        if let Some(v) = value {
            self.data.extend_from_slice(v);
        }
        self.end(value.is_some());
    }

    pub fn push_str(&mut self, value: Option<&str>) {
        self.push(value.map(str::as_bytes));
    }

    /// Where the next value is built in place (then `end` it).
    pub fn data(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }

    /// Close the value built in `data` (`present` false: a null, whatever was written
    /// since the last one is dropped).
    pub fn end(&mut self, present: bool) {
        if !present {
            self.data.truncate(self.last);
        }
        self.last = self.data.len();
        self.offsets
            .extend_from_slice(&(self.last as i64).to_le_bytes());
        self.valid.push(present);
        self.len += 1;
    }

    pub fn finish(self) -> Column {
        Column {
            kind: "string",
            len: self.len,
            values: self.data,
            offsets: Some(self.offsets),
            validity: self.valid.into_bytes(),
        }
    }
}

/// Numbers: `int64`, `int32`, `timestamp` (int64 microseconds) or `float64`.
#[derive(Debug)]
pub struct Numbers {
    kind: &'static str,
    values: Vec<u8>,
    valid: Validity,
    len: usize,
}

impl Numbers {
    pub fn new(kind: &'static str) -> Self {
        Numbers {
            kind,
            values: Vec::new(),
            valid: Validity::default(),
            len: 0,
        }
    }

    pub fn push_i64(&mut self, v: Option<i64>) {
        match self.kind {
            "int32" => {
                let v = v.and_then(|v| i32::try_from(v).ok());
                self.values.extend_from_slice(&v.unwrap_or(0).to_le_bytes());
                self.valid.push(v.is_some());
            }
            _ => {
                self.values.extend_from_slice(&v.unwrap_or(0).to_le_bytes());
                self.valid.push(v.is_some());
            }
        }
        self.len += 1;
    }

    pub fn push_f64(&mut self, v: Option<f64>) {
        self.values
            .extend_from_slice(&v.unwrap_or(0.0).to_le_bytes());
        self.valid.push(v.is_some());
        self.len += 1;
    }

    pub fn finish(self) -> Column {
        Column {
            kind: self.kind,
            len: self.len,
            values: self.values,
            offsets: None,
            validity: self.valid.into_bytes(),
        }
    }
}

#[derive(Debug, Default)]
pub struct Bools {
    values: Bits,
    valid: Validity,
}

impl Bools {
    pub fn push(&mut self, v: Option<bool>) {
        self.values.push(v.unwrap_or(false));
        self.valid.push(v.is_some());
    }

    pub fn finish(self) -> Column {
        Column {
            kind: "bool",
            len: self.values.len,
            values: self.values.bytes,
            offsets: None,
            validity: self.valid.into_bytes(),
        }
    }
}
