//! The primitives of the generated protobuf codec (feature `proto`): every generated type writes
//! and reads its own fields by number, with the numbers and presence rules `cargo codegen` takes
//! from the pinned number file, on prost's varint primitives.
//!
//! Written here rather than derived with prost because prost drops unknown fields and has no
//! catch-alls, and because the bytes must be exactly the ones the descriptor-driven codec of
//! `diagwire-proto` writes for the record's JSON, which is the reference: the generated codec takes
//! the records whose every value has a field in its own contract version (no unknown key, variant
//! or enum value, no number outside its JSON form) and returns [`Bail`] for anything else, which
//! the caller then hands to that codec. `docs/protobuf.md` describes the wire form.

use prost::encoding::decode_varint;

/// A value the generated codec leaves to the descriptor-driven one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bail;

/// What the generated codec returns.
pub type R<T = ()> = Result<T, Bail>;

/// Wire type of a varint.
pub const VARINT: u8 = 0;
/// Wire type of a little-endian 64-bit value.
pub const FIXED64: u8 = 1;
/// Wire type of a length-delimited value.
pub const LEN: u8 = 2;

/// Writes a varint, one byte without a call for values below 128.
#[inline]
pub fn varint(v: u64, out: &mut Vec<u8>) {
    if v < 0x80 {
        out.push(v as u8);
    } else {
        long_varint(v, out);
    }
}

/// The bytes of a varint, in a stack buffer, and how many there are.
#[inline]
fn varint_bytes(mut v: u64) -> ([u8; 10], usize) {
    let mut buf = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 {
        buf[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    buf[n] = v as u8;
    (buf, n + 1)
}

/// A varint of two bytes or more: built in a register and written as one fixed-size copy the
/// compiler makes inline, the unused tail then dropped.
#[inline]
fn long_varint(mut v: u64, out: &mut Vec<u8>) {
    let mut x: u128 = 0;
    let mut n = 0;
    while v >= 0x80 {
        x |= u128::from((v as u8) | 0x80) << (8 * n);
        v >>= 7;
        n += 1;
    }
    x |= u128::from(v as u8) << (8 * n);
    let at = out.len();
    out.extend_from_slice(&x.to_le_bytes());
    out.truncate(at + n + 1);
}

/// Writes the key of field `n` with wire type `wire`.
#[inline]
pub fn key(n: u32, wire: u8, out: &mut Vec<u8>) {
    varint((u64::from(n) << 3) | u64::from(wire), out);
}

/// Writes the key of length-delimited field `n` and one byte for its length, which [`close_len`]
/// fills in; returns where the length goes.
#[inline]
pub fn open_len(n: u32, out: &mut Vec<u8>) -> usize {
    key(n, LEN, out);
    out.push(0);
    out.len() - 1
}

/// Writes the length of what follows `at` (an [`open_len`]) there, moving it up when the length
/// takes more than one byte.
#[inline]
pub fn close_len(at: usize, out: &mut Vec<u8>) {
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
    } else {
        let (head, k) = varint_bytes(len as u64);
        out.resize(out.len() + k - 1, 0);
        out.copy_within(at + 1..at + 1 + len, at + k);
        out[at..at + k].copy_from_slice(&head[..k]);
    }
}

/// Writes length-delimited field `n` holding `b`.
#[inline]
pub fn bytes_field(n: u32, b: &[u8], out: &mut Vec<u8>) {
    key(n, LEN, out);
    varint(b.len() as u64, out);
    out.extend_from_slice(b);
}

/// Reads a varint.
#[inline]
pub fn read_varint(b: &mut &[u8]) -> R<u64> {
    match b.first() {
        Some(&x) if x < 0x80 => {
            *b = &b[1..];
            Ok(u64::from(x))
        }
        Some(_) => decode_varint(b).map_err(|_| Bail),
        None => Err(Bail),
    }
}

/// Reads a field key: its number and wire type (varint, 64-bit or length-delimited only).
#[inline]
pub fn read_key(b: &mut &[u8]) -> R<(u32, u8)> {
    let k = read_varint(b)?;
    let n = u32::try_from(k >> 3).map_err(|_| Bail)?;
    let wire = (k & 7) as u8;
    if n == 0 || wire > LEN {
        return Err(Bail);
    }
    Ok((n, wire))
}

/// Reads the payload of a length-delimited field.
#[inline]
pub fn read_len<'a>(wire: u8, b: &mut &'a [u8]) -> R<&'a [u8]> {
    if wire != LEN {
        return Err(Bail);
    }
    let len = usize::try_from(read_varint(b)?).map_err(|_| Bail)?;
    if len > b.len() {
        return Err(Bail);
    }
    let (v, rest) = b.split_at(len);
    *b = rest;
    Ok(v)
}

