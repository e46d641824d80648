//! The audit trail as a hash chain: what a stored record is, its digest, and the check
//! `host-server audit verify` runs over an export (JSON Lines).
//!
//! A record is `{"kind":"record","seq","tenant","at","prev","entry","digest"}`: `seq` counts
//! 1, 2, 3, … per tenant with no gap, `prev` is the digest of the tenant's record `seq - 1`
//! ([`GENESIS`] before the first), `entry` the audit entry as `GET /api/audit` shows it, and
//! `digest` the lower-case hex SHA-256 of the RFC 8785 canonical JSON
//! ([`canonical_json`](crate::approval::canonical_json)) of the record without `digest`.
//!
//! An export may begin with one checkpoint line, `{"kind":"checkpoint","tenant","seq","digest"}`:
//! the seq and digest of the record the next line follows (the genesis checkpoint is seq 0).
//! Without one, the first record's `prev` is trusted as the starting point.

use std::io::BufRead;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The `prev` of a tenant's first record: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// `kind` of a chained record.
pub const RECORD: &str = "record";
/// `kind` of the line that says where a chain (or an export of part of one) begins.
pub const CHECKPOINT: &str = "checkpoint";

/// A record before its digest: everything the digest covers.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainFields<'a> {
    pub seq: i64,
    pub tenant: &'a str,
    pub at: &'a str,
    pub prev: &'a str,
    pub entry: &'a Value,
}

impl ChainFields<'_> {
    /// The record as an object, without `digest`.
    fn object(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("kind".into(), RECORD.into());
        map.insert("seq".into(), self.seq.into());
        map.insert("tenant".into(), self.tenant.into());
        map.insert("at".into(), self.at.into());
        map.insert("prev".into(), self.prev.into());
        map.insert("entry".into(), self.entry.clone());
        map
    }

    /// The record's digest.
    pub fn digest(&self) -> String {
        digest_of(&Value::Object(self.object()))
    }

    /// The record as one export line's value, `digest` included.
    pub fn record(&self, digest: &str) -> Value {
        let mut map = self.object();
        map.insert("digest".into(), digest.into());
        Value::Object(map)
    }
}

/// The hex SHA-256 of `value`'s canonical JSON.
fn digest_of(value: &Value) -> String {
    hex::encode(Sha256::digest(
        crate::approval::canonical_json(value).as_bytes(),
    ))
}

/// A checkpoint line: the record numbered `seq` had `digest`.
pub fn checkpoint(tenant: &str, seq: i64, digest: &str) -> Value {
    let mut map = Map::new();
    map.insert("kind".into(), CHECKPOINT.into());
    map.insert("tenant".into(), tenant.into());
    map.insert("seq".into(), seq.into());
    map.insert("digest".into(), digest.into());
    Value::Object(map)
}

/// A chain that holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub tenant: String,
    pub records: u64,
    pub first: i64,
    pub last: i64,
    /// The seq of the checkpoint the file began with, if it did.
    pub checkpoint: Option<i64>,
}

impl std::fmt::Display for Verified {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ok: {} records of tenant {}, seq {}..{}, ",
            self.records, self.tenant, self.first, self.last
        )?;
        match self.checkpoint {
            Some(0) => f.write_str("from genesis"),
            Some(seq) => write!(f, "after checkpoint seq {seq}"),
            None => f.write_str("first prev trusted"),
        }
    }
}

/// Why a chain does not hold, and the seq of the first record at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Broken {
    /// A line is not a record or checkpoint (or the file could not be read); `seq` is the one
    /// expected there, when known.
    #[error("line {line} (seq {}): {reason}", seq.map_or("?".to_owned(), |s| s.to_string()))]
    Unreadable {
        line: u64,
        seq: Option<i64>,
        reason: String,
    },
    /// The record's digest is not the digest of its fields: it was edited.
    #[error("seq {seq}: the record's digest does not match its content (edited)")]
    Tampered { seq: i64 },
    /// The record `seq` is not where it should be: deleted, or lines reordered.
    #[error("seq {seq}: missing here (found seq {found}: a record deleted or reordered)")]
    Missing { seq: i64, found: i64 },
    /// The record's `prev` is not the digest of the record before it.
    #[error("seq {seq}: prev is not the digest of the record before it")]
    Unlinked { seq: i64 },
    /// A record of another tenant in one tenant's chain.
    #[error("seq {seq}: tenant {found} in the chain of tenant {tenant}")]
    Tenant {
        seq: i64,
        tenant: String,
        found: String,
    },
    /// No record at all.
    #[error("the start: the file has no records")]
    Empty,
}

impl Broken {
    /// The seq of the first broken or missing record, when one is known.
    pub fn seq(&self) -> Option<i64> {
        match self {
            Self::Unreadable { seq, .. } => *seq,
            Self::Tampered { seq }
            | Self::Missing { seq, .. }
            | Self::Unlinked { seq }
            | Self::Tenant { seq, .. } => Some(*seq),
            Self::Empty => None,
        }
    }
}

fn text<'v>(obj: &'v Map<String, Value>, key: &str) -> Option<&'v str> {
    obj.get(key).and_then(Value::as_str)
}

