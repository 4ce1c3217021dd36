//! The local file system as a query's tables see it: only the part files the dataset's index
//! lists. DataFusion's listing tables find their files by listing folders; this store wraps the
//! local one and leaves every other file out of a listing, so a part a killed writer left behind,
//! or a file someone copied into a partition folder, is never read. Reading a listed file goes
//! to the local store unchanged. (A wrapper of a few lines rather than a table provider of our
//! own: the listing table keeps its partition columns, pruning and statistics.)

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// A store that lists only `files` of `inner`.
#[derive(Debug)]
pub struct Listed {
    inner: Arc<dyn ObjectStore>,
    files: Arc<BTreeSet<Path>>,
}

impl Listed {
    /// `inner` showing only `files` (their store paths) in a listing.
    pub fn new(inner: Arc<dyn ObjectStore>, files: BTreeSet<Path>) -> Listed {
        Listed {
            inner,
            files: Arc::new(files),
        }
    }
}

impl fmt::Display for Listed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Listed({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Listed {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn delete(&self, location: &Path) -> Result<()> {
        self.inner.delete(location).await
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let files = Arc::clone(&self.files);
        self.inner
            .list(prefix)
            .filter(move |m| {
                // An error of the listing goes on to the table, which reports it.
                let keep = match m {
                    Ok(m) => files.contains(&m.location),
                    Err(_) => true,
                };
                futures::future::ready(keep)
            })
            .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let mut listed = self.inner.list_with_delimiter(prefix).await?;
        listed.objects.retain(|m| self.files.contains(&m.location));
        Ok(listed)
    }

    async fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.copy(from, to).await
    }

    async fn copy_if_not_exists(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.copy_if_not_exists(from, to).await
    }
}
