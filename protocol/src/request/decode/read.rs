//! Reads a step request's bytes into the decoder's [`Fields`] in one pass. The small fields
//! become `Value`s; the messages, the catalog, the descriptor lists and the descriptors are
//! read by their keys without a map in between (a message straight into its typed form, each
//! content part from the object `Value` `ContentPart` reads), and each descriptor's
//! `inputSchema` is kept as its JSON text.
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

use serde::de::value::{
    BorrowedStrDeserializer, MapAccessDeserializer, SeqAccessDeserializer, StringDeserializer,
};
use serde::de::{
    DeserializeSeed, Deserializer, Error as _, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::fields::{CatalogFields, Check, DescriptorFields, Fields, Malformed, StateFields};
use crate::message::{ContentPart, MessageContent, Role, WireModelMessage};
use crate::tool::RawSchema;

/// Containers serde_json lets a value nest (its recursion limit): a `Value` parse of a body
/// refuses the 128th.
const MAX_NESTING: usize = 127;

/// Reads `body`; an error when it is not one JSON object (a `Value` parse would fail, or
/// would not give an object).
pub(super) fn fields(body: &[u8]) -> serde_json::Result<Fields> {
    // Checked as UTF-8 once, not string by string: a `Value` parse refuses a body that is not
    // UTF-8 (bytes outside strings are not JSON; those inside are checked), so this refuses
    // no body it would accept.
    let text = std::str::from_utf8(body).map_err(serde_json::Error::custom)?;
    let mut de = serde_json::Deserializer::from_str(text);
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
                "messages" => fields.messages = Some(map.next_value_seed(Lenient(List(Message)))?),
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

    fn text(self, _: &str) -> Check<Self::Out> {
        Err(Malformed)
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

    fn visit_str<Er>(self, v: &str) -> Result<Self::Value, Er> {
        Ok(self.0.text(v))
    }

    fn visit_unit<Er>(self) -> Result<Self::Value, Er> {
        Ok(Err(Malformed))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        match map.next_key_seed(Key)? {
            Some(key) if key == RAW_VALUE_KEY => {
                // The text is JSON (`raw_value` parsed it); what a reader cannot take from a
                // parsed value (a descriptor's schema is read as its text) is malformed.
                let value = raw_value(&mut map)?;
                Ok(self.deserialize(value).unwrap_or(Err(Malformed)))
            }
            first => self.0.object(Replay { first, map }),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.array(seq)
    }
}

/// The key serde_json's `Value` reads an object by as the JSON text in the string after it,
/// when it is the object's first key (its raw-value form, on with the `raw_value` feature):
/// read here as that parse reads it.
const RAW_VALUE_KEY: &str = "$serde_json::private::RawValue";

/// The value of an object whose first key, just read, is [`RAW_VALUE_KEY`], as a `Value`
/// parse gives it: the string's text parsed, and no entry after it.
fn raw_value<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Value, A::Error> {
    let text = map.next_value_seed(Key)?;
    let value = serde_json::from_str(&text).map_err(A::Error::custom)?;
    if map.next_key_seed(Key)?.is_some() {
        return Err(A::Error::custom("an entry after a raw value"));
    }
    Ok(value)
}

/// An object's entries with its first key, already read, given back first.
struct Replay<'de, A> {
    first: Option<Cow<'de, str>>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(Cow::Borrowed(key)) => seed
                .deserialize(BorrowedStrDeserializer::new(key))
                .map(Some),
            Some(Cow::Owned(key)) => seed.deserialize(StringDeserializer::new(key)).map(Some),
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
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

/// One model message, read as serde's derive reads it from a parsed `Value`
/// (`messages_from_value`): the `{role, content}` object by its keys (of a repeated key, the
/// last), other keys read through; a role that is not a string, and the `[role, content]`
/// array form, as a `Value` given to that derive.
#[derive(Clone, Copy)]
struct Message;

impl<'de> Expect<'de> for Message {
    type Out = WireModelMessage;

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Check<Self::Out>, A::Error> {
        let mut role = None;
        let mut content = None;
        while let Some(key) = map.next_key_seed(Key)? {
            match &*key {
                "role" => role = Some(map.next_value_seed(Lenient(RoleOf))?),
                "content" => content = Some(map.next_value_seed(Lenient(Content))?),
                _ => {
                    map.next_value_seed(Valid::ANY)?;
                }
            }
        }
        Ok(match (role, content) {
            (Some(Ok(role)), Some(Ok(content))) => Ok(WireModelMessage { role, content }),
            _ => Err(Malformed),
        })
    }

    fn array<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Check<Self::Out>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(serde_json::from_value(Value::Array(items)).map_err(|_| Malformed))
    }
}

/// A message's `role`: one of the names, or another form serde's derive accepts from a
/// `Value` (`{"user": null}`).
struct RoleOf;

impl<'de> Expect<'de> for RoleOf {
    type Out = Role;

    fn text(self, text: &str) -> Check<Role> {
        Role::parse(text).ok_or(Malformed)
    }

    fn object<A: MapAccess<'de>>(self, map: A) -> Result<Check<Role>, A::Error> {
        let value = Value::deserialize(MapAccessDeserializer::new(map))?;
        Ok(Role::deserialize(value).map_err(|_| Malformed))
    }
}

/// A message's `content`: its text, or its parts.
struct Content;

impl<'de> Expect<'de> for Content {
    type Out = MessageContent;

    fn text(self, text: &str) -> Check<Self::Out> {
        Ok(MessageContent::Text(text.to_owned()))
    }

    fn array<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Check<Self::Out>, A::Error> {
        // Most messages have one part: room for more is made when one comes.
        let mut parts = Ok(Vec::with_capacity(1));
        while let Some(part) = seq.next_element_seed(Lenient(Part))? {
            // After a part that is not one the rest are still read.
            match (&mut parts, part) {
                (Ok(parts), Ok(part)) => parts.push(part),
                (parts, _) => *parts = Err(Malformed),
            }
        }
        Ok(parts.map(MessageContent::Parts))
    }
}

/// One content part, as `ContentPart::from_map` reads the object a `Value` parse gives: its
/// entries in order (a repeated key keeps its first place and its last value), strings
/// borrowed from the body until a part keeps them; past [`FEW_KEYS`] keys, in that map.
struct Part;

/// A part's value: a string as its text, anything else as the `Value` a parse gives.
enum Field<'de> {
    Text(Cow<'de, str>),
    Any(Value),
}

impl Field<'_> {
    fn into_value(self) -> Value {
        match self {
            Self::Text(text) => Value::String(text.into_owned()),
            Self::Any(value) => value,
        }
    }
}

