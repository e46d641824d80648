//! A JSON value of our own: [`Value`], its object [`Map`] and [`Number`], with the subset of
//! serde_json's API (and its semantics, `preserve_order` on) that this workspace's browser
//! build uses.
//!
//! The browser build names `json::Value` and gets this type (the `serde-json-value` feature
//! off); the server gets serde_json's. serde_json's ordered map is an `IndexMap` over
//! `hashbrown` with std's SipHash state, ~10 KB of the wasm for maps that hold a handful of
//! keys. Here a map is its entries in insertion order in one `Vec`, searched linearly; what a
//! hostile object with very many keys could make quadratic (the parser's duplicate-key rule,
//! map equality) sorts an index list instead.
//!
//! Semantics kept from serde_json (tested against it, `tests` below): an existing key keeps
//! its position on insert; [`Map::remove`] is `swap_remove` (the last entry takes the removed
//! one's place); map equality ignores order; indexing a `Value` by a missing key or index
//! gives `Null`; numbers are a `u64`, a negative `i64` or a finite `f64`, equal only within
//! the same kind.

use std::borrow::Borrow;
use std::hash::Hash;
use std::ops::{Index, IndexMut};

/// Any JSON value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Value>),
    Object(Map<String, Value>),
}

/// A JSON number: what serde_json's `Number` holds without `arbitrary_precision`. (Not
/// `Copy`, as serde_json's is not: code written for either reads the same.)
#[derive(Clone, Debug, PartialEq)]
pub struct Number(N);

#[derive(Clone, Copy, Debug, PartialEq)]
enum N {
    PosInt(u64),
    /// Always below zero.
    NegInt(i64),
    /// Always finite.
    Float(f64),
}

// Floats are finite, so equality is reflexive.
impl Eq for Number {}

impl Number {
    /// `None` for NaN and the infinities, as serde_json.
    pub fn from_f64(f: f64) -> Option<Number> {
        f.is_finite().then_some(Number(N::Float(f)))
    }

    pub fn is_u64(&self) -> bool {
        matches!(self.0, N::PosInt(_))
    }

    pub fn is_i64(&self) -> bool {
        match self.0 {
            N::PosInt(n) => n <= i64::MAX as u64,
            N::NegInt(_) => true,
            N::Float(_) => false,
        }
    }

