//! JSON text → `json::Value`, without serde's deserializer.
//!
//! The browser build parses every NDJSON line, every value a JS function hands over and the
//! meta tools' schemas; through `serde_json::from_slice` that linked serde_json's
//! deserializer, `Value`'s visitor and serde's generic `de` machinery for one job. This
//! parser accepts and refuses what `serde_json::from_slice::<Value>` does and builds the same
//! values (tested against it, `tests` below): RFC 8259 JSON, strict UTF-8 (a lone surrogate
//! escape is refused), nesting up to 127 arrays/objects, a later duplicate key replacing the
//! earlier value in the earlier key's place. Numbers follow serde_json without its
//! `float_roundtrip` feature, as the browser build has it: integers are `u64`/`i64` when they
//! fit, everything else an `f64` from the significand and a power of ten (to within an ulp
//! of the nearest `f64`; the server's build, with `float_roundtrip`, rounds exactly).
//!
//! Errors carry the byte offset where the text stopped being JSON; the parser never panics
//! and never recurses past its depth limit, whatever the input.

use super::{Map, Number, Value};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a text is not a JSON value: the byte offset at which it stopped being one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseError {
    pub at: usize,
}

/// serde_json's recursion limit: this many nested arrays/objects is one too many.
const MAX_DEPTH: u32 = 128;

/// The JSON value in `text` (whitespace around it allowed, nothing else).
pub fn parse(text: &[u8]) -> Result<Value, ParseError> {
    let mut parser = Parser {
        text,
        at: 0,
        depth: 0,
    };
    let value = parser.value()?;
    match parser.skip_whitespace() {
        None => Ok(value),
        Some(_) => Err(parser.error()),
    }
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
    depth: u32,
}

type Parsed<T> = Result<T, ParseError>;