fn read_fixed64(wire: u8, b: &mut &[u8]) -> R<u64> {
    if wire != FIXED64 || b.len() < 8 {
        return Err(Bail);
    }
    let (v, rest) = b.split_at(8);
    *b = rest;
    Ok(u64::from_le_bytes(v.try_into().map_err(|_| Bail)?))
}

/// A value of the contract as a protobuf field.
pub trait Encode {
    /// Whether the descriptor codec counts the value as the zero it leaves out of a required or
    /// defaulted field: an empty string or list, `false`, `0`, `+0.0`. Messages, enums and ids
    /// have none.
    fn is_zero(&self) -> bool {
        false
    }

    /// Whether the value is JSON `null`, which a nullable field writes as its absence.
    fn is_null(&self) -> bool {
        false
    }

    /// Writes the value as field `n`.
    fn field(&self, n: u32, out: &mut Vec<u8>) -> R;

    /// Writes a list of values as field `n`: packed for numbers, booleans and enums, one field
    /// per item otherwise.
    fn list(items: &[Self], n: u32, out: &mut Vec<u8>) -> R
    where
        Self: Sized,
    {
        for x in items {
            x.field(n, out)?;
        }
        Ok(())
    }
}

/// A value of the contract read from a protobuf field.
pub trait Decode: Sized {
    /// Reads one occurrence of a field of wire type `wire`.
    fn read(wire: u8, b: &mut &[u8]) -> R<Self>;

    /// Reads one occurrence of a list field into `into`: a packed run or one item.
    fn read_list(wire: u8, b: &mut &[u8], into: &mut Vec<Self>) -> R {
        into.push(Self::read(wire, b)?);
        Ok(())
    }

    /// The value of a required field the wire left out, where the descriptor codec reads one.
    fn zero() -> R<Self> {
        Err(Bail)
    }
}

/// A message: a value whose fields are the payload of a length-delimited field, or a whole record.
pub trait Message: Sized {
    /// The contract version whose numbers the type was generated with (`1.2.1`, …).
    const CONTRACT: &'static str;
    /// The message's name in that version's descriptor; for a list record, its items' message.
    const NAME: &'static str;
    /// A list record (a batch): the descriptor's wrapper message of a list of [`Message::NAME`].
    const LIST: bool = false;
    /// Writes the message's fields.
    fn body(&self, out: &mut Vec<u8>) -> R;
    /// Reads the message from its fields.
    fn read_body(b: &[u8]) -> R<Self>;
}

/// `Encode::field` of a message.
#[inline]
pub fn message_field<M: Message>(m: &M, n: u32, out: &mut Vec<u8>) -> R {
    let at = open_len(n, out);
    m.body(out)?;
    close_len(at, out);
    Ok(())
}

/// `Decode::read` of a message.
#[inline]
pub fn read_message<M: Message>(wire: u8, b: &mut &[u8]) -> R<M> {
    spend(std::mem::size_of::<M>())?;
    M::read_body(read_len(wire, b)?)
}