type Entries<'de> = Vec<(Cow<'de, str>, Field<'de>)>;

fn into_map(entries: Entries<'_>) -> Map<String, Value> {
    let mut map = Map::new();
    for (key, value) in entries {
        map.insert(key.into_owned(), value.into_value());
    }
    map
}

/// The kinds of part `ContentPart::from_map` types, by the keys it takes out of the object.
const TYPED: [(&str, &[&str]); 4] = [
    ("text", &["type", "text"]),
    ("reasoning", &["type", "text"]),
    ("tool-call", &["type", "toolCallId", "toolName", "input"]),
    ("tool-result", &["type", "toolCallId", "toolName", "output"]),
];

/// `ContentPart::from_map` of the object with these entries.
fn part(mut entries: Entries<'_>) -> ContentPart {
    let at = |entries: &Entries<'_>, key: &str| entries.iter().position(|(k, _)| k == key);
    let is_text = |entries: &Entries<'_>, key| {
        at(entries, key).is_some_and(|i| matches!(entries[i].1, Field::Text(_)))
    };
    let kind = match at(&entries, "type").map(|i| &entries[i].1) {
        Some(Field::Text(kind)) => TYPED.iter().position(|(k, _)| k == kind),
        _ => None,
    };
    // Typed only when every field it needs has the right type.
    let typed = kind.filter(|&kind| match TYPED[kind].1 {
        [_, text] => is_text(&entries, text),
        [_, id, name, value] => {
            is_text(&entries, id) && is_text(&entries, name) && at(&entries, value).is_some()
        }
        _ => false,
    });
    let Some(kind) = typed else {
        return ContentPart::Other(into_map(entries));
    };
    // Taken out in `from_map`'s order, each as `Map::remove` takes it (the last entry moves
    // into its place), so the extra keys keep the order that leaves.
    let mut taken = Vec::with_capacity(4);
    for key in TYPED[kind].1 {
        if let Some(i) = at(&entries, key) {
            taken.push(entries.swap_remove(i).1);
        }
    }
    let extra = into_map(entries);
    let mut taken = taken.into_iter().skip(1);
    let mut next = || taken.next().map_or(Value::Null, Field::into_value);
    match kind {
        0 | 1 => {
            let text = match next() {
                Value::String(text) => text,
                _ => String::new(),
            };
            if kind == 0 {
                ContentPart::Text { text, extra }
            } else {
                ContentPart::Reasoning { text, extra }
            }
        }
        _ => {
            let tool_call_id = string_of(next());
            let tool_name = string_of(next());
            let value = next();
            if kind == 2 {
                ContentPart::ToolCall {
                    tool_call_id,
                    tool_name,
                    input: value,
                    extra,
                }
            } else {
                ContentPart::ToolResult {
                    tool_call_id,
                    tool_name,
                    output: value,
                    extra,
                }
            }
        }
    }
}

fn string_of(value: Value) -> String {
    match value {
        Value::String(s) => s,
        _ => String::new(),
    }
}

impl<'de> Expect<'de> for Part {
    type Out = ContentPart;

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Check<Self::Out>, A::Error> {
        let mut entries: Entries<'de> = Vec::with_capacity(4);
        while let Some(key) = map.next_key_seed(Key)? {
            let value = map.next_value_seed(FieldOf)?;
            match entries.iter().position(|(k, _)| *k == key) {
                Some(i) => entries[i].1 = value,
                None if entries.len() < FEW_KEYS => entries.push((key, value)),
                None => {
                    let mut object = into_map(entries);
                    object.insert(key.into_owned(), value.into_value());
                    while let Some((key, value)) = map.next_entry::<String, Value>()? {
                        object.insert(key, value);
                    }
                    return Ok(Ok(ContentPart::from_map(object)));
                }
            }
        }
        Ok(Ok(part(entries)))
    }
}

/// Reads a part's value as a [`Field`].
struct FieldOf;

impl<'de> DeserializeSeed<'de> for FieldOf {
    type Value = Field<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FieldOf {
    type Value = Field<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Field::Text(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Field::Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Field::Text(Cow::Owned(v)))
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Value::deserialize(v.into_deserializer()).map(Field::Any)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Value::deserialize(v.into_deserializer()).map(Field::Any)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Value::deserialize(v.into_deserializer()).map(Field::Any)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Value::deserialize(v.into_deserializer()).map(Field::Any)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Field::Any(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Field::Any)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(Field::Any)
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
        let mut first = true;
        while let Some(key) = map.next_key_seed(Key)? {
            if std::mem::take(&mut first) && key == RAW_VALUE_KEY {
                // A parse rewrites the value: a schema is kept as that parse gives it.
                raw_value(&mut map)?;
                repeats = true;
                break;
            }
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
