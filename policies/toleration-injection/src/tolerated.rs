//! What a workload will tolerate while tolerations are added to it: each addition only when
//! nothing tolerated already covers it, judged the way the scheduler matches.

use taintguard::toleration::{Coverage, Toleration};

/// A toleration to add, and why.
pub type Explained<'a> = (Toleration<'a>, String);

/// What the workload will tolerate, growing as tolerations are added: what it brings borrowed,
/// a toleration is copied only once chosen, not each time it is judged.
pub struct Tolerated<'g, 'a> {
    /// The workload's tolerations, then those PodTolerationRestriction appends.
    given: [&'g [Toleration<'a>]; 2],
    /// What is added, with why; `why` is only written for what is added.
    added: Vec<(Toleration<'a>, String)>,
    /// All of them indexed, once they are more than [`FEW`].
    coverage: Option<Coverage<'a>>,
}

/// Up to this many tolerations, one is judged against each in turn: the index's tables
/// (fingerprinted keys, their strings cloned in) cost flannel's DaemonSet 5.2k guest
/// instructions for five tolerations and two questions (benchmarks/cost.md, "Few
/// tolerations"). Past it, the index keeps a pod template of thousands linear.
pub const FEW: usize = 16;

impl<'g, 'a> Tolerated<'g, 'a> {
    pub fn new(given: [&'g [Toleration<'a>]; 2]) -> Self {
        let mut tolerated = Tolerated {
            given,
            added: Vec::new(),
            coverage: None,
        };
        tolerated.index_if_many();
        tolerated
    }

    fn len(&self) -> usize {
        self.given[0].len() + self.given[1].len() + self.added.len()
    }

    /// The `i`th toleration, in the order of [`Tolerated::iter`].
    pub fn get(&self, i: usize) -> Option<&Toleration<'a>> {
        let [workload, plugin] = self.given;
        let Some(i) = i.checked_sub(workload.len()) else {
            return workload.get(i);
        };
        let Some(i) = i.checked_sub(plugin.len()) else {
            return plugin.get(i);
        };
        self.added.get(i).map(|(t, _)| t)
    }

    /// Everything tolerated: what is given, then what is added.
    fn iter(&self) -> impl Iterator<Item = &Toleration<'a>> {
        let [workload, plugin] = self.given;
        let added = self.added.iter().map(|(t, _)| t);
        workload.iter().chain(plugin).chain(added)
    }

    /// Whether something tolerated already covers `t`.
    fn covers(&self, t: &Toleration<'_>) -> bool {
        match &self.coverage {
            Some(coverage) => coverage.covers(t),
            None => self.iter().any(|held| held.covers(t)),
        }
    }

    /// Adds `t`, unless something tolerated already covers it.
    pub fn add(&mut self, t: Toleration<'a>, why: impl FnOnce() -> String) {
        if self.covers(&t) {
            return;
        }
        if let Some(coverage) = &mut self.coverage {
            coverage.insert(&t);
        }
        self.added.push((t, why()));
        self.index_if_many();
    }

    /// Indexes what is tolerated once it is more than [`FEW`].
    fn index_if_many(&mut self) {
        if self.coverage.is_none() && self.len() > FEW {
            let mut coverage = Coverage::default();
            for t in self.iter() {
                coverage.insert(t);
            }
            self.coverage = Some(coverage);
        }
    }

    /// What was added, borrowing from the settings and the request as it did: made owned, the
    /// hostpath Pod's four copied their strings and freed them again, 2.4k guest instructions
    /// (benchmarks/cost.md, "JSONPath's text, a rule's reason and the arena's fitting path").
    pub fn into_added(self) -> Vec<Explained<'a>> {
        self.added
    }
}