    pub fn is_f64(&self) -> bool {
        matches!(self.0, N::Float(_))
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self.0 {
            N::PosInt(n) => Some(n),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self.0 {
            N::PosInt(n) => i64::try_from(n).ok(),
            N::NegInt(n) => Some(n),
            N::Float(_) => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        Some(match self.0 {
            N::PosInt(n) => n as f64,
            N::NegInt(n) => n as f64,
            N::Float(f) => f,
        })
    }
}

macro_rules! number_from {
    (unsigned: $($u:ty),*; signed: $($i:ty),*) => {
        $(impl From<$u> for Number {
            fn from(n: $u) -> Self {
                Number(N::PosInt(n as u64))
            }
        })*
        $(impl From<$i> for Number {
            fn from(n: $i) -> Self {
                Number(if n < 0 { N::NegInt(n as i64) } else { N::PosInt(n as u64) })
            }
        })*
        $(impl From<$u> for Value {
            fn from(n: $u) -> Self {
                Value::Number(n.into())
            }
        })*
        $(impl From<$i> for Value {
            fn from(n: $i) -> Self {
                Value::Number(n.into())
            }
        })*
    };
}

number_from!(unsigned: u8, u16, u32, u64, usize; signed: i8, i16, i32, i64, isize);

impl Value {
    /// `self[index]` without the `Null` for a missing one.
    pub fn get<I: ValueIndex>(&self, index: I) -> Option<&Value> {
        index.index_into(self)
    }

    pub fn get_mut<I: ValueIndex>(&mut self, index: I) -> Option<&mut Value> {
        index.index_into_mut(self)
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn is_boolean(&self) -> bool {
        matches!(self, Value::Bool(_))
    }

    pub fn is_number(&self) -> bool {
        matches!(self, Value::Number(_))
    }

    pub fn is_string(&self) -> bool {
        matches!(self, Value::String(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self, Value::Array(_))
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }

    pub fn is_u64(&self) -> bool {
        matches!(self, Value::Number(n) if n.is_u64())
    }

    pub fn is_i64(&self) -> bool {
        matches!(self, Value::Number(n) if n.is_i64())
    }

    pub fn is_f64(&self) -> bool {
        matches!(self, Value::Number(n) if n.is_f64())
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Number(n) => n.as_u64(),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.as_i64(),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Value>> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Map<String, Value>> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Map<String, Value>> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// The value, leaving `Null` in its place.
    pub fn take(&mut self) -> Value {
        std::mem::take(self)
    }

    /// The value at a JSON Pointer (RFC 6901: `""` is the whole value, `/a/0/b~1c` steps
    /// through keys and array indexes), as serde_json resolves one.
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        let mut target = self;
        for token in pointer_tokens(pointer)? {
            target = match target {
                Value::Object(map) => map.get(&token)?,
                Value::Array(items) => items.get(array_index(&token)?)?,
                _ => return None,
            };
        }
        Some(target)
    }

    pub fn pointer_mut(&mut self, pointer: &str) -> Option<&mut Value> {
        let mut target = self;
        for token in pointer_tokens(pointer)? {
            target = match target {
                Value::Object(map) => map.get_mut(&token)?,
                Value::Array(items) => items.get_mut(array_index(&token)?)?,
                _ => return None,
            };
        }
        Some(target)
    }
}

/// A pointer's reference tokens, unescaped; `None` when it is neither empty nor starts with `/`.
fn pointer_tokens(pointer: &str) -> Option<Vec<String>> {
    if pointer.is_empty() {
        return Some(Vec::new());
    }
    let rest = pointer.strip_prefix('/')?;
    let mut tokens = Vec::new();
    for token in rest.split('/') {
        tokens.push(token.replace("~1", "/").replace("~0", "~"));
    }
    Some(tokens)
}

/// An array index token as serde_json reads one: decimal digits without a leading `+` or zero.
fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
        return None;
    }
    token.parse().ok()
}

/// What indexes a [`Value`]: a key (`str`, `String`) for objects, a position (`usize`) for
/// arrays. Sealed in effect: the methods name a hidden type.
pub trait ValueIndex {
    #[doc(hidden)]
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value>;
    #[doc(hidden)]
    fn index_into_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value>;
    /// `value[self] = …`: as serde_json, `Null` becomes an empty object for a key and a
    /// missing key is inserted as `Null`; anything else panics.
    #[doc(hidden)]
    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value;
}

impl ValueIndex for usize {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        match value {
            Value::Array(items) => items.get(*self),
            _ => None,
        }
    }

    fn index_into_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        match value {
            Value::Array(items) => items.get_mut(*self),
            _ => None,
        }
    }

    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        match value {
            Value::Array(items) => match items.get_mut(*self) {
                Some(item) => item,
                None => panic!("JSON array index out of bounds"),
            },
            _ => panic!("cannot index a JSON value that is not an array with a number"),
        }
    }
}

impl ValueIndex for str {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        match value {
            Value::Object(map) => map.get(self),
            _ => None,
        }
    }

    fn index_into_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        match value {
            Value::Object(map) => map.get_mut(self),
            _ => None,
        }
    }

    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        if value.is_null() {
            *value = Value::Object(Map::new());
        }
        match value {
            Value::Object(map) => {
                let at = match map.position(self) {
                    Some(at) => at,
                    None => {
                        map.entries.push((self.to_owned(), Value::Null));
                        map.entries.len() - 1
                    }
                };
                &mut map.entries[at].1
            }
            _ => panic!("cannot index a JSON value that is not an object with a string"),
        }
    }
}

impl ValueIndex for String {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        self.as_str().index_into(value)
    }

    fn index_into_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        self.as_str().index_into_mut(value)
    }

    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        self.as_str().index_or_insert(value)
    }
}

impl<T: ValueIndex + ?Sized> ValueIndex for &T {
    fn index_into<'v>(&self, value: &'v Value) -> Option<&'v Value> {
        (**self).index_into(value)
    }

    fn index_into_mut<'v>(&self, value: &'v mut Value) -> Option<&'v mut Value> {
        (**self).index_into_mut(value)
    }

    fn index_or_insert<'v>(&self, value: &'v mut Value) -> &'v mut Value {
        (**self).index_or_insert(value)
    }
}

