//! Paths an archive holds both as a regular file and as a directory (a directory entry, or the
//! parent of another entry), which extracting would turn from one into the other.

use std::collections::HashMap;

use super::{ReadError, ReadErrorKind, archive_location};

/// The path of one archive entry, for [`path_conflicts`].
pub(super) struct Node {
    /// The normalized name with each `/` turned into a NUL byte (which no name holds), so that
    /// sorting the keys puts every path right before the paths inside it. The name and the
    /// location are rebuilt from it for the few entries that conflict: an archive may hold
    /// hundreds of thousands of entries, and this list lives until the pass ends.
    key: Box<[u8]>,
    dir: bool,
    /// The entry's index among the indexed entries, which is also its place in the archive.
    at: usize,
    /// The name as the archive spells it, when that differs from the normalized name.
    spelled: Option<Box<str>>,
}

impl Node {
    pub(super) fn new(name: &str, dir: bool, at: usize, spelled: &str) -> Node {
        let key = name
            .bytes()
            .map(|b| if b == b'/' { 0 } else { b })
            .collect();
        Node {
            key,
            dir,
            at,
            spelled: (spelled != name).then(|| spelled.into()),
        }
    }

    /// The normalized name.
    fn name(&self) -> String {
        let bytes = self
            .key
            .iter()
            .map(|&b| if b == 0 { b'/' } else { b })
            .collect();
        // OK because the key came from a `&str` with only `/` bytes replaced.
        String::from_utf8(bytes).unwrap_or_default()
    }

    /// Where the entry is: `archive!name` as the archive spells the name.
    fn location(&self, archive: &str) -> String {
        match &self.spelled {
            Some(spelled) => archive_location(archive, spelled),
            None => archive_location(archive, &self.name()),
        }
    }
}

/// The entries whose path another entry earlier in the archive makes the other kind of thing: a
/// file at a path that is a directory (an entry of its own, or the parent of another entry), or a
/// directory entry or an entry inside a path that is a file. Keyed by the later entry's index,
/// one error each. Extracting such an archive turns one into the other (or fails), so what a
/// person extracts is not what the reader reads. Sorting the paths puts each path right before
/// the paths inside it, so one walk with a stack of the enclosing files finds every conflict in
/// `O(n log n)`, whatever the depth of the names.
pub(super) fn path_conflicts(nodes: &[Node], archive: &str) -> HashMap<usize, ReadError> {
    struct Frame {
        /// The node of this file.
        node: usize,
        /// The earliest file on the stack with a shorter path (an enclosing file).
        enclosing: Option<usize>,
        /// The earliest file on the stack up to and including this one.
        earliest: usize,
        /// The earliest entry inside this file's path or a directory entry at it.
        inside: Option<usize>,
    }
    let min = |a: Option<usize>, b: Option<usize>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let within = |outer: &[u8], path: &[u8]| {
        path.len() >= outer.len()
            && path.starts_with(outer)
            && (path.len() == outer.len() || path[outer.len()] == 0)
    };
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&nodes[a], &nodes[b]);
        (&a.key, a.dir, a.at).cmp(&(&b.key, b.dir, b.at))
    });
    let mut found: HashMap<usize, ReadError> = HashMap::new();
    let mut report = |node: &Node, message: String| {
        found.entry(node.at).or_insert_with(|| {
            ReadError::new(ReadErrorKind::PathConflict, node.location(archive), message)
                .about(node.name())
        });
    };
    let mut stack: Vec<Frame> = Vec::new();
    let close = |stack: &mut Vec<Frame>, report: &mut dyn FnMut(&Node, String)| {
        let frame = stack.pop().expect("OK because the stack is not empty");
        let file = &nodes[frame.node];
        if let Some(first) = frame.inside.filter(|&i| i < frame.node) {
            let earlier = &nodes[first];
            let message = if earlier.dir && earlier.key == file.key {
                format!(
                    "`{}` is a directory earlier in the archive; extracting this file would turn \
                     that directory into a file",
                    earlier.name()
                )
            } else {
                format!(
                    "`{}` earlier in the archive makes this path a directory; extracting this \
                     file would turn that directory into a file",
                    earlier.name()
                )
            };
            report(file, message);
        }
        if let Some(parent) = stack.last_mut() {
            parent.inside = min(parent.inside, frame.inside);
            if nodes[parent.node].key != file.key {
                parent.inside = min(parent.inside, Some(frame.node));
            }
        }
    };
    for i in order {
        let node = &nodes[i];
        while stack
            .last()
            .is_some_and(|top| !within(&nodes[top.node].key, &node.key))
        {
            close(&mut stack, &mut report);
        }
        let same = stack
            .last()
            .is_some_and(|top| nodes[top.node].key == node.key);
        let earlier_file = match stack.last() {
            None => None,
            Some(top) if same && !node.dir => top.enclosing,
            Some(top) => Some(top.earliest),
        };
        if let Some(file) = earlier_file.filter(|&f| f < i) {
            report(
                node,
                format!(
                    "`{}` is a file earlier in the archive; extracting this entry would turn that \
                     file into a directory",
                    nodes[file].name()
                ),
            );
        }
        if node.dir {
            if let Some(top) = stack.last_mut() {
                top.inside = min(top.inside, Some(i));
            }
        } else {
            let (enclosing, earliest) = match stack.last() {
                None => (None, i),
                Some(top) if same => (top.enclosing, top.earliest.min(i)),
                Some(top) => (Some(top.earliest), top.earliest.min(i)),
            };
            stack.push(Frame {
                node: i,
                enclosing,
                earliest,
                inside: None,
            });
        }
    }
    while !stack.is_empty() {
        close(&mut stack, &mut report);
    }
    found
}