thread_local! {
    /// The buffer [`encode`] writes into, kept between records.
    static OUT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The largest buffer [`encode`] keeps for the next record.
const KEPT_BUFFER: usize = 1 << 20;

/// Encodes a message: written into a buffer this thread keeps, so a large record does not grow a
/// fresh `Vec` step by step, then copied out at its size.
pub fn encode<M: Message>(m: &M) -> R<Vec<u8>> {
    OUT.with(|cell| {
        let Ok(mut out) = cell.try_borrow_mut() else {
            let mut out = Vec::new();
            m.body(&mut out)?;
            return Ok(out);
        };
        out.clear();
        let r = m.body(&mut out).map(|()| out.to_vec());
        if out.capacity() > KEPT_BUFFER {
            *out = Vec::new();
        }
        r
    })
}

thread_local! {
    /// The bytes of values the decoding on this thread may still build, when [`bounded`] set it.
    static BUDGET: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// Spends `n` bytes of the decoding budget.
#[inline]
fn spend(n: usize) -> R {
    BUDGET.with(|b| {
        let left = b.get();
        if left < n {
            return Err(Bail);
        }
        b.set(left - n);
        Ok(())
    })
}

/// The bytes of values a decoding of `len` input bytes may build in nested messages: a message
/// can be two bytes on the wire (its key and an empty length) and hundreds in memory, so a list of
/// them would otherwise grow memory far past the input.
pub const fn budget(len: usize) -> usize {
    64 * len + (1 << 20)
}

/// Runs a decoding of `len` input bytes with [`budget`]`(len)`: past it, the nested messages it
/// reads are a [`Bail`] (the descriptor codec, with its own budget, then decides).
pub fn bounded<T>(len: usize, decode: impl FnOnce() -> R<T>) -> R<T> {
    let saved = BUDGET.with(|b| b.replace(budget(len)));
    let out = decode();
    BUDGET.with(|b| b.set(saved));
    out
}

/// The JSON key under which a reader keeps what its descriptor cannot name (the descriptor codec's raw
/// fields); a record holding it is the descriptor codec's.
pub const UNKNOWN_FIELDS_KEY: &str = "$protobuf_unknown";

/// A message's `unknown_json` being collected: the keys whose values have no field.
pub type Unknown = Option<serde_json::Map<String, serde_json::Value>>;

/// Writes the scalar (or enum) field `key` as field `n`; a value its type cannot hold on the wire
/// (an unknown enum value, a string that is not a hex id, a number without a JSON form) goes into
/// the message's `unknown_json` as its JSON, as the descriptor codec keeps it.
#[inline]
pub fn scalar<T: Encode + serde::Serialize>(
    v: &T,
    n: u32,
    key: &str,
    out: &mut Vec<u8>,
    unknown: &mut Unknown,
) -> R {
    let at = out.len();
    if v.field(n, out).is_err() {
        misfit(v, key, at, out, unknown)?;
    }
    Ok(())
}

#[cold]
fn misfit<T: serde::Serialize>(
    v: &T,
    key: &str,
    at: usize,
    out: &mut Vec<u8>,
    unknown: &mut Unknown,
) -> R {
    out.truncate(at);
    let j = serde_json::to_value(v).map_err(|_| Bail)?;
    unknown
        .get_or_insert_with(Default::default)
        .insert(key.to_owned(), j);
    Ok(())
}

/// Adds the keys a struct kept unknown to its `unknown_json`.
#[inline]
pub fn extra(extra: &crate::Extra, unknown: &mut Unknown) -> R {
    if extra.0.is_empty() {
        Ok(())
    } else {
        kept(extra, unknown)
    }
}

#[cold]
fn kept(extra: &crate::Extra, unknown: &mut Unknown) -> R {
    if extra.0.contains_key(UNKNOWN_FIELDS_KEY) {
        return Err(Bail);
    }
    let u = unknown.get_or_insert_with(Default::default);
    for (k, v) in &extra.0 {
        u.insert(k.clone(), v.clone());
    }
    Ok(())
}

/// Writes a message's `unknown_json` (field `n`), if it has one.
#[inline]
pub fn write_unknown(n: u32, unknown: Unknown, out: &mut Vec<u8>) -> R {
    match unknown {
        None => Ok(()),
        Some(u) => unknown_json(n, u, out),
    }
}

#[cold]
fn unknown_json(n: u32, u: serde_json::Map<String, serde_json::Value>, out: &mut Vec<u8>) -> R {
    let at = open_len(n, out);
    serde_json::to_writer(&mut *out, &serde_json::Value::Object(u)).map_err(|_| Bail)?;
    close_len(at, out);
    Ok(())
}

/// Reads a message's `unknown_json`: a JSON object.
pub fn read_unknown(wire: u8, b: &mut &[u8]) -> R<serde_json::Map<String, serde_json::Value>> {
    match serde_json::from_slice(read_len(wire, b)?) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        _ => Err(Bail),
    }
}

/// Sets a field from its JSON in `unknown_json`; a field also on the wire is the descriptor codec's.
pub fn from_json<T: serde::de::DeserializeOwned>(slot: &mut Option<T>, v: serde_json::Value) -> R {
    if slot.is_some() {
        return Err(Bail);
    }
    *slot = Some(serde_json::from_value(v).map_err(|_| Bail)?);
    Ok(())
}

/// Keeps an unknown key read from `unknown_json` in a struct's `extra`.
pub fn keep(extra: &mut crate::Extra, k: String, v: serde_json::Value) -> R {
    if k == UNKNOWN_FIELDS_KEY {
        return Err(Bail);
    }
    extra.0.insert(k, v);
    Ok(())
}

/// Sets a field read once; a second occurrence goes to the descriptor codec.
#[inline]
pub fn once<T: Decode>(slot: &mut Option<T>, wire: u8, b: &mut &[u8]) -> R {
    if slot.is_some() {
        return Err(Bail);
    }
    *slot = Some(T::read(wire, b)?);
    Ok(())
}

/// A required or defaulted field: its value, or its zero when the wire left it out.
#[inline]
pub fn required<T: Decode>(slot: Option<T>) -> R<T> {
    match slot {
        Some(v) => Ok(v),
        None => T::zero(),
    }
}

/// Reads one occurrence of a list field into `into`.
#[inline]
pub fn read_list<T: Decode>(wire: u8, b: &mut &[u8], into: &mut Vec<T>) -> R {
    T::read_list(wire, b, into)
}

/// Writes a list field (not left out when empty: the caller decides).
#[inline]
pub fn list<T: Encode>(items: &[T], n: u32, out: &mut Vec<u8>) -> R {
    T::list(items, n, out)
}

/// Writes a packed list of varints, each from its item.
#[inline]
pub fn packed_list<T>(items: &[T], n: u32, out: &mut Vec<u8>, f: impl Fn(&T) -> R<u64>) -> R {
    let at = open_len(n, out);
    for x in items {
        varint(f(x)?, out);
    }
    close_len(at, out);
    Ok(())
}

/// Reads the number of an enum value.
#[inline]
pub fn read_enum(wire: u8, b: &mut &[u8]) -> R<u64> {
    if wire != VARINT {
        return Err(Bail);
    }
    read_varint(b)
}

/// Reads the empty payload of a unit variant.
#[inline]
pub fn read_unit(wire: u8, b: &mut &[u8]) -> R {
    if read_len(wire, b)?.is_empty() {
        Ok(())
    } else {
        Err(Bail)
    }
}

/// A nullable or omittable field: JSON `null` read from the wire is the field's absence.
#[inline]
pub fn optional<T: Encode>(slot: Option<T>) -> Option<T> {
    slot.filter(|v| !v.is_null())
}

macro_rules! varint_scalar {
    ($($t:ty),*) => {$(
        impl Encode for $t {
            fn is_zero(&self) -> bool {
                *self == 0
            }
            #[inline]
            fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
                key(n, VARINT, out);
                varint(u64::from(*self), out);
                Ok(())
            }
            fn list(items: &[Self], n: u32, out: &mut Vec<u8>) -> R {
                let at = open_len(n, out);
                for x in items {
                    varint(u64::from(*x), out);
                }
                close_len(at, out);
                Ok(())
            }
        }

        impl Decode for $t {
            #[inline]
            fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
                if wire != VARINT {
                    return Err(Bail);
                }
                <$t>::try_from(read_varint(b)?).map_err(|_| Bail)
            }
            fn read_list(wire: u8, b: &mut &[u8], into: &mut Vec<Self>) -> R {
                packed(wire, b, into)
            }
            fn zero() -> R<Self> {
                Ok(0)
            }
        }
    )*};
}