static NULL: Value = Value::Null;

impl<I: ValueIndex> Index<I> for Value {
    type Output = Value;

    /// `Null` for a missing key or index, or a value of another kind (as serde_json).
    fn index(&self, index: I) -> &Value {
        index.index_into(self).unwrap_or(&NULL)
    }
}

impl<I: ValueIndex> IndexMut<I> for Value {
    fn index_mut(&mut self, index: I) -> &mut Value {
        index.index_or_insert(self)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(s.to_owned())
    }
}

impl From<f64> for Value {
    /// `Null` for NaN and the infinities, as serde_json.
    fn from(f: f64) -> Self {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

impl From<Number> for Value {
    fn from(n: Number) -> Self {
        Value::Number(n)
    }
}

impl From<Map<String, Value>> for Value {
    fn from(map: Map<String, Value>) -> Self {
        Value::Object(map)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(items: Vec<T>) -> Self {
        let mut array = Vec::with_capacity(items.len());
        for item in items {
            array.push(item.into());
        }
        Value::Array(array)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(option: Option<T>) -> Self {
        match option {
            Some(value) => value.into(),
            None => Value::Null,
        }
    }
}

impl From<()> for Value {
    fn from((): ()) -> Self {
        Value::Null
    }
}

impl PartialEq<str> for Value {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for Value {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

impl PartialEq<String> for Value {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == Some(other.as_str())
    }
}

impl PartialEq<bool> for Value {
    fn eq(&self, other: &bool) -> bool {
        self.as_bool() == Some(*other)
    }
}

macro_rules! partial_eq_number {
    ($($t:ty => $as:ident),*) => {
        $(impl PartialEq<$t> for Value {
            fn eq(&self, other: &$t) -> bool {
                self.$as() == Some((*other).into())
            }
        })*
    };
}

partial_eq_number!(
    u8 => as_u64, u16 => as_u64, u32 => as_u64, u64 => as_u64,
    i8 => as_i64, i16 => as_i64, i32 => as_i64, i64 => as_i64,
    f64 => as_f64
);

impl PartialEq<usize> for Value {
    fn eq(&self, other: &usize) -> bool {
        self.as_u64() == Some(*other as u64)
    }
}

/// A JSON object: its entries in insertion order. The parameters are there so that code
/// written for serde_json's `Map<String, Value>` reads the same; only that one is a map.
#[derive(Clone, Debug)]
pub struct Map<K = String, V = Value> {
    entries: Vec<(K, V)>,
}

impl Default for Map<String, Value> {
    fn default() -> Self {
        Self::new()
    }
}

impl Map<String, Value> {
    pub fn new() -> Self {
        Map {
            entries: Vec::new(),
        }
    }

    pub fn with_capacity(capacity: usize) -> Self {
        Map {
            entries: Vec::with_capacity(capacity),
        }
    }

    fn position<Q>(&self, key: &Q) -> Option<usize>
    where
        String: Borrow<Q>,
        Q: ?Sized + Ord + Eq + Hash,
    {
        self.entries.iter().position(|(k, _)| k.borrow() == key)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub fn contains_key<Q>(&self, key: &Q) -> bool
    where
        String: Borrow<Q>,
        Q: ?Sized + Ord + Eq + Hash,
    {
        self.position(key).is_some()
    }

    pub fn get<Q>(&self, key: &Q) -> Option<&Value>
    where
        String: Borrow<Q>,
        Q: ?Sized + Ord + Eq + Hash,
    {
        let at = self.position(key)?;
        Some(&self.entries[at].1)
    }

    pub fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut Value>
    where
        String: Borrow<Q>,
        Q: ?Sized + Ord + Eq + Hash,
    {
        let at = self.position(key)?;
        Some(&mut self.entries[at].1)
    }

    /// Inserts `value` under `key`; an existing key keeps its position and its old value is
    /// returned.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        match self.position(&key) {
            Some(at) => Some(std::mem::replace(&mut self.entries[at].1, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    /// serde_json's `remove` with `preserve_order`: the last entry moves into the removed
    /// one's place.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<Value>
    where
        String: Borrow<Q>,
        Q: ?Sized + Ord + Eq + Hash,
    {
        self.swap_remove(key)
    }

    pub fn swap_remove<Q>(&mut self, key: &Q) -> Option<Value>
    where
        String: Borrow<Q>,
        Q: ?Sized + Ord + Eq + Hash,
    {
        let at = self.position(key)?;
        Some(self.entries.swap_remove(at).1)
    }

    /// Removes `key`, the entries after it moving up one place (order kept).
    pub fn shift_remove<Q>(&mut self, key: &Q) -> Option<Value>
    where
        String: Borrow<Q>,
        Q: ?Sized + Ord + Eq + Hash,
    {
        let at = self.position(key)?;
        Some(self.entries.remove(at).1)
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&String, &mut Value) -> bool) {
        self.entries.retain_mut(|(k, v)| keep(k, v));
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter(self.entries.iter())
    }

    pub fn iter_mut(&mut self) -> IterMut<'_> {
        IterMut(self.entries.iter_mut())
    }

    pub fn keys(&self) -> Keys<'_> {
        Keys(self.entries.iter())
    }

    pub fn values(&self) -> Values<'_> {
        Values(self.entries.iter())
    }

    pub fn values_mut(&mut self) -> ValuesMut<'_> {
        ValuesMut(self.entries.iter_mut())
    }

    /// Sorts the entries by key (serde_json's `sort_keys` with `preserve_order`).
    pub fn sort_keys(&mut self) {
        let order = sorted_positions(&self.entries);
        let mut unsorted = std::mem::take(&mut self.entries);
        self.entries.reserve_exact(unsorted.len());
        for at in order {
            self.entries.push(std::mem::take(&mut unsorted[at]));
        }
    }

    /// The map of `entries` as successive `insert`s would build it (a later duplicate key
    /// replaces the value in the earlier key's place), in O(n log n) for many entries: what
    /// the parser and `FromIterator` build objects with, so that a hostile object of 100,000
    /// keys is not 5·10⁹ key comparisons.
    pub(crate) fn from_entries(mut entries: Vec<(String, Value)>) -> Self {
        if entries.len() <= SMALL {
            let mut map = Map::with_capacity(entries.len());
            for (key, value) in entries {
                map.insert(key, value);
            }
            return map;
        }
        // Positions sorted by (key, position): each run of one key starts with its first
        // occurrence, which takes the run's last value; the rest of the run goes.
        let order = sorted_positions(&entries);
        let mut keep = vec![true; entries.len()];
        let mut run = 0;
        while run < order.len() {
            let first = order[run];
            let mut end = run + 1;
            while end < order.len() && entries[order[end]].0 == entries[first].0 {
                keep[order[end]] = false;
                end += 1;
            }
            let last = order[end - 1];
            if last != first {
                let value = std::mem::take(&mut entries[last].1);
                entries[first].1 = value;
            }
            run = end;
        }
        let mut at = 0;
        entries.retain(|_| {
            at += 1;
            keep[at - 1]
        });
        Map { entries }
    }
}

/// Up to this many entries a linear scan per key is cheaper than sorting an index list.
const SMALL: usize = 16;

/// The positions of `entries` in key order, ties by position (`sort_indices` breaks them so):
/// each run of one key starts with its first occurrence.
fn sorted_positions(entries: &[(String, Value)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    crate::sort::sort_indices(&mut order, &mut |a, b| entries[a].0.cmp(&entries[b].0));
    order
}

impl PartialEq for Map<String, Value> {
    /// Equal when they hold the same keys with equal values, in any order (as `IndexMap`).
    fn eq(&self, other: &Self) -> bool {
        if self.len() != other.len() {
            return false;
        }
        // The common case: the same keys in the same order.
        if self
            .entries
            .iter()
            .zip(&other.entries)
            .all(|(a, b)| a.0 == b.0)
        {
            return self
                .entries
                .iter()
                .zip(&other.entries)
                .all(|(a, b)| a.1 == b.1);
        }
        if self.len() <= SMALL {
            return self.iter().all(|(k, v)| other.get(k) == Some(v));
        }
        let mine = sorted_positions(&self.entries);
        let theirs = sorted_positions(&other.entries);
        mine.iter()
            .zip(&theirs)
            .all(|(&a, &b)| self.entries[a] == other.entries[b])
    }
}

impl Eq for Map<String, Value> {}

impl<Q> Index<&Q> for Map<String, Value>
where
    String: Borrow<Q>,
    Q: ?Sized + Ord + Eq + Hash,
{
    type Output = Value;

    /// Panics on a missing key, as serde_json's map does.
    fn index(&self, key: &Q) -> &Value {
        match self.get(key) {
            Some(value) => value,
            None => panic!("no entry found for key"),
        }
    }
}

impl FromIterator<(String, Value)> for Map<String, Value> {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(entries: I) -> Self {
        Map::from_entries(entries.into_iter().collect())
    }
}

impl Extend<(String, Value)> for Map<String, Value> {
    fn extend<I: IntoIterator<Item = (String, Value)>>(&mut self, entries: I) {
        for (key, value) in entries {
            self.insert(key, value);
        }
    }
}

macro_rules! entry_iter {
    ($name:ident, $inner:ty, $item:ty, |$entry:ident| $map:expr) => {
        pub struct $name<'a>($inner);

        impl<'a> Iterator for $name<'a> {
            type Item = $item;

            fn next(&mut self) -> Option<$item> {
                let $entry = self.0.next()?;
                Some($map)
            }

            fn size_hint(&self) -> (usize, Option<usize>) {
                self.0.size_hint()
            }
        }

        impl<'a> DoubleEndedIterator for $name<'a> {
            fn next_back(&mut self) -> Option<$item> {
                let $entry = self.0.next_back()?;
                Some($map)
            }
        }

        impl<'a> ExactSizeIterator for $name<'a> {}
    };
}

entry_iter!(
    Iter,
    std::slice::Iter<'a, (String, Value)>,
    (&'a String, &'a Value),
    |e| (&e.0, &e.1)
);
entry_iter!(
    IterMut,
    std::slice::IterMut<'a, (String, Value)>,
    (&'a String, &'a mut Value),
    |e| (&e.0, &mut e.1)
);
entry_iter!(
    Keys,
    std::slice::Iter<'a, (String, Value)>,
    &'a String,
    |e| &e.0
);
entry_iter!(
    Values,
    std::slice::Iter<'a, (String, Value)>,
    &'a Value,
    |e| &e.1
);
entry_iter!(
    ValuesMut,
    std::slice::IterMut<'a, (String, Value)>,
    &'a mut Value,
    |e| &mut e.1
);

/// The entries by value, in order.
pub struct IntoIter(std::vec::IntoIter<(String, Value)>);

impl Iterator for IntoIter {
    type Item = (String, Value);

    fn next(&mut self) -> Option<(String, Value)> {
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<(String, Value)> {
        self.0.next_back()
    }
}

impl ExactSizeIterator for IntoIter {}

impl IntoIterator for Map<String, Value> {
    type Item = (String, Value);
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        IntoIter(self.entries.into_iter())
    }
}

impl<'a> IntoIterator for &'a Map<String, Value> {
    type Item = (&'a String, &'a Value);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Map<String, Value> {
    type Item = (&'a String, &'a mut Value);
    type IntoIter = IterMut<'a>;

    fn into_iter(self) -> IterMut<'a> {
        self.iter_mut()
    }
}

mod serde_impls {
    //! serde for the protocol types' derives (the server and the tests use them; the browser
    //! build writes and reads JSON with `json::{WriteJson, parse}` and links none of this).

    use super::{Map, Number, Value, N};
    use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde::ser::{Serialize, SerializeMap, Serializer};
    use std::fmt;

    impl Serialize for Number {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            match self.0 {
                N::PosInt(n) => serializer.serialize_u64(n),
                N::NegInt(n) => serializer.serialize_i64(n),
                N::Float(f) => serializer.serialize_f64(f),
            }
        }
    }

    impl Serialize for Value {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            match self {
                Value::Null => serializer.serialize_unit(),
                Value::Bool(b) => serializer.serialize_bool(*b),
                Value::Number(n) => n.serialize(serializer),
                Value::String(s) => serializer.serialize_str(s),
                Value::Array(items) => serializer.collect_seq(items),
                Value::Object(map) => map.serialize(serializer),
            }
        }
    }

    impl Serialize for Map<String, Value> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(self.len()))?;
            for (key, value) in self {
                map.serialize_entry(key, value)?;
            }
            map.end()
        }
    }

    struct ValueVisitor;

    impl<'de> Visitor<'de> for ValueVisitor {
        type Value = Value;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("any valid JSON value")
        }

        fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
            Ok(Value::Bool(b))
        }

        fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
            Ok(n.into())
        }

        fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
            Ok(n.into())
        }

        fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
            Ok(f.into())
        }

        fn visit_str<E>(self, s: &str) -> Result<Value, E> {
            Ok(s.into())
        }

        fn visit_string<E>(self, s: String) -> Result<Value, E> {
            Ok(s.into())
        }

        fn visit_none<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }

        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
            Deserialize::deserialize(deserializer)
        }

        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
            Ok(Value::Array(items))
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
            MapVisitor.visit_map(map).map(Value::Object)
        }
    }

    struct MapVisitor;

    impl<'de> Visitor<'de> for MapVisitor {
        type Value = Map<String, Value>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a JSON object")
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Map::new())
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut entries = Vec::new();
            while let Some(entry) = map.next_entry()? {
                entries.push(entry);
            }
            Ok(Map::from_entries(entries))
        }
    }

    impl<'de> Deserialize<'de> for Value {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
            deserializer.deserialize_any(ValueVisitor)
        }
    }

    impl<'de> Deserialize<'de> for Map<String, Value> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_map(MapVisitor)
        }
    }

    impl<'de> Deserialize<'de> for Number {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Number, D::Error> {
            match Value::deserialize(deserializer)? {
                Value::Number(n) => Ok(n),
                _ => Err(de::Error::custom("expected a JSON number")),
            }
        }
    }
}

