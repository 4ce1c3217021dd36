//! The two encodings of a node id: swactor's `NodeId` (an array of 32 integers) and the hex string.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};
use serde::{Serialize, Serializer};

/// A node's 32-byte public key, serialized as swactor does: a JSON array of 32 integers 0-255.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct NodeId(pub [u8; 32]);

impl From<[u8; 32]> for NodeId {
    fn from(bytes: [u8; 32]) -> Self {
        NodeId(bytes)
    }
}

impl NodeId {
    /// The 64-character lowercase hex form.
    pub fn to_hex(&self) -> NodeIdHex {
        NodeIdHex(self.to_string())
    }

    /// The first 8 hex characters, as swactor's logs and `node_id_short` print them.
    pub fn short(&self) -> String {
        short_hex(&self.to_string()).to_owned()
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeId({self})")
    }
}

/// Error of parsing a hex node id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseNodeIdError(String);

impl fmt::Display for ParseNodeIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a 64-character hex node id", self.0)
    }
}

impl std::error::Error for ParseNodeIdError {}

impl FromStr for NodeId {
    type Err = ParseNodeIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseNodeIdError(s.to_owned());
        if s.len() != 64 || !s.is_ascii() {
            return Err(err());
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| err())?;
        }
        Ok(NodeId(out))
    }
}

impl Serialize for NodeId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // serde_json writes bytes as the array of their values, the wire form; the protobuf codec
        // takes them at once.
        serializer.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for NodeId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // serde_json answers this request with the value's raw text (its raw-value protocol), which
        // `parse_canonical` reads in one tight loop: node ids are most of an event record's bytes.
        // Any other deserializer calls `visit_newtype_struct` and takes the sequence path.
        deserializer.deserialize_newtype_struct(crate::de::RAW_VALUE_TOKEN, NodeIdVisitor)
    }
}

/// Reads `[b0,b1,…,b31]` as serde_json writes it (optional JSON whitespace, integers without sign,
/// fraction, exponent or leading zero). Anything else returns `None` and takes serde_json's own path,
/// so exotic spellings get exactly serde_json's answer and error.
fn parse_canonical(raw: &str) -> Option<NodeId> {
    let b = raw.as_bytes();
    let ws = |i: &mut usize| {
        while matches!(b.get(*i), Some(b' ' | b'\n' | b'\t' | b'\r')) {
            *i += 1;
        }
    };
    let mut out = [0u8; 32];
    let mut i = 0;
    ws(&mut i);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i += 1;
    for (n, byte) in out.iter_mut().enumerate() {
        ws(&mut i);
        let start = i;
        let mut v: u32 = 0;
        while let Some(d @ b'0'..=b'9') = b.get(i) {
            v = v * 10 + u32::from(d - b'0');
            i += 1;
            if i - start > 3 {
                return None;
            }
        }
        if i == start || v > 255 || (i - start > 1 && b[start] == b'0') {
            return None;
        }
        *byte = v as u8;
        ws(&mut i);
        match (b.get(i), n) {
            (Some(b','), 0..=30) | (Some(b']'), 31) => i += 1,
            _ => return None,
        }
    }
    ws(&mut i);
    (i == b.len()).then_some(NodeId(out))
}

struct NodeIdVisitor;

impl<'de> Visitor<'de> for NodeIdVisitor {
    type Value = NodeId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a node id: an array of 32 integers 0-255")
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<NodeId, D::Error> {
        // A format with a byte string (the protobuf codec) hands over the 32 bytes at once; a
        // self-describing one answers with the array.
        d.deserialize_bytes(self)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<NodeId, E> {
        <[u8; 32]>::try_from(v)
            .map(NodeId)
            .map_err(|_| E::invalid_length(v.len(), &self))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<NodeId, A::Error> {
        // serde_json's raw-value protocol: one entry whose value is the raw JSON text.
        if map.next_key::<de::IgnoredAny>()?.is_none() {
            return Err(de::Error::invalid_length(0, &self));
        }
        let raw = map.next_value_seed(crate::de::KeySeed)?;
        if let Some(id) = parse_canonical(&raw) {
            return Ok(id);
        }
        let mut inner = serde_json::Deserializer::from_str(&raw);
        inner
            .deserialize_seq(NodeIdVisitor)
            .map_err(|e| de::Error::custom(crate::de::without_position(&e)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<NodeId, A::Error> {
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = seq
                .next_element()?
                .ok_or_else(|| de::Error::invalid_length(i, &self))?;
        }
        let mut extra = 0;
        while seq.next_element::<de::IgnoredAny>()?.is_some() {
            extra += 1;
        }
        if extra > 0 {
            return Err(de::Error::invalid_length(32 + extra, &self));
        }
        Ok(NodeId(out))
    }
}

/// A node id as a string, by convention 64 lowercase hex characters.
///
/// Readers accept any string: collector manifests carry the raw `x-node-id` header, which is a
/// synthetic id such as `vastai-external` for vast.ai producers.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
#[serde(transparent)]
pub struct NodeIdHex(pub String);

impl NodeIdHex {
    /// The string as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 32-byte id, when the string is a 64-character hex id.
    pub fn to_node_id(&self) -> Result<NodeId, ParseNodeIdError> {
        self.0.parse()
    }
}

impl fmt::Debug for NodeIdHex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeIdHex({:?})", self.0)
    }
}

impl fmt::Display for NodeIdHex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<NodeId> for NodeIdHex {
    fn from(id: NodeId) -> Self {
        id.to_hex()
    }
}

impl From<&str> for NodeIdHex {
    fn from(s: &str) -> Self {
        NodeIdHex(s.to_owned())
    }
}

impl<'de> Deserialize<'de> for NodeIdHex {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(NodeIdHex)
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for NodeIdHex {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(NodeId::arbitrary(u)?.to_hex())
    }
}

/// The short form of a node id written in hex: its first 8 characters, as swactor's logs and
/// `node_id_short` print it (the whole text when it is shorter, or when its 8th byte is not a
/// character boundary, as in a label that is not an id).
pub fn short_hex(hex: &str) -> &str {
    hex.get(..8).unwrap_or(hex)
}
