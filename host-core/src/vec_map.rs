//! A map over a vector, in insertion order. The host's maps are small (capabilities on one
//! screen, calls in one step, at most 200 remembered invocations), and a linear scan costs
//! far less wasm than a hash table per key/value type.

use std::borrow::Borrow;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VecMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<K: PartialEq, V> VecMap<K, V> {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn position<Q>(&self, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        self.0.iter().position(|(k, _)| k.borrow() == key)
    }

    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        self.position(key).map(|i| &self.0[i].1)
    }

    pub(crate) fn get_mut<Q>(&mut self, key: &Q) -> Option<&mut V>
    where
        K: Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        self.position(key).map(|i| &mut self.0[i].1)
    }

    /// Inserts or replaces in place (an existing key keeps its position).
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.position(&key) {
            Some(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            None => {
                self.0.push((key, value));
                None
            }
        }
    }

    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        self.position(key).map(|i| self.0.remove(i).1)
    }

    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&K, &V) -> bool) {
        self.0.retain(|(k, v)| keep(k, v));
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Removes the first entry, in insertion order, that `pick` accepts.
    pub(crate) fn remove_first(&mut self, mut pick: impl FnMut(&K, &V) -> bool) -> Option<(K, V)> {
        let index = self.0.iter().position(|(k, v)| pick(k, v))?;
        Some(self.0.remove(index))
    }
}

impl<K: PartialEq, V> FromIterator<(K, V)> for VecMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut map = Self::new();
        for (k, v) in entries {
            map.insert(k, v);
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_like_a_map_in_insertion_order() {
        let mut map: VecMap<String, u32> = VecMap::new();
        assert_eq!(map.insert("b".into(), 1), None);
        assert_eq!(map.insert("a".into(), 2), None);
        assert_eq!(map.insert("b".into(), 3), Some(1));
        assert_eq!(map.get("b"), Some(&3));
        assert_eq!(map.get("c"), None);
        *map.get_mut("a").unwrap() += 1;
        assert_eq!(map.0, [("b".to_string(), 3), ("a".to_string(), 3)]);
        assert_eq!(map.remove_first(|_, v| *v == 3), Some(("b".into(), 3)));
        map.retain(|k, _| k != "a");
        assert_eq!(map.len(), 0);
        assert_eq!(map.remove("a"), None);
        let collected: VecMap<&str, i32> = [("x", 1), ("x", 2)].into_iter().collect();
        assert_eq!(collected.len(), 1);
    }
}