#[cfg(any(test, feature = "test-support"))]
mod serde_json_conversions {
    //! Both ways between serde_json's values and these, for tests (serde_json is their oracle).

    use super::{Map, Number, Value, N};

    impl From<serde_json::Number> for Number {
        fn from(n: serde_json::Number) -> Self {
            if let Some(u) = n.as_u64() {
                Number(N::PosInt(u))
            } else if let Some(i) = n.as_i64() {
                Number(N::NegInt(i))
            } else {
                // serde_json's numbers are finite.
                Number(N::Float(n.as_f64().unwrap_or_default()))
            }
        }
    }

    impl From<Number> for serde_json::Number {
        fn from(n: Number) -> Self {
            match n.0 {
                N::PosInt(u) => u.into(),
                N::NegInt(i) => i.into(),
                N::Float(f) => serde_json::Number::from_f64(f).expect("finite"),
            }
        }
    }

    impl From<serde_json::Value> for Value {
        fn from(value: serde_json::Value) -> Self {
            match value {
                serde_json::Value::Null => Value::Null,
                serde_json::Value::Bool(b) => Value::Bool(b),
                serde_json::Value::Number(n) => Value::Number(n.into()),
                serde_json::Value::String(s) => Value::String(s),
                serde_json::Value::Array(items) => {
                    Value::Array(items.into_iter().map(Value::from).collect())
                }
                serde_json::Value::Object(map) => Value::Object(map.into()),
            }
        }
    }

    impl From<serde_json::Map<String, serde_json::Value>> for Map<String, Value> {
        fn from(map: serde_json::Map<String, serde_json::Value>) -> Self {
            // serde_json's keys are unique: pushed in its order, not re-checked.
            Map {
                entries: map.into_iter().map(|(k, v)| (k, v.into())).collect(),
            }
        }
    }

    impl From<Value> for serde_json::Value {
        fn from(value: Value) -> Self {
            match value {
                Value::Null => serde_json::Value::Null,
                Value::Bool(b) => serde_json::Value::Bool(b),
                Value::Number(n) => serde_json::Value::Number(n.into()),
                Value::String(s) => serde_json::Value::String(s),
                Value::Array(items) => {
                    serde_json::Value::Array(items.into_iter().map(Into::into).collect())
                }
                Value::Object(map) => serde_json::Value::Object(map.into()),
            }
        }
    }

    impl From<Map<String, Value>> for serde_json::Map<String, serde_json::Value> {
        fn from(map: Map<String, Value>) -> Self {
            map.into_iter().map(|(k, v)| (k, v.into())).collect()
        }
    }
}

#[cfg(test)]
mod tests;
