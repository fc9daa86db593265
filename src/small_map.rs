//! A map for the few keys a request usually holds that stays linear for the many it may hold.

use std::collections::HashMap;
use std::hash::Hash;

/// Up to this many entries a map is a vector searched in order: real objects carry a handful of
/// taints or tolerations, and hashing each lookup key with SipHash costs more than comparing
/// fingerprints with every entry. Past it, a hash map keeps huge lists linear: a Node or pod
/// template at etcd's 1.5 MiB limit holds ~25,000 entries, and SipHash keeps lookups linear
/// against keys chosen to collide.
const SMALL: usize = 16;

/// A map that is a vector while small and a hash map past `SMALL` (16) entries.
#[derive(Debug)]
pub enum SmallMap<K, V> {
    /// Each entry with its key's `fingerprint`: a lookup compares keys only where the
    /// fingerprints agree. On a Node update with ten taints, taint-preservation's identity sets
    /// cost as much whether they hashed with SipHash or compared keys byte by byte (wasm's
    /// `memcmp` is a byte loop); fingerprints took that off (benchmarks/cost.md, "What each
    /// change bought").
    Small(Vec<(u64, K, V)>),
    /// Past `SMALL` entries: a hash map, whose SipHash keeps lookups linear against keys chosen
    /// to collide.
    Large(HashMap<K, V>),
}

/// A fingerprint of `key`, for telling small-map keys apart before comparing them
/// ([`SmallKey::print`]). Not for the hash map: keys chosen to collide would make it quadratic
/// there; here they only cost a comparison each.
fn fingerprint<K: SmallKey>(key: &K) -> u64 {
    key.print()
}

/// How a [`SmallMap`] tells apart keys whose fingerprints agree: as `==` does, but strings are
/// compared eight bytes at a time. `==` on strings calls wasi-libc's `memcmp` in a waPC module,
/// a byte at a time, which made the identity sets' comparisons a large part of a Node status
/// update (benchmarks/cost.md, "Decision work, measured per function").
///
/// And how it fingerprints them: keys that are the same have the same print, and most that are
/// not, not. A string's is its length and its first and last eight bytes: rustc's FxHash goes
/// four bytes a step on wasm32 and hashes a terminator (benchmarks/cost.md, "Short copies").
pub trait SmallKey: Eq + Hash {
    /// Whether the keys are the same, as `==` answers.
    fn same(&self, other: &Self) -> bool;
    /// The key's fingerprint: the same for keys that are the same.
    fn print(&self) -> u64;
}

impl SmallKey for usize {
    fn same(&self, other: &usize) -> bool {
        self == other
    }

    fn print(&self) -> u64 {
        *self as u64
    }
}

impl<A: AsRef<str> + Eq + Hash, B: AsRef<str> + Eq + Hash> SmallKey for (A, B) {
    fn same(&self, other: &Self) -> bool {
        same_str(self.0.as_ref(), other.0.as_ref()) && same_str(self.1.as_ref(), other.1.as_ref())
    }

    fn print(&self) -> u64 {
        mix(str_print(self.0.as_ref()), str_print(self.1.as_ref()))
    }
}

impl<A, B, C> SmallKey for (A, B, C)
where
    A: AsRef<str> + Eq + Hash,
    B: AsRef<str> + Eq + Hash,
    C: AsRef<str> + Eq + Hash,
{
    fn same(&self, other: &Self) -> bool {
        same_str(self.0.as_ref(), other.0.as_ref())
            && same_str(self.1.as_ref(), other.1.as_ref())
            && same_str(self.2.as_ref(), other.2.as_ref())
    }

    fn print(&self) -> u64 {
        let first = mix(str_print(self.0.as_ref()), str_print(self.1.as_ref()));
        mix(first, str_print(self.2.as_ref()))
    }
}

/// Two prints in one (FxHash's step: rotate, xor, multiply).
fn mix(a: u64, b: u64) -> u64 {
    (a.rotate_left(5) ^ b).wrapping_mul(0xf135_7aea_2e62_a9c5)
}

/// A string's print: its length, its first eight bytes and its last eight (overlapping when
/// shorter than sixteen; those of a shorter string than eight, one by one).
fn str_print(s: &str) -> u64 {
    let b = s.as_bytes();
    let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default());
    let (head, tail) = match b.len() {
        8.. => (word(0), word(b.len() - 8)),
        _ => (b.iter().fold(0, |acc, &x| acc << 8 | u64::from(x)), 0),
    };
    mix(mix(b.len() as u64, head), tail)
}

/// `a == b`, eight bytes at a time.
fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let ((a_words, a_rest), (b_words, b_rest)) = (a.as_chunks::<8>(), b.as_chunks::<8>());
    let word = |w: &[u8; 8]| u64::from_ne_bytes(*w);
    (a_words.iter().zip(b_words)).all(|(x, y)| word(x) == word(y))
        && (a_rest.iter().zip(b_rest)).all(|(x, y)| x == y)
}

