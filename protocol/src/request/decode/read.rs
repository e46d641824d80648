//! Reads a step request's bytes into the decoder's [`Fields`] in one pass. The small fields
//! become `Value`s as before; the catalog, the descriptor lists and the descriptors are read
//! by their keys without a map in between, and each descriptor's `inputSchema` is kept as its
//! JSON text.
//!
//! It accepts exactly the bodies that parse as a `Value`, so the contract's precedence holds
//! (a body that is not JSON is a 400 before a bad version is a 409): a value is never
//! refused for its type while reading (a wrong type is recorded as `Malformed` for the
//! decoder and the value is still read through), every value the decoder does not keep is
//! checked as a `Value` parse would check it ([`Valid`]: numbers in range, string escapes,
//! nesting), and so is every schema's text, with the nesting counted from the body's root.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

use super::fields::{CatalogFields, Check, DescriptorFields, Fields, Malformed, StateFields};
use crate::tool::RawSchema;

/// Containers serde_json lets a value nest (its recursion limit): a `Value` parse of a body
/// refuses the 128th.
const MAX_NESTING: usize = 127;

/// Reads `body`; an error when it is not one JSON object (a `Value` parse would fail, or
/// would not give an object).
pub(super) fn fields(body: &[u8]) -> serde_json::Result<Fields> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let fields = de.deserialize_map(Top)?;
    de.end()?;
    Ok(fields)
}

/// A key, borrowed from the body unless it had escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

/// The body's root object.
struct Top;

impl<'de> Visitor<'de> for Top {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a step request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let mut fields = Fields::default();
        while let Some(key) = map.next_key_seed(Key)? {
            match &*key {
                // The catalog is the root's child; its descriptor list the catalog's.
                "catalog" => fields.catalog = Some(map.next_value_seed(Lenient(Catalog))?),
                "frontendTools" => {
                    fields.frontend_tools =
                        Some(map.next_value_seed(Lenient(List(Descriptor { enclosing: 2 })))?);
                }
                key => match fields.slot(key) {
                    Some(slot) => *slot = Some(map.next_value()?),
                    None => {
                        map.next_value_seed(Valid::ANY)?;
                    }
                },
            }
        }
        Ok(fields)
    }
}

/// What a reader expects a value to be, an object or an array; a value of any other shape
/// is read through and answers `Malformed`.
trait Expect<'de>: Sized {
    type Out;

    fn object<A: MapAccess<'de>>(self, map: A) -> Result<Check<Self::Out>, A::Error> {
        Valid::ANY.visit_map(map)?;
        Ok(Err(Malformed))
    }

    fn array<A: SeqAccess<'de>>(self, seq: A) -> Result<Check<Self::Out>, A::Error> {
        Valid::ANY.visit_seq(seq)?;
        Ok(Err(Malformed))
    }
}

/// An [`Expect`] as a seed: reads any JSON value.
struct Lenient<E>(E);

impl<'de, E: Expect<'de>> DeserializeSeed<'de> for Lenient<E> {
    type Value = Check<E::Out>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, E: Expect<'de>> Visitor<'de> for Lenient<E> {
    type Value = Check<E::Out>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<Er>(self, _: bool) -> Result<Self::Value, Er> {
        Ok(Err(Malformed))
    }

    fn visit_i64<Er>(self, _: i64) -> Result<Self::Value, Er> {
        Ok(Err(Malformed))
    }

    fn visit_u64<Er>(self, _: u64) -> Result<Self::Value, Er> {
        Ok(Err(Malformed))
    }

    fn visit_f64<Er>(self, _: f64) -> Result<Self::Value, Er> {
        Ok(Err(Malformed))
    }

    fn visit_str<Er>(self, _: &str) -> Result<Self::Value, Er> {
        Ok(Err(Malformed))
    }

    fn visit_unit<Er>(self) -> Result<Self::Value, Er> {
        Ok(Err(Malformed))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.object(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.array(seq)
    }
}

/// v2's catalog envelope.
struct Catalog;

impl<'de> Expect<'de> for Catalog {
    type Out = CatalogFields;

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Check<Self::Out>, A::Error> {
        let mut fields = CatalogFields::default();
        while let Some(key) = map.next_key_seed(Key)? {
            match &*key {
                "frontendTools" => {
                    fields.frontend_tools =
                        Some(map.next_value_seed(Lenient(List(Descriptor { enclosing: 3 })))?);
                }
                "frontendState" => {
                    fields.frontend_state = Some(map.next_value_seed(Lenient(List(State)))?);
                }
                key => match fields.slot(key) {
                    Some(slot) => *slot = Some(map.next_value()?),
                    None => {
                        map.next_value_seed(Valid::ANY)?;
                    }
                },
            }
        }
        Ok(Ok(fields))
    }
}

/// A list of what `E` reads; `Malformed` when any item is.
struct List<E>(E);

impl<'de, E: Expect<'de> + Copy> Expect<'de> for List<E> {
    type Out = Vec<E::Out>;

    fn array<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Check<Self::Out>, A::Error> {
        let mut out = Ok(Vec::with_capacity(seq.size_hint().unwrap_or(16)));
        while let Some(item) = seq.next_element_seed(Lenient(self.0))? {
            // After a malformed one the rest are still read: the body may yet be invalid.
            match (&mut out, item) {
                (Ok(list), Ok(item)) => list.push(item),
                (out, _) => *out = Err(Malformed),
            }
        }
        Ok(out)
    }
}

