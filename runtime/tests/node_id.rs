//! `NodeId` reads exactly what swactor's derived `[u8; 32]` reads, through every input path.

use diagwire_runtime::NodeId;
use serde_json::Value;

fn ids(n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| ((i * 37) % 256).to_string()).collect();
    format!("[{}]", items.join(","))
}

/// The reference: serde's own reading of a 32-byte array.
fn reference(text: &str) -> Option<[u8; 32]> {
    serde_json::from_str::<Vec<u8>>(text)
        .ok()
        .and_then(|v| v.try_into().ok())
}

#[track_caller]
fn agrees(text: &str) {
    let want = reference(text);
    let from_str = serde_json::from_str::<NodeId>(text).ok().map(|n| n.0);
    let from_slice = serde_json::from_slice::<NodeId>(text.as_bytes())
        .ok()
        .map(|n| n.0);
    let from_reader = serde_json::from_reader::<_, NodeId>(text.as_bytes())
        .ok()
        .map(|n| n.0);
    let from_value = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| serde_json::from_value::<NodeId>(v).ok())
        .map(|n| n.0);
    assert_eq!(from_str, want, "from_str {text}");
    assert_eq!(from_slice, want, "from_slice {text}");
    assert_eq!(from_reader, want, "from_reader {text}");
    assert_eq!(from_value, want, "from_value {text}");
}

#[test]
fn a_canonical_array_of_32_bytes_reads() {
    agrees(&ids(32));
    assert!(reference(&ids(32)).is_some());
}

#[test]
fn whitespace_between_elements_reads() {
    agrees(
        &ids(32)
            .replace(',', " ,\n  ")
            .replace('[', "[ \t")
            .replace(']', "\r\n]"),
    );
}

#[test]
fn thirty_one_or_thirty_three_elements_are_rejected() {
    agrees(&ids(31));
    agrees(&ids(33));
    assert!(reference(&ids(33)).is_none());
}

#[test]
fn an_element_above_255_is_rejected() {
    agrees(&ids(32).replacen("0,", "256,", 1));
}

#[test]
fn unusual_number_spellings_get_serde_json_s_answer() {
    for (from, to) in [
        ("0,", "-0,"),
        ("0,", "00,"),
        ("0,", "0.0,"),
        ("0,", "1e1,"),
        ("0,", "\"0\","),
    ] {
        agrees(&ids(32).replacen(from, to, 1));
    }
}

#[test]
fn non_arrays_are_rejected() {
    for text in ["{}", "null", "\"00\"", "7", "[[0]]"] {
        agrees(text);
    }
}

#[test]
fn node_ids_inside_records_read_in_any_key_order() {
    #[derive(serde::Deserialize)]
    struct R {
        a: NodeId,
        b: Option<NodeId>,
    }
    let text = format!("{{\"b\":{},\"a\":{}}}", ids(32), ids(32));
    let r: R = serde_json::from_str(&text).expect("record");
    assert_eq!(r.a, r.b.expect("b"));
    let r: R = serde_json::from_str(&format!("{{\"a\":{},\"b\":null}}", ids(32))).expect("null b");
    assert!(r.b.is_none());
}

#[test]
fn a_node_id_writes_as_32_integers_and_reads_back() {
    let id: NodeId = serde_json::from_str(&ids(32)).expect("read");
    assert_eq!(serde_json::to_string(&id).expect("write"), ids(32));
    assert_eq!(id.to_hex().to_node_id(), Ok(id));
}