varint_scalar!(u8, u16, u32, u64);

fn packed<T: Decode>(wire: u8, b: &mut &[u8], into: &mut Vec<T>) -> R {
    read_packed(VARINT, wire, b, into)
}

/// Reads a packed run of items of wire type `scalar` (or, as protobuf allows, one unpacked item)
/// into `into`.
pub fn read_packed<T: Decode>(scalar: u8, wire: u8, b: &mut &[u8], into: &mut Vec<T>) -> R {
    if wire != LEN {
        into.push(T::read(wire, b)?);
        return Ok(());
    }
    let mut run = read_len(wire, b)?;
    while !run.is_empty() {
        into.push(T::read(scalar, &mut run)?);
    }
    Ok(())
}

/// Zigzag form of a signed integer.
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// The signed integer of a zigzag form.
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

macro_rules! zigzag_scalar {
    ($($t:ty),*) => {$(
        impl Encode for $t {
            fn is_zero(&self) -> bool {
                *self == 0
            }
            #[inline]
            fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
                key(n, VARINT, out);
                varint(zigzag(i64::from(*self)), out);
                Ok(())
            }
            fn list(items: &[Self], n: u32, out: &mut Vec<u8>) -> R {
                let at = open_len(n, out);
                for x in items {
                    varint(zigzag(i64::from(*x)), out);
                }
                close_len(at, out);
                Ok(())
            }
        }

        impl Decode for $t {
            #[inline]
            fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
                if wire != VARINT {
                    return Err(Bail);
                }
                <$t>::try_from(unzigzag(read_varint(b)?)).map_err(|_| Bail)
            }
            fn read_list(wire: u8, b: &mut &[u8], into: &mut Vec<Self>) -> R {
                packed(wire, b, into)
            }
            fn zero() -> R<Self> {
                Ok(0)
            }
        }
    )*};
}