impl Parser<'_> {
    fn error(&self) -> ParseError {
        ParseError { at: self.at }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    /// The next byte that is not whitespace, not consumed.
    fn skip_whitespace(&mut self) -> Option<u8> {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
        self.peek()
    }

    /// Consumes `byte` after optional whitespace, or fails.
    fn expect(&mut self, byte: u8) -> Parsed<()> {
        if self.skip_whitespace() == Some(byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error())
        }
    }

    fn value(&mut self) -> Parsed<Value> {
        let Some(first) = self.skip_whitespace() else {
            return Err(self.error());
        };
        Ok(match first {
            b'n' => self.word(b"null", Value::Null)?,
            b't' => self.word(b"true", Value::Bool(true))?,
            b'f' => self.word(b"false", Value::Bool(false))?,
            b'"' => Value::String(self.string()?),
            b'[' | b'{' => {
                self.depth += 1;
                if self.depth >= MAX_DEPTH {
                    return Err(self.error());
                }
                self.at += 1;
                let value = if first == b'[' {
                    self.array()?
                } else {
                    self.object()?
                };
                self.depth -= 1;
                value
            }
            _ => self.number()?,
        })
    }

    fn word(&mut self, word: &[u8], value: Value) -> Parsed<Value> {
        for &expected in word {
            if self.peek() != Some(expected) {
                return Err(self.error());
            }
            self.at += 1;
        }
        Ok(value)
    }

    /// After `[`.
    fn array(&mut self) -> Parsed<Value> {
        let mut items = Vec::new();
        if self.skip_whitespace() == Some(b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            match self.skip_whitespace() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.error()),
            }
        }
    }

    /// After `{`. (The same shape as `array`: one shared helper for the `,`/close step
    /// measured 59 B gzip larger.)
    ///
    /// The entries are gathered first and made a map at the end (`Map: FromIterator`), which
    /// applies the duplicate-key rule in O(n log n) for a large object, where an `insert` per
    /// key into `json::value::Map`'s vector would be quadratic in the key count.
    fn object(&mut self) -> Parsed<Value> {
        let mut entries = Vec::new();
        if self.skip_whitespace() == Some(b'}') {
            self.at += 1;
            return Ok(Value::Object(Map::new()));
        }
        loop {
            if self.skip_whitespace() != Some(b'"') {
                return Err(self.error());
            }
            let key = self.string()?;
            self.expect(b':')?;
            let value = self.value()?;
            entries.push((key, value));
            match self.skip_whitespace() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Object(entries.into_iter().collect()));
                }
                _ => return Err(self.error()),
            }
        }
    }

    /// At the opening `"`: the string's text, escapes decoded, UTF-8 checked.
    fn string(&mut self) -> Parsed<String> {
        self.at += 1;
        let mut bytes = Vec::new();
        let mut start = self.at;
        loop {
            let Some(byte) = self.peek() else {
                return Err(self.error());
            };
            match byte {
                b'"' => {
                    bytes.extend_from_slice(self.text.get(start..self.at).unwrap_or_default());
                    self.at += 1;
                    break;
                }
                b'\\' => {
                    bytes.extend_from_slice(self.text.get(start..self.at).unwrap_or_default());
                    self.at += 1;
                    self.escape(&mut bytes)?;
                    start = self.at;
                }
                0..=0x1f => return Err(self.error()),
                _ => self.at += 1,
            }
        }
        String::from_utf8(bytes).map_err(|_| ParseError { at: start })
    }

    /// After a `\`: one escape, appended as UTF-8.
    fn escape(&mut self, out: &mut Vec<u8>) -> Parsed<()> {
        let Some(byte) = self.peek() else {
            return Err(self.error());
        };
        self.at += 1;
        let decoded = match byte {
            b'"' | b'\\' | b'/' => byte,
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => return self.unicode_escape(out),
            _ => return Err(self.error()),
        };
        out.push(decoded);
        Ok(())
    }

    /// After `\u`: a code point, or a surrogate pair as two escapes; a lone surrogate is an
    /// error, as in serde_json's strings.
    fn unicode_escape(&mut self, out: &mut Vec<u8>) -> Parsed<()> {
        let high = self.hex4()?;
        let code = match high {
            0xdc00..=0xdfff => return Err(self.error()),
            0xd800..=0xdbff => {
                if self.peek() != Some(b'\\') {
                    return Err(self.error());
                }
                self.at += 1;
                if self.peek() != Some(b'u') {
                    return Err(self.error());
                }
                self.at += 1;
                let low = self.hex4()?;
                if !(0xdc00..=0xdfff).contains(&low) {
                    return Err(self.error());
                }
                0x1_0000 + (((high - 0xd800) << 10) | (low - 0xdc00))
            }
            _ => high,
        };
        let c = char::from_u32(code).ok_or_else(|| self.error())?;
        let mut buf = [0; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        Ok(())
    }

    fn hex4(&mut self) -> Parsed<u32> {
        let mut n = 0;
        for _ in 0..4 {
            let digit = match self.peek() {
                Some(b @ b'0'..=b'9') => b - b'0',
                Some(b @ b'a'..=b'f') => b - b'a' + 10,
                Some(b @ b'A'..=b'F') => b - b'A' + 10,
                _ => return Err(self.error()),
            };
            self.at += 1;
            n = (n << 4) | u32::from(digit);
        }
        Ok(n)
    }

    /// Consumes ASCII digits while `each` accepts them; the count consumed.
    fn digits(&mut self, mut each: impl FnMut(u8)) -> usize {
        let start = self.at;
        while let Some(b @ b'0'..=b'9') = self.peek() {
            each(b - b'0');
            self.at += 1;
        }
        self.at - start
    }

    /// A number, as serde_json reads one (see the module's note on floats).
    fn number(&mut self) -> Parsed<Value> {
        let positive = self.peek() != Some(b'-');
        if !positive {
            self.at += 1;
        }
        // The integer part: no leading zero unless it is the only digit.
        let mut significand: u64 = 0;
        // Digits past what a u64 holds are dropped and counted as powers of ten.
        let mut exponent: i32 = 0;
        let mut overflowed = false;
        match self.peek() {
            Some(b'0') => {
                self.at += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.error());
                }
            }
            Some(b'1'..=b'9') => {
                self.digits(|digit| {
                    if overflowed {
                        exponent = exponent.saturating_add(1);
                    } else if let Some(next) = next_significand(significand, digit) {
                        significand = next;
                    } else {
                        overflowed = true;
                        exponent = 1;
                    }
                });
            }
            _ => return Err(self.error()),
        }
        let mut is_float = overflowed;
        if self.peek() == Some(b'.') {
            self.at += 1;
            is_float = true;
            // As serde_json: fraction digits are taken while the significand holds them (even
            // after integer digits were dropped), and ignored from the first that does not fit.
            let mut fraction_overflowed = false;
            let count = self.digits(|digit| {
                if fraction_overflowed {
                    return;
                }
                match next_significand(significand, digit) {
                    Some(next) => {
                        significand = next;
                        exponent = exponent.saturating_sub(1);
                    }
                    None => fraction_overflowed = true,
                }
            });
            if count == 0 {
                return Err(self.error());
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            is_float = true;
            let positive_exp = match self.peek() {
                Some(b'+') => {
                    self.at += 1;
                    true
                }
                Some(b'-') => {
                    self.at += 1;
                    false
                }
                _ => true,
            };
            let mut exp: i32 = 0;
            let mut exp_overflowed = false;
            let count = self.digits(|digit| {
                match exp
                    .checked_mul(10)
                    .and_then(|e| e.checked_add(i32::from(digit)))
                {
                    Some(next) if !exp_overflowed => exp = next,
                    _ => exp_overflowed = true,
                }
            });
            if count == 0 {
                return Err(self.error());
            }
            if exp_overflowed {
                // serde_json: an exponent past i32 is ±0 or out of range.
                if significand != 0 && positive_exp {
                    return Err(self.error());
                }
                return Ok(float(if positive { 0.0 } else { -0.0 }));
            }
            exponent = if positive_exp {
                exponent.saturating_add(exp)
            } else {
                exponent.saturating_sub(exp)
            };
        }
        if !is_float {
            if positive {
                return Ok(Value::Number(Number::from(significand)));
            }
            let negated = (significand as i64).wrapping_neg();
            // `-0` and values below i64::MIN are floats, as in serde_json.
            if negated < 0 {
                return Ok(Value::Number(Number::from(negated)));
            }
            return Ok(float(-(significand as f64)));
        }
        let magnitude = f64_from_parts(significand, exponent).ok_or_else(|| self.error())?;
        Ok(float(if positive { magnitude } else { -magnitude }))
    }
}

