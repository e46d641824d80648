//! Compact JSON text without serde's serializer: the bytes `serde_json::to_string` writes.
//!
//! The browser build writes a step request per step, values for JS and a few lengths and
//! canonical keys. Through serde_json each typed `Serialize` was instantiated for its
//! serializer, with serde's generic `ser` machinery beside it; [`WriteJson`] writes the same
//! text from a type's own short function, and the types that derive `Serialize` for the
//! server write here exactly what the derive writes (parity tests beside each impl).
//! Strings are escaped as serde_json escapes them (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`,
//! other control characters as `\u00xx`, nothing else); integers in decimal; floats as
//! serde_json's `zmij` prints them (`1.5`, `1e21`, `-0.0`), non-finite ones as `null`.

use super::value;

/// A value with a JSON text.
pub trait WriteJson {
    fn write_json(&self, out: &mut String);
}

/// The compact JSON text of `value`.
pub fn to_string(value: &dyn WriteJson) -> String {
    let mut out = String::new();
    value.write_json(&mut out);
    out
}

/// An object's fields, written in order: `{"k1":v1,"k2":v2}`.
pub struct ObjectWriter<'a> {
    out: &'a mut String,
    empty: bool,
}

impl<'a> ObjectWriter<'a> {
    pub fn new(out: &'a mut String) -> Self {
        out.push('{');
        Self { out, empty: true }
    }

    pub fn field(&mut self, key: &str, value: &dyn WriteJson) -> &mut Self {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
        write_str(key, self.out);
        self.out.push(':');
        value.write_json(self.out);
        self
    }

    /// A field written only when it is `Some` (serde's `skip_serializing_if = "Option::is_none"`).
    pub fn opt_field(&mut self, key: &str, value: Option<&dyn WriteJson>) -> &mut Self {
        match value {
            Some(value) => self.field(key, value),
            None => self,
        }
    }

    pub fn end(&mut self) {
        self.out.push('}');
    }
}

/// A JSON string literal, escaped as serde_json escapes it.
pub fn write_str(text: &str, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (i, &byte) in text.as_bytes().iter().enumerate() {
        let escape = match byte {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x0c => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0..=0x1f => b'u',
            _ => continue,
        };
        // `i` is at an ASCII byte, so both cuts are character boundaries.
        out.push_str(text.get(start..i).unwrap_or_default());
        start = i + 1;
        out.push('\\');
        out.push(char::from(escape));
        if escape == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("00");
            out.push(char::from(HEX[usize::from(byte >> 4)]));
            out.push(char::from(HEX[usize::from(byte & 0xf)]));
        }
    }
    out.push_str(text.get(start..).unwrap_or_default());
    out.push('"');
}

fn write_u64(mut n: u64, out: &mut String) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &digit in digits.get(at..).unwrap_or_default() {
        out.push(char::from(digit));
    }
}

fn write_f64(f: f64, out: &mut String) {
    if f.is_finite() {
        out.push_str(zmij::Buffer::new().format_finite(f));
    } else {
        out.push_str("null");
    }
}

/// `WriteJson` for a value type: this crate's own always, serde_json's with the
/// `serde-json-value` feature (the same functions over the same API).
macro_rules! write_json_for_value {
    ($value:ty, $map:ty, $number:ty) => {
        impl WriteJson for $value {
            fn write_json(&self, out: &mut String) {
                match self {
                    Self::Null => out.push_str("null"),
                    Self::Bool(b) => b.write_json(out),
                    Self::Number(n) => n.write_json(out),
                    Self::String(s) => write_str(s, out),
                    Self::Array(items) => items.write_json(out),
                    Self::Object(map) => map.write_json(out),
                }
            }
        }

        impl WriteJson for $map {
            fn write_json(&self, out: &mut String) {
                let mut object = ObjectWriter::new(out);
                for (key, value) in self {
                    object.field(key, value);
                }
                object.end();
            }
        }

        impl WriteJson for $number {
            fn write_json(&self, out: &mut String) {
                if let Some(n) = self.as_u64() {
                    write_u64(n, out);
                } else if let Some(n) = self.as_i64() {
                    out.push('-');
                    write_u64(n.unsigned_abs(), out);
                } else {
                    write_f64(self.as_f64().unwrap_or(f64::NAN), out);
                }
            }
        }
    };
}

write_json_for_value!(value::Value, value::Map<String, value::Value>, value::Number);

#[cfg(feature = "serde-json-value")]
write_json_for_value!(
    serde_json::Value,
    serde_json::Map<String, serde_json::Value>,
    serde_json::Number
);

/// The compact JSON text, as serde_json's `Display` writes it (tests print values with it;
/// the browser build writes with `WriteJson` directly).
impl std::fmt::Display for value::Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&to_string(self))
    }
}

impl WriteJson for str {
    fn write_json(&self, out: &mut String) {
        write_str(self, out);
    }
}

impl WriteJson for String {
    fn write_json(&self, out: &mut String) {
        write_str(self, out);
    }
}

impl WriteJson for bool {
    fn write_json(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl WriteJson for u64 {
    fn write_json(&self, out: &mut String) {
        write_u64(*self, out);
    }
}

impl WriteJson for u32 {
    fn write_json(&self, out: &mut String) {
        write_u64(u64::from(*self), out);
    }
}

impl WriteJson for u8 {
    fn write_json(&self, out: &mut String) {
        write_u64(u64::from(*self), out);
    }
}

impl WriteJson for f64 {
    fn write_json(&self, out: &mut String) {
        write_f64(*self, out);
    }
}

impl<T: WriteJson> WriteJson for [T] {
    fn write_json(&self, out: &mut String) {
        out.push('[');
        for (i, item) in self.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            item.write_json(out);
        }
        out.push(']');
    }
}

impl<T: WriteJson> WriteJson for Vec<T> {
    fn write_json(&self, out: &mut String) {
        self.as_slice().write_json(out);
    }
}

impl<T: WriteJson + ?Sized> WriteJson for &T {
    fn write_json(&self, out: &mut String) {
        (**self).write_json(out);
    }
}