zigzag_scalar!(i32, i64);

impl Encode for bool {
    fn is_zero(&self) -> bool {
        !*self
    }
    #[inline]
    fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
        key(n, VARINT, out);
        out.push(u8::from(*self));
        Ok(())
    }
    fn list(items: &[Self], n: u32, out: &mut Vec<u8>) -> R {
        let at = open_len(n, out);
        out.extend(items.iter().map(|x| u8::from(*x)));
        close_len(at, out);
        Ok(())
    }
}

impl Decode for bool {
    fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
        if wire != VARINT {
            return Err(Bail);
        }
        match read_varint(b)? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Bail),
        }
    }
    fn read_list(wire: u8, b: &mut &[u8], into: &mut Vec<Self>) -> R {
        packed(wire, b, into)
    }
    fn zero() -> R<Self> {
        Ok(false)
    }
}

impl Encode for f64 {
    fn is_zero(&self) -> bool {
        *self == 0.0 && self.is_sign_positive()
    }
    #[inline]
    fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
        // A number without a JSON form (`serde_json` writes `null`) is the descriptor codec's.
        if !self.is_finite() {
            return Err(Bail);
        }
        key(n, FIXED64, out);
        out.extend_from_slice(&self.to_bits().to_le_bytes());
        Ok(())
    }
    fn list(items: &[Self], n: u32, out: &mut Vec<u8>) -> R {
        let at = open_len(n, out);
        for x in items {
            if !x.is_finite() {
                return Err(Bail);
            }
            out.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        close_len(at, out);
        Ok(())
    }
}

impl Decode for f64 {
    fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
        let f = f64::from_bits(read_fixed64(wire, b)?);
        if f.is_finite() { Ok(f) } else { Err(Bail) }
    }
    fn read_list(wire: u8, b: &mut &[u8], into: &mut Vec<Self>) -> R {
        read_packed(FIXED64, wire, b, into)
    }
    fn zero() -> R<Self> {
        Ok(0.0)
    }
}

impl Encode for String {
    fn is_zero(&self) -> bool {
        self.is_empty()
    }
    #[inline]
    fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
        bytes_field(n, self.as_bytes(), out);
        Ok(())
    }
}

impl Decode for String {
    #[inline]
    fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
        let v = read_len(wire, b)?;
        std::str::from_utf8(v).map(str::to_owned).map_err(|_| Bail)
    }
    fn zero() -> R<Self> {
        Ok(String::new())
    }
}

impl Encode for crate::NodeId {
    #[inline]
    fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
        bytes_field(n, &self.0, out);
        Ok(())
    }
}

impl Decode for crate::NodeId {
    #[inline]
    fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
        let v = read_len(wire, b)?;
        Ok(crate::NodeId(v.try_into().map_err(|_| Bail)?))
    }
}

