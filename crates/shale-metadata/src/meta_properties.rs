//! `meta.properties`, as Kafka keeps it in every log directory: the cluster id and node id the
//! directory belongs to. A directory of another cluster or node makes the node refuse to start.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::error::MetadataError;

pub const META_PROPERTIES: &str = "meta.properties";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    pub version: i32,
    pub cluster_id: String,
    pub node_id: i32,
    pub directory_id: Option<String>,
}

/// Kafka's textual form of a UUID: URL-safe base64 without padding (22 characters).
pub fn uuid_to_base64(id: Uuid) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = id.as_bytes();
    let mut out = String::with_capacity(22);
    for chunk in bytes.chunks(3) {
        let b0 = chunk[0] as u32;
        let b1 = chunk.get(1).copied().unwrap_or(0) as u32;
        let b2 = chunk.get(2).copied().unwrap_or(0) as u32;
        let n = (b0 << 16) | (b1 << 8) | b2;
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// A fresh cluster id in Kafka's format (never starting with '-').
pub fn random_cluster_id() -> String {
    loop {
        let id = uuid_to_base64(Uuid::new_v4());
        if !id.starts_with('-') {
            return id;
        }
    }
}

fn parse(text: &str, path: &Path) -> Result<MetaProperties, MetadataError> {
    let mut props = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            props.insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    let bad =
        |what: &str| MetadataError::InconsistentStorage(format!("{what} in {}", path.display()));
    let version = props
        .get("version")
        .and_then(|v| v.parse::<i32>().ok())
        .ok_or_else(|| bad("missing or invalid version"))?;
    if version != 1 {
        return Err(bad(&format!(
            "unsupported meta.properties version {version} (only KRaft version 1 is supported)"
        )));
    }
    let cluster_id = props
        .get("cluster.id")
        .filter(|v| !v.is_empty())
        .cloned()
        .ok_or_else(|| bad("missing cluster.id"))?;
    let node_id = props
        .get("node.id")
        .and_then(|v| v.parse::<i32>().ok())
        .ok_or_else(|| bad("missing or invalid node.id"))?;
    Ok(MetaProperties {
        version,
        cluster_id,
        node_id,
        directory_id: props.get("directory.id").cloned(),
    })
}

/// Reads `meta.properties` of `dir`; `None` when the directory has none.
pub fn read(dir: &Path) -> Result<Option<MetaProperties>, MetadataError> {
    let path = dir.join(META_PROPERTIES);
    match fs::read_to_string(&path) {
        Ok(text) => parse(&text, &path).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(MetadataError::io(&format!("read {}", path.display()), e)),
    }
}

/// Writes `meta.properties` durably (temporary file, fsync, rename, directory fsync).
pub fn write(dir: &Path, props: &MetaProperties) -> Result<(), MetadataError> {
    let path = dir.join(META_PROPERTIES);
    let mut text = String::from("#\n#Written by Shale\n");
    text.push_str(&format!("cluster.id={}\n", props.cluster_id));
    if let Some(dir_id) = &props.directory_id {
        text.push_str(&format!("directory.id={dir_id}\n"));
    }
    text.push_str(&format!("node.id={}\n", props.node_id));
    text.push_str(&format!("version={}\n", props.version));
    shale_durable::replace_file(&path, text.as_bytes())
        .map_err(|e| MetadataError::io("write", e.into()))
}

/// Checks that `id` is a cluster id as Kafka writes them: a UUID in URL-safe base64 without
/// padding (what `shale random-uuid` and `kafka-storage.sh random-uuid` print).
pub fn validate_cluster_id(id: &str) -> Result<(), MetadataError> {
    let valid = id.len() == 22
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(MetadataError::InvalidRequest(format!(
            "cluster id {id:?} is not a UUID in Kafka's form (22 URL-safe base64 characters, as \
             `shale random-uuid` prints)"
        )))
    }
}