/// One entry of v2's `frontendState`.
#[derive(Clone, Copy)]
struct State;

impl<'de> Expect<'de> for State {
    type Out = StateFields;

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Check<Self::Out>, A::Error> {
        let mut fields = StateFields::default();
        while let Some(key) = map.next_key_seed(Key)? {
            match fields.slot(&key) {
                Some(slot) => *slot = Some(map.next_value()?),
                None => {
                    map.next_value_seed(Valid::ANY)?;
                }
            }
        }
        Ok(Ok(fields))
    }
}

/// One descriptor; `enclosing` is how many containers hold it (the root, the catalog for
/// v2, the list).
#[derive(Clone, Copy)]
struct Descriptor {
    enclosing: usize,
}

impl<'de> Expect<'de> for Descriptor {
    type Out = DescriptorFields;

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Check<Self::Out>, A::Error> {
        let mut fields = DescriptorFields::default();
        while let Some(key) = map.next_key_seed(Key)? {
            match &*key {
                "inputSchema" => {
                    let raw: &RawValue = map.next_value()?;
                    // The schema's containers are nested in the descriptor and its holders.
                    let schema = schema(raw, MAX_NESTING.saturating_sub(self.enclosing + 1))
                        .map_err(A::Error::custom)?;
                    fields.input_schema = Some(schema);
                }
                key => match fields.slot(key) {
                    Some(slot) => *slot = Some(map.next_value()?),
                    None => {
                        map.next_value_seed(Valid::ANY)?;
                    }
                },
            }
        }
        Ok(Ok(fields))
    }
}

/// A schema's text, checked as a `Value` parse of the body would check it (`nesting`
/// containers left to it), kept when it is an object. An object in it that repeats a key is
/// kept as that parse would keep it (the last value, at the first place): the text is
/// rewritten from the parsed value, so what the model is offered is what it was before.
fn schema(raw: &RawValue, nesting: usize) -> serde_json::Result<Check<RawSchema>> {
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let repeats = Valid {
        nesting,
        repeats: true,
    }
    .deserialize(&mut de)?;
    let owned = if repeats.0 {
        let parsed: Value = serde_json::from_str(raw.get())?;
        serde_json::value::to_raw_value(&parsed)?
    } else {
        raw.to_owned()
    };
    Ok(RawSchema::object(owned).ok_or(Malformed))
}

/// Reads a value through, checking it as serde_json checks a `Value` it parses (it reads
/// numbers, strings and keys with the same code), and keeping nothing. `nesting` is how many
/// containers may still open (the deserializer's own limit applies too); with `repeats`, it
/// answers whether an object in the value repeats a key.
#[derive(Clone, Copy)]
struct Valid {
    nesting: usize,
    repeats: bool,
}

/// Whether a repeated key was seen.
struct Repeats(bool);

/// Keys an object is checked against one by one; past this many, by a set.
const FEW_KEYS: usize = 16;

impl Valid {
    /// Checks only what the deserializer checks; repeats are not looked for.
    const ANY: Self = Self {
        nesting: usize::MAX,
        repeats: false,
    };

    fn inner<E: serde::de::Error>(self) -> Result<Self, E> {
        match self.nesting.checked_sub(1) {
            Some(nesting) => Ok(Self { nesting, ..self }),
            None => Err(E::custom("recursion limit exceeded")),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Valid {
    type Value = Repeats;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Repeats, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Valid {
    type Value = Repeats;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Repeats, E> {
        Ok(Repeats(false))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Repeats, E> {
        Ok(Repeats(false))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Repeats, E> {
        Ok(Repeats(false))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Repeats, E> {
        Ok(Repeats(false))
    }

    fn visit_str<E>(self, _: &str) -> Result<Repeats, E> {
        Ok(Repeats(false))
    }

    fn visit_unit<E>(self) -> Result<Repeats, E> {
        Ok(Repeats(false))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Repeats, A::Error> {
        let item = self.inner::<A::Error>()?;
        let mut repeats = false;
        while let Some(Repeats(r)) = seq.next_element_seed(item)? {
            repeats |= r;
        }
        Ok(Repeats(repeats))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Repeats, A::Error> {
        let item = self.inner::<A::Error>()?;
        let mut repeats = false;
        // The keys so far: the first few in place (no allocation for a schema's usual
        // objects), then in a set.
        let mut few: [Cow<'de, str>; FEW_KEYS] = Default::default();
        let mut seen = 0;
        let mut many: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(key) = map.next_key_seed(Key)? {
            if self.repeats && !repeats {
                if many.is_empty() && seen < FEW_KEYS {
                    repeats = few[..seen].contains(&key);
                    few[seen] = key;
                    seen += 1;
                } else {
                    many.extend(few[..seen].iter_mut().map(std::mem::take));
                    seen = 0;
                    repeats = !many.insert(key);
                }
            }
            repeats |= map.next_value_seed(item)?.0;
        }
        Ok(Repeats(repeats))
    }
}
