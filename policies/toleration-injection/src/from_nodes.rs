//! Tolerations from nodes: the taints the nodes a `nodeTaints` rule selects carry, listed once
//! per distinct node selector, and those a restriction withholds.

use std::cell::OnceCell;

use taintguard::cluster::{nodes_of_list, Cluster, ClusterError, ClusterNode};
use taintguard::toleration::Toleration;
use taintguard::verdict::Verdict;

use crate::restriction;
use crate::settings::{NodeTaints, Restriction, Rule};
use crate::tolerated::Explained;

/// What `nodeTaints` rules take from the nodes: tolerations to add, each with why (the rule and
/// a node carrying the taint), and those withheld because a restriction forbids them here.
#[derive(Default)]
pub struct FromNodes {
    pub found: Vec<Explained<'static>>,
    pub withheld: Vec<String>,
}

impl FromNodes {
    /// The tolerations of the taints `nodes` carry that `rule`'s `source` selects.
    fn take(
        &mut self,
        (rule, source): (&Rule, &NodeTaints),
        nodes: &[ClusterNode<'_>],
        restrictions: &[&Restriction],
    ) {
        for node in nodes {
            for taint in &node.taints {
                let (key, effect) = taint.identity();
                if !source.selects(key, effect) {
                    continue;
                }
                let toleration = Toleration::exists(key, effect);
                if self.found.iter().any(|(t, _)| *t == toleration) {
                    continue;
                }
                let why = format!("rule {:?}, node {} carries it", rule.name, node.name);
                if let Some(hit) = restriction::hit(restrictions, &toleration) {
                    let message = format!("{hit}, which {}", &why[..]);
                    if !self.withheld.contains(&message) {
                        self.withheld.push(message);
                    }
                    continue;
                }
                self.found.push((toleration, why));
            }
        }
    }
}

/// The `nodeTaints` rules among `rules`, each with its source and node selector query.
fn node_sources<'r>(rules: &[&'r Rule]) -> Vec<(&'r Rule, &'r NodeTaints, String)> {
    rules
        .iter()
        .filter_map(|rule| {
            let source = rule.node_taints.as_ref()?;
            let query = source
                .nodes
                .as_ref()
                .map(taintguard::label_selector::LabelSelector::to_query)
                .unwrap_or_default();
            Some((*rule, source, query))
        })
        .collect()
}

/// The tolerations the matching rules take from the taints nodes carry. One list call per
/// distinct node selector. A call that fails refuses the request (500): a rule that promised
/// these tolerations must not let the workload through without them (docs/context.md).
pub fn node_tolerations(
    rules: &[&Rule],
    cluster: &dyn Cluster,
    restrictions: &[&Restriction],
) -> Result<FromNodes, NodesUnanswered> {
    let mut from_nodes = FromNodes::default();
    let sources = node_sources(rules);
    // Each distinct selector is listed and read once, when the first rule with it is judged,
    // whichever rules share it. The nodes borrow the list's text, so both have a cell per
    // selector, set once.
    let mut queries: Vec<&str> = Vec::new();
    for (_, _, query) in &sources {
        if !queries.contains(&query.as_str()) {
            queries.push(query);
        }
    }
    let texts: Vec<OnceCell<String>> = queries.iter().map(|_| OnceCell::new()).collect();
    let lists: Vec<OnceCell<Vec<ClusterNode<'_>>>> =
        queries.iter().map(|_| OnceCell::new()).collect();
    for (rule, source, query) in &sources {
        let refused = |e: ClusterError| NodesUnanswered {
            unavailable: matches!(e, ClusterError::Unavailable(_)),
            refusal: Verdict::reject(
                500,
                format!(
                    "rule {:?} tolerates the taints of {}, but {e}. Nothing was \
                     injected; the request is refused rather than admitted without \
                     the tolerations the rule promises.",
                    rule.name,
                    describe_nodes(query),
                ),
            ),
        };
        let listed = queries
            .iter()
            .position(|q| q == query)
            .expect("every query is listed");
        let nodes = match lists[listed].get() {
            Some(nodes) => nodes,
            None => {
                let selector = (!query.is_empty()).then_some(query.as_str());
                let text = cluster.list_nodes(selector).map_err(refused)?;
                let nodes = nodes_of_list(texts[listed].get_or_init(|| text)).map_err(refused)?;
                lists[listed].get_or_init(|| nodes)
            }
        };
        from_nodes.take((rule, source), nodes, restrictions);
    }
    Ok(from_nodes)
}

/// Why the nodes' taints could not be read: whether the engine offers no way to read them, and
/// the refusal the request gets where a rule needs them.
pub struct NodesUnanswered {
    pub unavailable: bool,
    pub refusal: Verdict,
}

fn describe_nodes(query: &str) -> String {
    if query.is_empty() {
        "every node".to_owned()
    } else {
        format!("the nodes selected by {query:?}")
    }
}