/// Formats log directories for a node of cluster `cluster_id`, as `kafka-storage.sh format`:
/// writes `meta.properties` in every directory that has none. A directory already formatted is
/// an error unless `ignore_formatted`; even then it must belong to the same cluster and node.
/// Returns the directories written.
pub fn format(
    dirs: &[PathBuf],
    node_id: i32,
    cluster_id: &str,
    ignore_formatted: bool,
) -> Result<Vec<PathBuf>, MetadataError> {
    validate_cluster_id(cluster_id)?;
    let mut missing = Vec::new();
    for dir in dirs {
        fs::create_dir_all(dir)
            .map_err(|e| MetadataError::io(&format!("create {}", dir.display()), e))?;
        match read(dir)? {
            None => missing.push(dir.clone()),
            Some(_) if !ignore_formatted => {
                return Err(MetadataError::InconsistentStorage(format!(
                    "log directory {} is already formatted; use --ignore-formatted to skip \
                     formatted directories and format the others",
                    dir.display()
                )))
            }
            Some(props) if props.cluster_id != cluster_id => {
                return Err(MetadataError::InconsistentStorage(format!(
                    "log directory {} is formatted for cluster {}, not {cluster_id}: it belongs \
                     to another cluster",
                    dir.display(),
                    props.cluster_id
                )))
            }
            Some(props) if props.node_id != node_id => {
                return Err(MetadataError::InconsistentStorage(format!(
                    "log directory {} is formatted for node {}, not {node_id}",
                    dir.display(),
                    props.node_id
                )))
            }
            Some(_) => {}
        }
    }
    for dir in &missing {
        write(
            dir,
            &MetaProperties {
                version: 1,
                cluster_id: cluster_id.to_string(),
                node_id,
                directory_id: Some(uuid_to_base64(Uuid::new_v4())),
            },
        )?;
    }
    Ok(missing)
}