/// The 32 bytes of a 64-character lowercase hex id. Eight characters at a time in a `u64` (a
/// hand-written word-at-a-time decode: a table lookup per character was a fifth of a snapshot's
/// encoding).
pub fn hex32(s: &str) -> Option<[u8; 32]> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    /// Bit 7 of each byte: whether the byte (below 0x80) is in `lo..=hi`.
    fn within(x: u64, lo: u8, hi: u8) -> u64 {
        let at_least = x + ONES * u64::from(0x80 - lo);
        let above = x + ONES * u64::from(0x7f - hi);
        at_least & !above & HIGH
    }
    let s: &[u8; 64] = s.as_bytes().try_into().ok()?;
    let mut b = [0u8; 32];
    for (out, chunk) in b.chunks_exact_mut(4).zip(s.chunks_exact(8)) {
        let x = u64::from_le_bytes(chunk.try_into().ok()?);
        if x & HIGH != 0 {
            return None;
        }
        let (digit, letter) = (within(x, b'0', b'9'), within(x, b'a', b'f'));
        if digit | letter != HIGH {
            return None;
        }
        let nibbles = (x & (ONES * 0x0f)) + (letter >> 7) * 9;
        let pairs = ((nibbles << 4) | (nibbles >> 8)) & 0x00ff_00ff_00ff_00ff;
        let packed = (pairs | (pairs >> 8)) & 0x0000_ffff_0000_ffff;
        let packed = (packed | (packed >> 16)) & 0xffff_ffff;
        out.copy_from_slice(&(packed as u32).to_le_bytes());
    }
    Some(b)
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(D[usize::from(b >> 4)] as char);
        s.push(D[usize::from(b & 15)] as char);
    }
    s
}

impl Encode for crate::NodeIdHex {
    #[inline]
    fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
        // Any other string (a synthetic producer id) is the descriptor codec's: it keeps it as JSON.
        let b = hex32(self.as_str()).ok_or(Bail)?;
        bytes_field(n, &b, out);
        Ok(())
    }
}

impl Decode for crate::NodeIdHex {
    #[inline]
    fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
        let v = read_len(wire, b)?;
        if v.len() != 32 {
            return Err(Bail);
        }
        Ok(crate::NodeIdHex(hex(v)))
    }
}

impl Encode for crate::Json {
    fn is_null(&self) -> bool {
        self.0.is_null()
    }
    fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
        let at = open_len(n, out);
        serde_json::to_writer(&mut *out, &self.0).map_err(|_| Bail)?;
        close_len(at, out);
        Ok(())
    }
}

impl Decode for crate::Json {
    fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
        let v = read_len(wire, b)?;
        serde_json::from_slice(v).map(crate::Json).map_err(|_| Bail)
    }
    fn zero() -> R<Self> {
        Ok(crate::Json(serde_json::Value::Null))
    }
}

/// A list in a field of its own: the wrapper message whose field 1 holds the items (a list that
/// may be absent, or a list in a list or a variant).
impl<T: Encode> Encode for Vec<T> {
    fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
        let at = open_len(n, out);
        T::list(self, 1, out)?;
        close_len(at, out);
        Ok(())
    }
}

impl<T: Decode> Decode for Vec<T> {
    fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
        read_items(read_len(wire, b)?)
    }
    fn zero() -> R<Self> {
        Ok(Vec::new())
    }
}

/// A list record (a batch): the wrapper message's field 1.
impl<T: Message + Encode + Decode> Message for Vec<T> {
    const CONTRACT: &'static str = T::CONTRACT;
    const NAME: &'static str = T::NAME;
    const LIST: bool = true;
    fn body(&self, out: &mut Vec<u8>) -> R {
        T::list(self, 1, out)
    }
    fn read_body(b: &[u8]) -> R<Self> {
        read_items(b)
    }
}

/// The items of a list wrapper message: its field 1.
fn read_items<T: Decode>(mut b: &[u8]) -> R<Vec<T>> {
    let mut items = Vec::new();
    while !b.is_empty() {
        let (n, wire) = read_key(&mut b)?;
        if n != 1 {
            return Err(Bail);
        }
        T::read_list(wire, &mut b, &mut items)?;
    }
    Ok(items)
}

/// A tuple: a message of positional fields 1, 2, …, zeros left out.
macro_rules! tuple {
    ($($t:ident $v:ident $n:literal),*) => {
        impl<$($t: Encode),*> Encode for ($($t,)*) {
            fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
                let ($($v,)*) = self;
                let at = open_len(n, out);
                $(if !$v.is_zero() {
                    $v.field($n, out)?;
                })*
                close_len(at, out);
                Ok(())
            }
        }

        impl<$($t: Decode),*> Decode for ($($t,)*) {
            fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
                let mut b = read_len(wire, b)?;
                $(let mut $v = None;)*
                while !b.is_empty() {
                    let (n, wire) = read_key(&mut b)?;
                    match n {
                        $($n => once(&mut $v, wire, &mut b)?,)*
                        _ => return Err(Bail),
                    }
                }
                Ok(($(required($v)?,)*))
            }
        }
    };
}