/// A set: a [`SmallMap`] to nothing.
pub type SmallSet<K> = SmallMap<K, ()>;

impl<K, V> Default for SmallMap<K, V> {
    fn default() -> Self {
        SmallMap::Small(Vec::new())
    }
}

impl<K: SmallKey, V> SmallMap<K, V> {
    /// The value of `key`, inserted as `value` when new (the value already there stays).
    pub fn entry(&mut self, key: K, value: V) -> &mut V {
        // One scan of a small map: where the key is, or that it is new.
        let print = fingerprint(&key);
        let mut found = None;
        if let SmallMap::Small(entries) = self {
            found = entries
                .iter()
                .position(|(p, k, _)| *p == print && k.same(&key));
            if found.is_none() && entries.len() >= SMALL {
                *self = SmallMap::Large(hashed(entries));
            }
        }
        match self {
            SmallMap::Small(entries) => match found {
                Some(at) => &mut entries[at].2,
                None => {
                    entries.push((print, key, value));
                    &mut entries.last_mut().expect("just pushed").2
                }
            },
            SmallMap::Large(map) => map.entry(key).or_insert(value),
        }
    }

    /// Sets `key` to `value`; whether `key` is new (as `HashSet::insert` answers).
    pub fn insert(&mut self, key: K, value: V) -> bool {
        match self {
            SmallMap::Small(entries) => {
                let print = fingerprint(&key);
                if let Some(slot) = entries
                    .iter_mut()
                    .find(|(p, k, _)| *p == print && k.same(&key))
                {
                    slot.2 = value;
                    return false;
                }
                entries.push((print, key, value));
                if entries.len() > SMALL {
                    *self = SmallMap::Large(hashed(entries));
                }
                true
            }
            SmallMap::Large(map) => map.insert(key, value).is_none(),
        }
    }

    /// The value of `key`, if it has one.
    pub fn get(&self, key: &K) -> Option<&V> {
        match self {
            // Nothing to hash the key for: sets are often empty (no taint stripped, none owned).
            SmallMap::Small(entries) if entries.is_empty() => None,
            SmallMap::Small(entries) => {
                let print = fingerprint(key);
                entries
                    .iter()
                    .find(|(p, k, _)| *p == print && k.same(key))
                    .map(|(_, _, v)| v)
            }
            SmallMap::Large(map) => map.get(key),
        }
    }

    /// Whether `key` has a value: in a set, whether it is in it.
    pub fn contains(&self, key: &K) -> bool {
        self.get(key).is_some()
    }
}

/// The entries of a small map that has outgrown [`SMALL`], taken into a hash map.
fn hashed<K: Eq + Hash, V>(entries: &mut Vec<(u64, K, V)>) -> HashMap<K, V> {
    std::mem::take(entries)
        .into_iter()
        .map(|(_, k, v)| (k, v))
        .collect()
}

impl<K: SmallKey, V> FromIterator<(K, V)> for SmallMap<K, V> {
    /// The last value of a key given twice wins, as in a `HashMap`.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut map = SmallMap::default();
        for (key, value) in entries {
            map.insert(key, value);
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small or large, the map answers what a `HashMap` answers.
    #[test]
    fn answers_as_a_hash_map_across_the_switch() {
        let mut small = SmallMap::default();
        let mut hashed = HashMap::new();
        for i in 0..(3 * SMALL) {
            let key = i % (2 * SMALL);
            assert_eq!(small.insert(key, i), hashed.insert(key, i).is_none(), "{i}");
            *small.entry(key + 1, 0) += 1;
            *hashed.entry(key + 1).or_insert(0) += 1;
            for probe in 0..(2 * SMALL + 2) {
                assert_eq!(small.get(&probe), hashed.get(&probe), "{i} {probe}");
            }
        }
        assert!(matches!(small, SmallMap::Large(_)));
        let set: SmallSet<usize> = [1, 2, 1].into_iter().map(|k| (k, ())).collect();
        assert!(set.contains(&1) && set.contains(&2) && !set.contains(&3));
    }

    /// String keys are the same exactly when `==` says so, whatever their lengths and wherever
    /// they differ.
    #[test]
    fn string_keys_are_compared_as_eq_compares_them() {
        let texts = [
            "",
            "a",
            "ab",
            "abcdefg",
            "abcdefgh",
            "abcdefghi",
            "abcdefgi",
            "bbcdefgh",
        ];
        let long: Vec<String> = (0..20).map(|i| format!("{}{i}", "k".repeat(i))).collect();
        let all: Vec<&str> = texts
            .iter()
            .copied()
            .chain(long.iter().map(String::as_str))
            .collect();
        for a in &all {
            for b in &all {
                assert_eq!(same_str(a, b), a == b, "{a:?} {b:?}");
                assert_eq!((*a, *b).same(&(*b, *a)), (a, b) == (b, a), "{a:?} {b:?}");
            }
        }
    }
}