/// Checks every directory against each other, the configured cluster id and the node id;
/// writes `meta.properties` where missing. Returns the cluster id.
///
/// With `require_formatted`, a node whose directories hold no `meta.properties` at all and that
/// is given no cluster id refuses to start instead of making up a cluster id: nodes of a
/// multi-node cluster must share one, as Kafka's format step ensures.
pub fn ensure(
    dirs: &[PathBuf],
    node_id: i32,
    configured_cluster_id: Option<&str>,
    require_formatted: bool,
) -> Result<String, MetadataError> {
    let mut found: Vec<(PathBuf, MetaProperties)> = Vec::new();
    let mut missing = Vec::new();
    for dir in dirs {
        fs::create_dir_all(dir)
            .map_err(|e| MetadataError::io(&format!("create {}", dir.display()), e))?;
        match read(dir)? {
            Some(props) => found.push((dir.clone(), props)),
            None => missing.push(dir.clone()),
        }
    }
    for (dir, props) in &found {
        if props.node_id != node_id {
            return Err(MetadataError::InconsistentStorage(format!(
                "Stored node id {} doesn't match the configured node id {node_id} in {}. This \
                 directory belongs to another node; if you moved your data, make sure your \
                 configured node id matches.",
                props.node_id,
                dir.join(META_PROPERTIES).display()
            )));
        }
    }
    let mut cluster_id = configured_cluster_id.map(str::to_string);
    for (dir, props) in &found {
        match &cluster_id {
            Some(expected) if *expected != props.cluster_id => {
                return Err(MetadataError::InconsistentStorage(format!(
                    "Invalid cluster.id in {}: expected {expected}, but read {}. This directory \
                     belongs to another cluster; refusing to start.",
                    dir.join(META_PROPERTIES).display(),
                    props.cluster_id
                )));
            }
            Some(_) => {}
            None => cluster_id = Some(props.cluster_id.clone()),
        }
    }
    let cluster_id = match cluster_id {
        Some(id) => id,
        None if require_formatted => {
            let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            return Err(MetadataError::InconsistentStorage(format!(
                "no meta.properties in {}: a node of a metadata quorum must be formatted with \
                 its cluster's id before it starts: run `shale format --config <file> \
                 --cluster-id <id>` with the same id on every node (`shale random-uuid` makes \
                 one), or set CLUSTER_ID",
                dirs.join(", ")
            )));
        }
        None => random_cluster_id(),
    };
    for dir in missing {
        write(
            &dir,
            &MetaProperties {
                version: 1,
                cluster_id: cluster_id.clone(),
                node_id,
                directory_id: Some(uuid_to_base64(Uuid::new_v4())),
            },
        )?;
    }
    Ok(cluster_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_kafka() {
        // Kafka prints the UUID with all bits zero as "AAAAAAAAAAAAAAAAAAAAAA".
        assert_eq!(uuid_to_base64(Uuid::nil()), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(uuid_to_base64(Uuid::from_u128(1)), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(random_cluster_id().len(), 22);
    }

    #[test]
    fn ensure_writes_then_checks() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("a");
        let b = root.path().join("b");
        let id = ensure(&[a.clone(), b.clone()], 1, None, false).unwrap();
        assert_eq!(read(&a).unwrap().unwrap().cluster_id, id);
        assert_eq!(read(&b).unwrap().unwrap().node_id, 1);
        // Same node again: accepted, same cluster.
        assert_eq!(ensure(&[a.clone(), b.clone()], 1, None, true).unwrap(), id);
        // A directory added later joins the cluster.
        let c = root.path().join("c");
        assert_eq!(ensure(&[a.clone(), c.clone()], 1, None, true).unwrap(), id);

        let err = ensure(std::slice::from_ref(&a), 2, None, false).unwrap_err();
        assert!(matches!(err, MetadataError::InconsistentStorage(ref m) if m.contains("node id")));
        let err = ensure(std::slice::from_ref(&a), 1, Some("other-cluster"), false).unwrap_err();
        assert!(
            matches!(err, MetadataError::InconsistentStorage(ref m) if m.contains("another cluster"))
        );

        // Two directories from different clusters.
        let d = root.path().join("d");
        ensure(std::slice::from_ref(&d), 1, Some("zzz"), false).unwrap();
        assert!(ensure(&[a, d], 1, None, false).is_err());
    }

    #[test]
    fn unformatted_quorum_nodes_refuse_to_start() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("a");
        let err = ensure(std::slice::from_ref(&a), 1, None, true).unwrap_err();
        assert!(err.to_string().contains("shale format"), "{err}");
        assert!(read(&a).unwrap().is_none());
        // A configured id formats on the way (what CLUSTER_ID does).
        let id = random_cluster_id();
        assert_eq!(
            ensure(std::slice::from_ref(&a), 1, Some(&id), true).unwrap(),
            id
        );
    }

    #[test]
    fn format_writes_once_and_checks_what_it_finds() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("a");
        let b = root.path().join("b");
        let id = random_cluster_id();
        validate_cluster_id(&id).unwrap();
        assert!(validate_cluster_id("not-a-uuid").is_err());
        // Kafka's documentation example.
        validate_cluster_id("MkU3OEVBNTcwNTJENDM2Qk").unwrap();
        assert!(format(std::slice::from_ref(&a), 1, "not-a-uuid", false).is_err());

        assert_eq!(
            format(std::slice::from_ref(&a), 3, &id, false).unwrap(),
            vec![a.clone()]
        );
        let err = format(std::slice::from_ref(&a), 3, &id, false).unwrap_err();
        assert!(err.to_string().contains("--ignore-formatted"), "{err}");
        // Ignoring formatted directories still formats new ones.
        assert_eq!(
            format(&[a.clone(), b.clone()], 3, &id, true).unwrap(),
            vec![b.clone()]
        );
        assert_eq!(read(&b).unwrap().unwrap().cluster_id, id);
        let other = random_cluster_id();
        let err = format(std::slice::from_ref(&a), 3, &other, true).unwrap_err();
        assert!(err.to_string().contains("another cluster"), "{err}");
        let err = format(std::slice::from_ref(&a), 4, &id, true).unwrap_err();
        assert!(err.to_string().contains("node 3"), "{err}");
        assert_eq!(ensure(&[a, b], 3, None, true).unwrap(), id);
    }
}
