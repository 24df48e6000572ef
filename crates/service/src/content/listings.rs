//! Rendered folder listings, kept per node and trusted only at the generation they were
//! rendered at.
//!
//! Every record a listing shows comes from the listed folder's owner's trees: the children,
//! their current versions, their members, the path down to the folder and the memberships that
//! give the caller their role. Triggers move the owner's `content_accounts.generation` on with
//! every change to any of these (migration 000020), in the transaction of the change. A listing
//! is served from here only when the generation read before the lookup is the one it was
//! rendered at, so a change on any node shows in the next listing on every node. Renders that
//! race a change are stored under the generation read before them, which the change has already
//! left behind: they are never served.
//!
//! The cache holds at most [`CAPACITY`] bytes of rendered records; the least recently served
//! listings go first, and a listing larger than a quarter of it is not kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use coffer_domain::content::Access;
use coffer_store::content::ChildQuery;
use serde_json::value::RawValue;

use crate::platform::views::Listed;

/// A page of rendered records.
#[derive(Debug)]
pub struct Page {
    pub listed: Listed<Box<RawValue>>,
    /// The response body the HTTP layer made of this page when it first served it: a kept page
    /// is turned into bytes once, whatever the number of times it is served.
    pub body: std::sync::OnceLock<bytes::Bytes>,
}

impl Page {
    pub fn new(listed: Listed<Box<RawValue>>) -> Page {
        Page {
            listed,
            body: std::sync::OnceLock::new(),
        }
    }
}

/// The bytes of rendered records a node keeps.
pub const CAPACITY: usize = 32 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    folder: String,
    user: String,
    access: Access,
    query: ChildQuery,
}

impl Key {
    pub fn new(folder: &str, user: &str, access: Access, q: &ChildQuery) -> Key {
        Key {
            folder: folder.to_string(),
            user: user.to_string(),
            access,
            query: q.clone(),
        }
    }

    fn size(&self) -> usize {
        // The query's own bytes are few and bounded; counted as a fixed overhead.
        self.folder.len() + self.user.len() + 256
    }
}

struct Entry {
    generation: i64,
    page: Arc<Page>,
    bytes: usize,
    used: u64,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Key, Entry>,
    bytes: usize,
    tick: u64,
}

/// See the module docs.
pub struct ListingCache {
    capacity: usize,
    inner: Mutex<Inner>,
}

impl Default for ListingCache {
    fn default() -> Self {
        ListingCache::with_capacity(CAPACITY)
    }
}

impl std::fmt::Debug for ListingCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListingCache")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl ListingCache {
    pub fn with_capacity(capacity: usize) -> ListingCache {
        ListingCache {
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave an entry half made: keep serving.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The listing rendered at `generation`, if kept; an older one is dropped.
    pub fn get(&self, key: &Key, generation: i64) -> Option<Arc<Page>> {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        match inner.entries.get_mut(key) {
            Some(e) if e.generation == generation => {
                e.used = tick;
                Some(e.page.clone())
            }
            Some(_) => {
                if let Some(old) = inner.entries.remove(key) {
                    inner.bytes -= old.bytes;
                }
                None
            }
            None => None,
        }
    }

    /// Keeps a listing rendered from state at least as new as `generation`.
    pub fn put(&self, key: Key, generation: i64, page: Arc<Page>) {
        let bytes = key.size()
            + page
                .listed
                .items
                .iter()
                .map(|r| r.get().len() + 16)
                .sum::<usize>();
        if bytes > self.capacity / 4 {
            return;
        }
        let mut inner = self.lock();
        inner.tick += 1;
        let used = inner.tick;
        if let Some(old) = inner.entries.insert(
            key,
            Entry {
                generation,
                page,
                bytes,
                used,
            },
        ) {
            inner.bytes -= old.bytes;
        }
        inner.bytes += bytes;
        while inner.bytes > self.capacity {
            let Some(oldest) = inner
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = inner.entries.remove(&oldest) {
                inner.bytes -= e.bytes;
            }
        }
    }

    /// The bytes kept now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(n: usize, width: usize) -> Arc<Page> {
        let items = (0..n)
            .map(|i| RawValue::from_string(format!("\"{}\"", "x".repeat(width + i % 2))).unwrap())
            .collect();
        Arc::new(Page::new(Listed {
            items,
            total: n as i64,
            offset: 0,
            limit: n as i64,
        }))
    }

    fn key(folder: &str) -> Key {
        Key::new(folder, "u", Access::Owner, &ChildQuery::default())
    }

    #[test]
    fn served_only_at_the_generation_rendered() {
        let cache = ListingCache::with_capacity(1 << 20);
        cache.put(key("a"), 7, page(3, 10));
        assert_eq!(cache.get(&key("a"), 7).unwrap().listed.items.len(), 3);
        // Another user, role or query is another listing.
        assert!(cache
            .get(
                &Key::new("a", "v", Access::Owner, &ChildQuery::default()),
                7
            )
            .is_none());
        assert!(cache
            .get(
                &Key::new("a", "u", Access::Role(4), &ChildQuery::default()),
                7
            )
            .is_none());
        let q = ChildQuery {
            offset: 1,
            ..ChildQuery::default()
        };
        assert!(cache
            .get(&Key::new("a", "u", Access::Owner, &q), 7)
            .is_none());
        // A newer generation drops it.
        assert!(cache.get(&key("a"), 8).is_none());
        assert!(cache.get(&key("a"), 7).is_none());
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn bounded_least_recently_served_first() {
        let cache = ListingCache::with_capacity(6000);
        for k in ["a", "b", "c", "d"] {
            cache.put(key(k), 1, page(10, 100));
        }
        assert!(cache.get(&key("a"), 1).is_some());
        cache.put(key("e"), 1, page(10, 100));
        assert!(cache.bytes() <= 6000);
        // "b" was served least recently.
        assert!(cache.get(&key("b"), 1).is_none());
        for k in ["a", "c", "d", "e"] {
            assert!(cache.get(&key(k), 1).is_some(), "{k}");
        }
        // Too large for a quarter of the capacity: not kept.
        cache.put(key("f"), 1, page(20, 100));
        assert!(cache.get(&key("f"), 1).is_none());
    }
}
