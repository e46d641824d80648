//! Where a JSON Pointer's value is in a file's text, so that an error found on the parsed
//! value (a schema violation) can name its line. The text has already parsed: these walkers
//! only find positions, and give up (`None`) on anything unexpected.

use super::spec::Format;

/// The byte offset of the value at `pointer` (`/capabilities/0/id`), or of its closest
/// ancestor that exists.
pub(crate) fn locate(text: &str, format: Format, pointer: &str) -> Option<usize> {
    let segments: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    match format {
        Format::Json => json_offset(text, &segments),
        Format::Toml => toml_offset(text, &segments),
    }
}

fn toml_offset(text: &str, segments: &[String]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).ok()?;
    let mut at = root.span().start;
    let mut table = Some(root.get_ref());
    let mut array: Option<&[_]> = None;
    for segment in segments {
        let value = if let Some(t) = table {
            t.iter()
                .find(|(k, _)| k.get_ref() == segment)
                .map(|(_, v)| v)
        } else {
            array.and_then(|a| segment.parse::<usize>().ok().and_then(|i| a.get(i)))
        };
        let Some(value) = value else { break };
        at = value.span().start;
        (table, array) = match value.get_ref() {
            DeValue::Table(t) => (Some(t), None),
            DeValue::Array(a) => (None, Some(&a[..])),
            _ => (None, None),
        };
    }
    Some(at)
}

struct Scan<'a> {
    text: &'a str,
    at: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn blank(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.blank();
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Skips a string starting at its quote; returns its decoded text.
    fn string(&mut self) -> Option<String> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek()? {
                b'\\' => self.at += 2,
                b'"' => break,
                _ => self.at += 1,
            }
        }
        self.at += 1;
        serde_json::from_str(&self.text[start..self.at]).ok()
    }

    fn value(&mut self) -> Option<()> {
        self.blank();
        match self.peek()? {
            b'"' => self.string().map(drop),
            open @ (b'{' | b'[') => {
                let close = if open == b'{' { b'}' } else { b']' };
                self.at += 1;
                loop {
                    self.blank();
                    if self.peek()? == close {
                        self.at += 1;
                        return Some(());
                    }
                    if open == b'{' {
                        self.blank();
                        self.string()?;
                        self.eat(b':')?;
                    }
                    self.value()?;
                    if self.eat(b',').is_none() {
                        self.eat(close)?;
                        return Some(());
                    }
                }
            }
            _ => {
                while self
                    .peek()
                    .is_some_and(|b| !b",}]".contains(&b) && !b.is_ascii_whitespace())
                {
                    self.at += 1;
                }
                Some(())
            }
        }
    }

    /// Moves to the value under `segment` of the object or array here.
    fn enter(&mut self, segment: &str) -> Option<()> {
        self.blank();
        match self.peek()? {
            b'{' => {
                self.at += 1;
                loop {
                    self.blank();
                    let key = self.string()?;
                    self.eat(b':')?;
                    self.blank();
                    if key == segment {
                        return Some(());
                    }
                    self.value()?;
                    self.eat(b',')?;
                }
            }
            b'[' => {
                self.at += 1;
                for _ in 0..segment.parse::<usize>().ok()? {
                    self.value()?;
                    self.eat(b',')?;
                }
                self.blank();
                Some(())
            }
            _ => None,
        }
    }
}

fn json_offset(text: &str, segments: &[String]) -> Option<usize> {
    let mut scan = Scan { text, at: 0 };
    scan.blank();
    let mut found = scan.at;
    for segment in segments {
        if scan.enter(segment).is_none() {
            break;
        }
        found = scan.at;
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::appfiles::text::line_column;

    #[test]
    fn pointers_find_their_lines_in_json_and_toml() {
        let json =
            "{\n  \"a\": [1, {\"b\\\"x\": \"s,}]\"},\n  {\"c\": [true, null]}],\n  \"d/e\": 3\n}";
        let at = |p: &str| line_column(json, locate(json, Format::Json, p).unwrap());
        assert_eq!(at(""), (1, 1));
        assert_eq!(at("/a"), (2, 8));
        assert_eq!(at("/a/1/b\"x"), (2, 21));
        assert_eq!(at("/a/2/c/1"), (3, 16));
        assert_eq!(at("/d~1e"), (4, 10));
        assert_eq!(at("/a/2/missing"), (3, 3), "the closest ancestor");
        let toml = "[[caps]]\nid = \"a\"\n\n[[caps]]\nid = \"b\"\nhttp = { url = \"u\" }\n";
        let at = |p: &str| line_column(toml, locate(toml, Format::Toml, p).unwrap());
        assert_eq!(at("/caps/1/id").0, 5);
        assert_eq!(at("/caps/1/http/url").0, 6);
        assert_eq!(at("/caps/0/id").0, 2);
    }

    fn values() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            ".{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::from),
                proptest::collection::btree_map(".{0,6}", inner, 0..5)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn pointers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
        out.push(at.clone());
        let escape = |k: &str| k.replace('~', "~0").replace('/', "~1");
        match v {
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    pointers(x, format!("{at}/{i}"), out);
                }
            }
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    pointers(x, format!("{at}/{}", escape(k)), out);
                }
            }
            _ => {}
        }
    }

    proptest::proptest! {
        /// Every pointer of any JSON document, compact or pretty, finds the text of its value.
        #[test]
        fn every_pointer_finds_its_value(v in values(), pretty in proptest::bool::ANY) {
            let text = if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                serde_json::to_string(&v).unwrap()
            };
            let mut all = Vec::new();
            pointers(&v, String::new(), &mut all);
            for p in all {
                let offset = locate(&text, Format::Json, &p).unwrap();
                let found = serde_json::Deserializer::from_str(&text[offset..])
                    .into_iter::<serde_json::Value>()
                    .next()
                    .unwrap()
                    .unwrap();
                proptest::prop_assert_eq!(Some(&found), v.pointer(&p), "{}", p);
            }
        }
    }
}