/// Checks an export line by line (blank lines are skipped), reading it once.
pub fn verify(input: impl BufRead) -> Result<Verified, Broken> {
    // The seq and digest the next record must follow, once known.
    let mut expect: Option<(i64, String)> = None;
    let mut tenant: Option<String> = None;
    let mut checkpoint = None;
    let (mut records, mut first) = (0u64, None);
    for (n, line) in input.lines().enumerate() {
        let line_no = n as u64 + 1;
        let next_seq = expect.as_ref().map(|(seq, _)| seq + 1);
        let unreadable = |reason: &str| Broken::Unreadable {
            line: line_no,
            seq: next_seq,
            reason: reason.to_owned(),
        };
        let line = line.map_err(|e| unreadable(&e.to_string()))?;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value =
            serde_json::from_str(&line).map_err(|_| unreadable("not a JSON object"))?;
        let Value::Object(obj) = &value else {
            return Err(unreadable("not a JSON object"));
        };
        let seq = obj
            .get("seq")
            .and_then(Value::as_i64)
            .ok_or_else(|| unreadable("no whole-number seq"))?;
        let (Some(kind), Some(line_tenant), Some(digest)) =
            (text(obj, "kind"), text(obj, "tenant"), text(obj, "digest"))
        else {
            return Err(unreadable("kind, tenant or digest missing"));
        };
        if let Some(t) = &tenant {
            if t != line_tenant {
                return Err(Broken::Tenant {
                    seq,
                    tenant: t.clone(),
                    found: line_tenant.to_owned(),
                });
            }
        }
        tenant = Some(line_tenant.to_owned());
        if kind == CHECKPOINT && records == 0 && checkpoint.is_none() {
            checkpoint = Some(seq);
            expect = Some((seq, digest.to_owned()));
            continue;
        }
        if kind != RECORD {
            return Err(unreadable(
                "a checkpoint after the first line, or an unknown kind",
            ));
        }
        let (Some(at), Some(prev), Some(entry)) =
            (text(obj, "at"), text(obj, "prev"), obj.get("entry"))
        else {
            return Err(unreadable("at, prev or entry missing"));
        };
        let fields = ChainFields {
            seq,
            tenant: line_tenant,
            at,
            prev,
            entry,
        };
        // An edit shows in the record itself, unless its digest was recomputed: then in the
        // next record's prev.
        let digest_holds = fields.digest() == digest;
        if let Some((before, before_digest)) = &expect {
            if seq != before + 1 {
                return Err(Broken::Missing {
                    seq: before + 1,
                    found: seq,
                });
            }
            if !digest_holds {
                return Err(Broken::Tampered { seq });
            }
            if prev != before_digest {
                return Err(Broken::Unlinked { seq });
            }
        } else if !digest_holds {
            return Err(Broken::Tampered { seq });
        }
        first.get_or_insert(seq);
        records += 1;
        expect = Some((seq, digest.to_owned()));
    }
    match (first, expect, tenant) {
        (Some(first), Some((last, _)), Some(tenant)) => Ok(Verified {
            tenant,
            records,
            first,
            last,
            checkpoint,
        }),
        _ => Err(Broken::Empty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chain(n: i64) -> Vec<String> {
        let mut prev = GENESIS.to_owned();
        let mut lines = vec![checkpoint("default", 0, GENESIS).to_string()];
        for seq in 1..=n {
            let entry =
                json!({"id": format!("aud_{seq}"), "type": "test", "data": {"n": seq, "x": 1.5}});
            let at = format!("2026-01-01T00:00:{seq:02}.000000Z");
            let fields = ChainFields {
                seq,
                tenant: "default",
                at: &at,
                prev: &prev,
                entry: &entry,
            };
            let digest = fields.digest();
            lines.push(fields.record(&digest).to_string());
            prev = digest;
        }
        lines
    }

    fn check(lines: &[String]) -> Result<Verified, Broken> {
        verify(lines.join("\n").as_bytes())
    }

    #[test]
    fn a_chain_holds_from_genesis_and_from_any_record() {
        let lines = chain(5);
        let ok = check(&lines).expect("holds");
        assert_eq!(
            (ok.records, ok.first, ok.last, ok.checkpoint),
            (5, 1, 5, Some(0))
        );
        assert_eq!(
            ok.to_string(),
            "ok: 5 records of tenant default, seq 1..5, from genesis"
        );
        let tail = check(&lines[3..]).expect("a sub-range holds on its own");
        assert_eq!((tail.first, tail.checkpoint), (3, None));
    }

    #[test]
    fn an_edit_a_deletion_a_reordering_and_a_relinking_name_the_record() {
        let lines = chain(5);
        let mut edited = lines.clone();
        edited[3] = edited[3].replace("aud_3", "aud_9");
        assert_eq!(check(&edited), Err(Broken::Tampered { seq: 3 }));

        let mut deleted = lines.clone();
        deleted.remove(2);
        assert_eq!(check(&deleted).unwrap_err().seq(), Some(2));
        let mut first_deleted = lines.clone();
        first_deleted.remove(1);
        assert_eq!(check(&first_deleted).unwrap_err().seq(), Some(1));

        let mut reordered = lines.clone();
        reordered.swap(2, 3);
        assert_eq!(check(&reordered).unwrap_err().seq(), Some(2));

        // An edited record whose digest was recomputed breaks the next record's link.
        let mut value: Value = serde_json::from_str(&lines[2]).unwrap();
        value["entry"]["type"] = json!("forged");
        let entry = value["entry"].clone();
        let fields = ChainFields {
            seq: 2,
            tenant: "default",
            at: value["at"].as_str().unwrap(),
            prev: value["prev"].as_str().unwrap(),
            entry: &entry,
        };
        let mut relinked = lines.clone();
        relinked[2] = fields.record(&fields.digest()).to_string();
        assert_eq!(check(&relinked), Err(Broken::Unlinked { seq: 3 }));

        assert_eq!(check(&[]), Err(Broken::Empty));
        assert_eq!(check(&["{".to_owned()]).unwrap_err().seq(), None);
    }
}