tuple!(A a 1, B b 2);
tuple!(A a 1, B b 2, C c 3);

#[cfg(test)]
mod tests {
    use super::*;

    /// A message four kilobytes in memory and two bytes on the wire.
    #[derive(Debug)]
    struct Big(#[allow(dead_code)] [u8; 4096]);

    impl Message for Big {
        const CONTRACT: &'static str = "test";
        const NAME: &'static str = "Big";
        fn body(&self, _: &mut Vec<u8>) -> R {
            Ok(())
        }
        fn read_body(b: &[u8]) -> R<Self> {
            if b.is_empty() {
                Ok(Big([0; 4096]))
            } else {
                Err(Bail)
            }
        }
    }

    impl Encode for Big {
        fn field(&self, n: u32, out: &mut Vec<u8>) -> R {
            message_field(self, n, out)
        }
    }

    impl Decode for Big {
        fn read(wire: u8, b: &mut &[u8]) -> R<Self> {
            read_message(wire, b)
        }
    }

    fn batch(items: usize) -> Vec<u8> {
        let mut out = Vec::new();
        Vec::from_iter((0..items).map(|_| Big([0; 4096])))
            .body(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn a_hex_id_is_64_lowercase_hex_digits() {
        let id = "00ff10a9".repeat(8);
        let mut want = [0u8; 32];
        for c in want.chunks_mut(4) {
            c.copy_from_slice(&[0x00, 0xff, 0x10, 0xa9]);
        }
        assert_eq!(hex32(&id), Some(want));
        assert_eq!(hex(&want), id);
        // (case, input)
        let refused = [
            ("an upper-case digit", id.replacen('f', "F", 1)),
            ("a letter past f", id.replacen('a', "g", 1)),
            ("a byte past the ASCII digits", id.replacen('9', ":", 1)),
            ("one digit short", id[1..].to_owned()),
            ("one digit more", format!("{id}0")),
            ("a synthetic producer id", "vastai-external".to_owned()),
        ];
        for (case, input) in refused {
            assert_eq!(hex32(&input), None, "{case}");
        }
        // Every byte in every position of a word: taken exactly when it is a lowercase digit.
        for at in 0..8 {
            for byte in 0..=255u8 {
                let mut s = id.clone().into_bytes();
                s[at] = byte;
                let Ok(text) = String::from_utf8(s) else {
                    continue;
                };
                let digit = byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte);
                let got = hex32(&text);
                assert_eq!(got.is_some(), digit, "byte {byte:#x} at {at}");
                if let Some(got) = got {
                    assert_eq!(hex(&got), text, "byte {byte:#x} at {at}");
                }
            }
        }
    }

    #[test]
    fn varints_and_lengths_are_minimal() {
        // (value, its bytes)
        let cases: [(u64, &[u8]); 5] = [
            (0, &[0]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for (v, bytes) in cases {
            let mut out = Vec::new();
            varint(v, &mut out);
            assert_eq!(out, bytes, "{v}");
            assert_eq!(read_varint(&mut &out[..]), Ok(v), "{v}");
        }
        for len in [0, 127, 128, 20_000] {
            let mut out = Vec::new();
            let at = open_len(1, &mut out);
            out.extend(std::iter::repeat_n(7, len));
            close_len(at, &mut out);
            let mut head = vec![0x0a];
            varint(len as u64, &mut head);
            assert_eq!(&out[..head.len()], &head[..], "{len}");
            assert_eq!(out.len(), head.len() + len, "{len}");
        }
    }

    #[test]
    fn a_list_of_empty_messages_is_held_to_the_budget_of_its_input() {
        let small = batch(16);
        assert_eq!(small.len(), 32);
        let read = bounded(small.len(), || Vec::<Big>::read_body(&small));
        assert_eq!(read.map(|v| v.len()), Ok(16));
        // 2,000 input bytes may build 64 × 2,000 + 1 MiB; 1,000 of these are 4 MiB.
        let large = batch(1000);
        assert_eq!(
            bounded(large.len(), || Vec::<Big>::read_body(&large)).map(|v| v.len()),
            Err(Bail)
        );
        // The budget is the decoding's own: the next one starts afresh.
        assert_eq!(
            bounded(small.len(), || Vec::<Big>::read_body(&small)).map(|v| v.len()),
            Ok(16)
        );
    }
}
