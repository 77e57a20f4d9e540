//! One rule for JSON that `validate` and `run` share: an object names each key once. serde_json
//! alone keeps the last of two equal keys, so a workflow could say one thing to a reader and
//! another to the host.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// The first key an object of `text` names twice, with where, or the syntax error that stops
/// the check (the caller's parser reports that one itself).
pub fn find_duplicate_key(text: &str) -> Option<DuplicateKey> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    match NoDuplicateKeys::deserialize(&mut deserializer) {
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            let message = e.to_string();
            let key = message
                .strip_prefix(DUPLICATE)
                .and_then(|rest| rest.split('\'').next())
                .unwrap_or_default()
                .to_string();
            Some(DuplicateKey {
                key,
                line: e.line(),
                column: e.column(),
            })
        }
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateKey {
    pub key: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for DuplicateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "duplicate key '{}' at line {}, column {}: an object may name a key only once",
            self.key, self.line, self.column
        )
    }
}

const DUPLICATE: &str = "duplicate key '";

/// Walks a document without building it, keeping only the keys of the object at hand.
struct NoDuplicateKeys;

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NoDuplicateKeys)
    }
}

impl<'de> Visitor<'de> for NoDuplicateKeys {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("{DUPLICATE}{key}'")));
            }
            map.next_value::<NoDuplicateKeys>()?;
        }
        Ok(NoDuplicateKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_named_twice_is_found_with_its_place() {
        let text = "{\"nodes\": [{\"id\": \"a\",\n \"id\": \"b\"}]}";
        let found = find_duplicate_key(text).unwrap();
        assert_eq!(found.key, "id");
        assert_eq!(found.line, 2);
        assert_eq!(
            found.to_string(),
            format!(
                "duplicate key 'id' at line 2, column {}: an object may name a key only once",
                found.column
            )
        );
        assert_eq!(find_duplicate_key("{\"a\": {\"a\": 1}, \"b\": [1]}"), None);
        // Broken JSON is the parser's to report.
        assert_eq!(find_duplicate_key("{\"a\": "), None);
    }
}
