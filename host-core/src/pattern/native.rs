//! The native matcher: a small backtracking engine for the ECMAScript regular-expression
//! subset JSON Schema `pattern` needs (literals, `.`, classes with ranges and `\d \w \s` and
//! their negations, groups, alternation, greedy and lazy quantifiers, `^`/`$` anchors), so the
//! core's validation is tested natively with the same semantics the browser's `RegExp` has on
//! that subset. Anything outside it (look-around, back-references, word boundaries, Unicode
//! properties) is refused at compile time rather than misjudged.

use std::cell::Cell;

/// Backtracking steps one match may take before it is abandoned as a non-match.
const STEP_BUDGET: u32 = 200_000;

#[derive(Debug, Clone, PartialEq)]
enum ClassItem {
    Range(char, char),
    Digit(bool),
    Word(bool),
    Space(bool),
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Char(char),
    Any,
    Class {
        negated: bool,
        items: Vec<ClassItem>,
    },
    Start,
    End,
    Group(Vec<Vec<Node>>),
    Repeat {
        node: Box<Node>,
        min: u32,
        max: Option<u32>,
    },
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Pattern {
    alternatives: Vec<Vec<Node>>,
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    source: &'a str,
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

impl ClassItem {
    fn matches(&self, c: char) -> bool {
        match *self {
            Self::Range(lo, hi) => lo <= c && c <= hi,
            Self::Digit(negated) => c.is_ascii_digit() != negated,
            Self::Word(negated) => is_word(c) != negated,
            Self::Space(negated) => is_space(c) != negated,
        }
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn fail<T>(&self, what: &str) -> Result<T, String> {
        Err(format!(
            "pattern \"{}\": {what} is not supported",
            self.source
        ))
    }

    fn alternatives(&mut self) -> Result<Vec<Vec<Node>>, String> {
        let mut alternatives = vec![self.sequence()?];
        while self.eat('|') {
            alternatives.push(self.sequence()?);
        }
        Ok(alternatives)
    }

    fn sequence(&mut self) -> Result<Vec<Node>, String> {
        let mut nodes = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            nodes.push(self.quantified(atom)?);
        }
        Ok(nodes)
    }

    fn number(&mut self) -> Option<u32> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        self.chars[start..self.pos]
            .iter()
            .collect::<String>()
            .parse()
            .ok()
    }

    /// `{n}`, `{n,}` or `{n,m}` at the cursor; the cursor is restored when it is not one.
    fn braces(&mut self) -> Option<(u32, Option<u32>)> {
        let start = self.pos;
        let parsed = (|| {
            if !self.eat('{') {
                return None;
            }
            let min = self.number()?;
            let max = if self.eat(',') {
                if self.peek() == Some('}') {
                    None
                } else {
                    Some(self.number()?)
                }
            } else {
                Some(min)
            };
            self.eat('}').then_some((min, max))
        })();
        if parsed.is_none() {
            self.pos = start;
        }
        parsed
    }

    fn quantified(&mut self, atom: Node) -> Result<Node, String> {
        let (min, max) = match self.peek() {
            Some('{') => match self.braces() {
                Some(bounds) => bounds,
                None => return Ok(atom),
            },
            Some(c @ ('*' | '+' | '?')) => {
                self.pos += 1;
                match c {
                    '*' => (0, None),
                    '+' => (1, None),
                    _ => (0, Some(1)),
                }
            }
            _ => return Ok(atom),
        };
        if matches!(atom, Node::Start | Node::End) {
            return self.fail("a quantified anchor");
        }
        if max.is_some_and(|max| max < min) {
            return self.fail("a quantifier range out of order");
        }
        // Laziness changes which match is found, never whether one exists.
        self.eat('?');
        Ok(Node::Repeat {
            node: Box::new(atom),
            min,
            max,
        })
    }

    fn atom(&mut self) -> Result<Node, String> {
        let c = self.peek().unwrap_or_default();
        self.pos += 1;
        match c {
            '(' => {
                if self.eat('?') && !self.eat(':') {
                    return self.fail("look-around or a named group");
                }
                let group = self.alternatives()?;
                if !self.eat(')') {
                    return self.fail("an unclosed group");
                }
                Ok(Node::Group(group))
            }
            '[' => self.class(),
            '.' => Ok(Node::Any),
            '^' => Ok(Node::Start),
            '$' => Ok(Node::End),
            '*' | '+' | '?' => self.fail("a quantifier with nothing to repeat"),
            '{' => {
                self.pos -= 1;
                if self.braces().is_some() {
                    return self.fail("a quantifier with nothing to repeat");
                }
                self.pos += 1;
                Ok(Node::Char('{'))
            }
            '\\' => match self.escape()? {
                ClassItem::Range(lo, _) => Ok(Node::Char(lo)),
                item => Ok(Node::Class {
                    negated: false,
                    items: vec![item],
                }),
            },
            other => Ok(Node::Char(other)),
        }
    }

    fn hex(&mut self, digits: usize) -> Result<char, String> {
        let text: String = self.chars.iter().skip(self.pos).take(digits).collect();
        let parsed = (text.len() == digits)
            .then(|| u32::from_str_radix(&text, 16).ok().and_then(char::from_u32))
            .flatten();
        match parsed {
            Some(c) => {
                self.pos += digits;
                Ok(c)
            }
            None => self.fail("a malformed hex escape"),
        }
    }

    /// The escape after a backslash, as a class item (a single char is a one-char range).
    fn escape(&mut self) -> Result<ClassItem, String> {
        let Some(c) = self.peek() else {
            return self.fail("a trailing backslash");
        };
        self.pos += 1;
        let single = |c: char| Ok(ClassItem::Range(c, c));
        match c {
            'd' => Ok(ClassItem::Digit(false)),
            'D' => Ok(ClassItem::Digit(true)),
            'w' => Ok(ClassItem::Word(false)),
            'W' => Ok(ClassItem::Word(true)),
            's' => Ok(ClassItem::Space(false)),
            'S' => Ok(ClassItem::Space(true)),
            'n' => single('\n'),
            'r' => single('\r'),
            't' => single('\t'),
            'f' => single('\u{c}'),
            'v' => single('\u{b}'),
            '0' => single('\0'),
            'x' => single(self.hex(2)?),
            'u' => single(self.hex(4)?),
            'b' | 'B' => self.fail("a word boundary"),
            'p' | 'P' | 'k' | 'c' => self.fail("this escape"),
            '1'..='9' => self.fail("a back-reference"),
            c if c.is_ascii_alphanumeric() => self.fail("this escape"),
            c => single(c),
        }
    }

    fn class(&mut self) -> Result<Node, String> {
        let negated = self.eat('^');
        let mut items = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return self.fail("an unclosed class");
            };
            self.pos += 1;
            if c == ']' {
                return Ok(Node::Class { negated, items });
            }
            let item = if c == '\\' {
                self.escape()?
            } else {
                ClassItem::Range(c, c)
            };
            let is_range_start = self.peek() == Some('-')
                && self
                    .chars
                    .get(self.pos + 1)
                    .is_some_and(|&next| next != ']');
            match item {
                ClassItem::Range(lo, _) if is_range_start => {
                    self.pos += 1;
                    let hi_char = self.peek().unwrap_or_default();
                    self.pos += 1;
                    let hi = if hi_char == '\\' {
                        self.escape()?
                    } else {
                        ClassItem::Range(hi_char, hi_char)
                    };
                    match hi {
                        ClassItem::Range(hi, _) if hi >= lo => items.push(ClassItem::Range(lo, hi)),
                        _ => return self.fail("a class range out of order"),
                    }
                }
                item => items.push(item),
            }
        }
    }
}