fn next_significand(significand: u64, digit: u8) -> Option<u64> {
    significand
        .checked_mul(10)
        .and_then(|s| s.checked_add(u64::from(digit)))
}

fn float(f: f64) -> Value {
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// `significand × 10^exponent` as serde_json computes it without `float_roundtrip`; `None`
/// when it is too large for an `f64`.
fn f64_from_parts(significand: u64, mut exponent: i32) -> Option<f64> {
    let mut f = significand as f64;
    loop {
        match pow10(exponent.unsigned_abs()) {
            Some(pow) => {
                if exponent >= 0 {
                    f *= pow;
                    if f.is_infinite() {
                        return None;
                    }
                } else {
                    f /= pow;
                }
                return Some(f);
            }
            None => {
                if f == 0.0 {
                    return Some(f);
                }
                if exponent >= 0 {
                    return None;
                }
                f /= 1e308;
                exponent += 308;
            }
        }
    }
}

/// 10^k for k ≤ 308: the nearest `f64`, the value of the literal `1e{k}` (the table serde_json
/// reads with). Computed, not tabled: 309 `f64`s do not compress (1.7–2.1 KB gzip of the package).
/// Each is computed once and kept (zeroed memory costs the `.wasm` nothing), so a frame of
/// many large exponents costs one computation per distinct exponent.
fn pow10(k: u32) -> Option<f64> {
    static KNOWN: [AtomicU64; 309] = [const { AtomicU64::new(0) }; 309];
    let slot = KNOWN.get(k as usize)?;
    // No power of ten has the bits of 0.0.
    let known = slot.load(Ordering::Relaxed);
    if known != 0 {
        return Some(f64::from_bits(known));
    }
    let pow = compute_pow10(k);
    slot.store(pow.to_bits(), Ordering::Relaxed);
    Some(pow)
}

/// 10^k = 5^k · 2^k for k ≤ 308: 5^k computed exactly in a small big integer, rounded once
/// to 53 bits (its top 64 bits with a sticky bit for the rest, then `u64 as f64`, which rounds
/// to nearest even), and scaled by 2^k, which is exact. A test compares it with the literals
/// for every k.
fn compute_pow10(k: u32) -> f64 {
    // 5^308 < 2^716: 23 limbs of 32 bits, least significant first.
    let mut limbs = [0u32; 23];
    limbs[0] = 1;
    let mut len = 1;
    for _ in 0..k {
        let mut carry = 0u64;
        for limb in limbs.iter_mut().take(len) {
            let product = u64::from(*limb) * 5 + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry != 0 {
            limbs[len] = carry as u32;
            len += 1;
        }
    }
    let bits = len as u32 * 32 - limbs[len - 1].leading_zeros();
    // Bits below the top 64 are dropped; any of them set makes the sticky bit.
    let drop = bits.saturating_sub(64);
    let (q, r) = ((drop / 32) as usize, drop % 32);
    // The limbs that hold the top bits (at most three from limb q up), and those below them;
    // `get`, not an index, so no bound check is left to panic (q < len).
    let (below, kept) = limbs
        .get(..len)
        .unwrap_or(&[])
        .split_at_checked(q)
        .unwrap_or_default();
    let mut window: u128 = 0;
    for &limb in kept.iter().take(3).rev() {
        window = (window << 32) | u128::from(limb);
    }
    let sticky = window & ((1 << r) - 1) != 0 || below.iter().any(|&limb| limb != 0);
    let top = (window >> r) as u64 | u64::from(sticky);
    // × 2^(drop + k), at most 2^960: a normal power of two.
    top as f64 * f64::from_bits(u64::from(1023 + drop + k) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_ten_are_the_nearest_f64_as_the_literals_are() {
        for (k, &literal) in POW10.iter().enumerate() {
            assert_eq!(compute_pow10(k as u32), literal, "1e{k}");
            // Computed, then remembered.
            assert_eq!(pow10(k as u32), Some(literal), "1e{k}");
            assert_eq!(pow10(k as u32), Some(literal), "1e{k}");
        }
        assert_eq!(pow10(309), None);
    }

    /// 10^0 … 10^308, each the nearest `f64`.
    #[rustfmt::skip]
    static POW10: [f64; 309] = [
        1e000, 1e001, 1e002, 1e003, 1e004, 1e005, 1e006, 1e007, 1e008, 1e009,
        1e010, 1e011, 1e012, 1e013, 1e014, 1e015, 1e016, 1e017, 1e018, 1e019,
        1e020, 1e021, 1e022, 1e023, 1e024, 1e025, 1e026, 1e027, 1e028, 1e029,
        1e030, 1e031, 1e032, 1e033, 1e034, 1e035, 1e036, 1e037, 1e038, 1e039,
        1e040, 1e041, 1e042, 1e043, 1e044, 1e045, 1e046, 1e047, 1e048, 1e049,
        1e050, 1e051, 1e052, 1e053, 1e054, 1e055, 1e056, 1e057, 1e058, 1e059,
        1e060, 1e061, 1e062, 1e063, 1e064, 1e065, 1e066, 1e067, 1e068, 1e069,
        1e070, 1e071, 1e072, 1e073, 1e074, 1e075, 1e076, 1e077, 1e078, 1e079,
        1e080, 1e081, 1e082, 1e083, 1e084, 1e085, 1e086, 1e087, 1e088, 1e089,
        1e090, 1e091, 1e092, 1e093, 1e094, 1e095, 1e096, 1e097, 1e098, 1e099,
        1e100, 1e101, 1e102, 1e103, 1e104, 1e105, 1e106, 1e107, 1e108, 1e109,
        1e110, 1e111, 1e112, 1e113, 1e114, 1e115, 1e116, 1e117, 1e118, 1e119,
        1e120, 1e121, 1e122, 1e123, 1e124, 1e125, 1e126, 1e127, 1e128, 1e129,
        1e130, 1e131, 1e132, 1e133, 1e134, 1e135, 1e136, 1e137, 1e138, 1e139,
        1e140, 1e141, 1e142, 1e143, 1e144, 1e145, 1e146, 1e147, 1e148, 1e149,
        1e150, 1e151, 1e152, 1e153, 1e154, 1e155, 1e156, 1e157, 1e158, 1e159,
        1e160, 1e161, 1e162, 1e163, 1e164, 1e165, 1e166, 1e167, 1e168, 1e169,
        1e170, 1e171, 1e172, 1e173, 1e174, 1e175, 1e176, 1e177, 1e178, 1e179,
        1e180, 1e181, 1e182, 1e183, 1e184, 1e185, 1e186, 1e187, 1e188, 1e189,
        1e190, 1e191, 1e192, 1e193, 1e194, 1e195, 1e196, 1e197, 1e198, 1e199,
        1e200, 1e201, 1e202, 1e203, 1e204, 1e205, 1e206, 1e207, 1e208, 1e209,
        1e210, 1e211, 1e212, 1e213, 1e214, 1e215, 1e216, 1e217, 1e218, 1e219,
        1e220, 1e221, 1e222, 1e223, 1e224, 1e225, 1e226, 1e227, 1e228, 1e229,
        1e230, 1e231, 1e232, 1e233, 1e234, 1e235, 1e236, 1e237, 1e238, 1e239,
        1e240, 1e241, 1e242, 1e243, 1e244, 1e245, 1e246, 1e247, 1e248, 1e249,
        1e250, 1e251, 1e252, 1e253, 1e254, 1e255, 1e256, 1e257, 1e258, 1e259,
        1e260, 1e261, 1e262, 1e263, 1e264, 1e265, 1e266, 1e267, 1e268, 1e269,
        1e270, 1e271, 1e272, 1e273, 1e274, 1e275, 1e276, 1e277, 1e278, 1e279,
        1e280, 1e281, 1e282, 1e283, 1e284, 1e285, 1e286, 1e287, 1e288, 1e289,
        1e290, 1e291, 1e292, 1e293, 1e294, 1e295, 1e296, 1e297, 1e298, 1e299,
        1e300, 1e301, 1e302, 1e303, 1e304, 1e305, 1e306, 1e307, 1e308,
    ];
}
