//! A `List` as the cluster answers it, read into the items a policy reads of each object.

use serde::Deserialize;

use super::{ClusterError, ResourceKind};

/// `items` is required (a `null` list is empty): without it, an answer that is not a list at all
/// (`{}`, `[]`) would read as "no objects".
#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
struct ListText<T> {
    #[serde(deserialize_with = "null_as_default")]
    items: Vec<T>,
}

/// Reads `null` as the type's default, as Kubernetes writes an empty list.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// The items of `text`, the answer to a [`List`](super::List) of `kind`, each read as a `T`
/// (borrowing the text, so a policy reads only the fields it declares in `T`); `null` items is
/// an empty list.
///
/// # Errors
///
/// An answer that is not such a list ([`ClusterError::Failed`], naming `kind`): a policy must
/// not read "no objects" into an answer it cannot read.
///
/// # Examples
///
/// ```
/// use serde::Deserialize;
/// use taintguard::cluster::{list_items, ResourceKind};
/// use taintguard::json::JsonStr;
///
/// #[derive(Deserialize)]
/// struct Named<'a> {
///     #[serde(borrow)]
///     metadata: Metadata<'a>,
/// }
/// #[derive(Deserialize)]
/// struct Metadata<'a> {
///     #[serde(borrow)]
///     name: JsonStr<'a>,
/// }
///
/// const CONFIG_MAP: ResourceKind = ResourceKind::new("v1", "ConfigMap");
/// let text = r#"{"kind": "List", "items": [{"metadata": {"name": "limits"}}]}"#;
/// let items: Vec<Named> = list_items(text, CONFIG_MAP).unwrap();
/// assert_eq!(items[0].metadata.name.as_str(), "limits");
/// assert!(list_items::<Named>(r#"{"items": null}"#, CONFIG_MAP).unwrap().is_empty());
/// let Err(error) = list_items::<Named>("{}", CONFIG_MAP) else { panic!("{{}} is no list") };
/// assert_eq!(
///     error.to_string(),
///     "asking the cluster failed: the list of v1/ConfigMap cannot be read: missing field `items` at line 1 column 2"
/// );
/// ```
pub fn list_items<'a, T: Deserialize<'a>>(
    text: &'a str,
    kind: ResourceKind<'_>,
) -> Result<Vec<T>, ClusterError> {
    serde_json::from_str::<ListText<T>>(text)
        .map(|list| list.items)
        .map_err(|e| unreadable_list(kind, e))
}

/// The error of a list of `kind` that cannot be read, and why.
pub(crate) fn unreadable_list(kind: ResourceKind<'_>, why: impl std::fmt::Display) -> ClusterError {
    ClusterError::Failed(format!("the list of {kind} cannot be read: {why}"))
}
