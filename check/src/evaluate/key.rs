//! The key a rule groups events by: the values of the rule's `match` (or `per`) fields.

use std::cmp::Ordering;

use super::Fields;

/// One field's value in a [`Key`]: its JSON text (`"a"`, `3`), or `None` when the field is absent
/// or `null` (the two are the same for a key).
pub(crate) type Part = Option<String>;

/// The values of some fields of an event, in the order the rule names the fields.
///
/// Keys order as their parts' JSON texts do, an absent part as the text `null`, so the order of
/// findings follows the values as they are written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key(pub Vec<Part>);

impl Key {
    /// The key of `v` over `fields`.
    pub fn of(v: &Fields<'_>, fields: &[String]) -> Key {
        Key(fields.iter().map(|f| v.part(f)).collect())
    }

    /// The key, field by field, for a message: `peer "ab", attempt 2`.
    pub fn describe(&self, fields: &[String]) -> String {
        fields
            .iter()
            .zip(&self.0)
            .map(|(f, k)| format!("{f} {}", text(k)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A part as written: its JSON text, `null` when absent.
pub(crate) fn text(p: &Part) -> &str {
    p.as_deref().unwrap_or("null")
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.iter().map(text).cmp(other.0.iter().map(text))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use diagwire::view::Buffer;

    fn key(text: &str, fields: &[String]) -> Key {
        let v = Fields::read(text, Buffer::default()).expect("an object");
        Key::of(&v, fields)
    }

    #[test]
    fn absent_and_null_are_one_part_that_orders_as_its_text() {
        let fields = vec!["a".to_owned(), "b".to_owned()];
        let absent = key(r#"{"a": 1}"#, &fields);
        let null = key(r#"{"a": 1, "b": null}"#, &fields);
        assert_eq!(absent, null);
        assert_eq!(absent.describe(&fields), "a 1, b null");
        let string = key(r#"{"a": 1, "b": "x"}"#, &fields);
        let truth = key(r#"{"a": 1, "b": true}"#, &fields);
        // `"x"` < `null` < `true`, as the texts order.
        assert!(string < absent && absent < truth);
    }
}