struct Matcher<'t> {
    text: &'t [char],
    steps: Cell<u32>,
}

type Continuation<'k> = &'k mut dyn FnMut(usize) -> bool;

impl Matcher<'_> {
    fn spend(&self) -> bool {
        let steps = self.steps.get() + 1;
        self.steps.set(steps);
        steps <= STEP_BUDGET
    }

    fn alternatives(&self, alternatives: &[Vec<Node>], pos: usize, k: Continuation<'_>) -> bool {
        alternatives
            .iter()
            .any(|sequence| self.sequence(sequence, pos, k))
    }

    fn sequence(&self, nodes: &[Node], pos: usize, k: Continuation<'_>) -> bool {
        match nodes.split_first() {
            None => k(pos),
            Some((first, rest)) => self.node(first, pos, &mut |next| self.sequence(rest, next, k)),
        }
    }

    fn single(&self, pos: usize, k: Continuation<'_>, test: impl Fn(char) -> bool) -> bool {
        self.text.get(pos).is_some_and(|&c| test(c)) && k(pos + 1)
    }

    fn node(&self, node: &Node, pos: usize, k: Continuation<'_>) -> bool {
        if !self.spend() {
            return false;
        }
        match node {
            Node::Char(expected) => self.single(pos, k, |c| c == *expected),
            Node::Any => self.single(pos, k, |c| {
                !matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
            }),
            Node::Class { negated, items } => self.single(pos, k, |c| {
                items.iter().any(|item| item.matches(c)) != *negated
            }),
            Node::Start => pos == 0 && k(pos),
            Node::End => pos == self.text.len() && k(pos),
            Node::Group(alternatives) => self.alternatives(alternatives, pos, k),
            Node::Repeat { node, min, max } => self.repeat(node, *min, *max, 0, pos, k),
        }
    }

    fn repeat(
        &self,
        node: &Node,
        min: u32,
        max: Option<u32>,
        count: u32,
        pos: usize,
        k: Continuation<'_>,
    ) -> bool {
        if max.is_none_or(|max| count < max) {
            // An iteration that consumes nothing past the minimum would loop forever.
            let mut more = |next: usize| {
                (next != pos || count < min) && self.repeat(node, min, max, count + 1, next, k)
            };
            if self.node(node, pos, &mut more) {
                return true;
            }
        }
        count >= min && k(pos)
    }
}

impl Pattern {
    /// Compiles a pattern; the error names the unsupported construct.
    pub fn compile(source: &str) -> Result<Self, String> {
        let mut parser = Parser {
            chars: source.chars().collect(),
            pos: 0,
            source,
        };
        let alternatives = parser.alternatives()?;
        if parser.pos != parser.chars.len() {
            return parser.fail("an unmatched `)`");
        }
        Ok(Self { alternatives })
    }

    /// Whether the pattern matches anywhere in `text` (JSON Schema semantics: unanchored).
    pub fn is_match(&self, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let matcher = Matcher {
            text: &chars,
            steps: Cell::new(0),
        };
        (0..=chars.len())
            .any(|start| matcher.alternatives(&self.alternatives, start, &mut |_| true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, text: &str) -> bool {
        Pattern::compile(pattern).unwrap().is_match(text)
    }

    #[test]
    fn the_demo_date_pattern() {
        let date = r"^\d{4}-\d{2}-\d{2}$";
        assert!(matches(date, "2026-11-29"));
        assert!(!matches(date, "2026-1-29"));
        assert!(!matches(date, "x2026-11-29"));
        assert!(!matches(date, "2026-11-290"));
    }

    #[test]
    fn search_is_unanchored_without_anchors() {
        assert!(matches("ab", "xxabyy"));
        assert!(!matches("ab", "a b"));
        assert!(matches("", "anything"));
    }

    #[test]
    fn classes_ranges_and_negation() {
        assert!(matches("^[a-z0-9-]+$", "inv-42"));
        assert!(!matches("^[a-z0-9-]+$", "Inv"));
        assert!(matches("^[^@]+@[^@]+$", "a@b"));
        assert!(!matches("^[^@]+@[^@]+$", "a@@b"));
        assert!(matches(r"^[\w.]+$", "a_b.c"));
        assert!(matches("^[-a]$", "-"));
        assert!(matches("^[a-]$", "-"));
        assert!(!matches("^[]$", "a"));
        assert!(matches(r"^\S+\s\D$", "ab x"));
    }

    #[test]
    fn groups_alternation_and_quantifiers() {
        assert!(matches("^(asc|desc)$", "desc"));
        assert!(!matches("^(asc|desc)$", "ascdesc"));
        assert!(matches("^(?:ab)+$", "ababab"));
        assert!(!matches("^(?:ab)+$", "aba"));
        assert!(matches("^a{2,3}$", "aaa"));
        assert!(!matches("^a{2,3}$", "aaaa"));
        assert!(matches("^a{2,}$", "aaaaa"));
        assert!(matches("^colou?r$", "color"));
        assert!(matches("^a.*?b$", "axxb"));
        assert!(matches("^(a*)*$", "aaaa"));
        assert!(matches("^x{$", "x{"));
        assert!(matches(r"^\u0041\x42\.$", "AB."));
    }

    #[test]
    fn catastrophic_patterns_stop_within_the_budget() {
        let text = format!("{}!", "a".repeat(40));
        assert!(!matches("^(a|a)*$", &text));
    }

    #[test]
    fn unsupported_constructs_are_refused() {
        for pattern in [
            r"(?=a)", r"(?<n>a)", r"\bword", r"(a)\1", r"\p{L}", "a**", "(a", "a)", "[a", "[z-a]",
            "a{3,1}", "^*",
        ] {
            assert!(Pattern::compile(pattern).is_err(), "{pattern}");
        }
    }
}
