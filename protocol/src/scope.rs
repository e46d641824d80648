//! Scope resolution (reference-behaviour D2–D3) over a route-floor table the app supplies.
//! Scope shapes discovery only; it is never an authority boundary.

/// The app's route → scope-floor table, plus the shell token that is always part of a
/// non-empty scope (`app` in the demo, whose table is host-server's `demo::route_floors`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteFloors {
    pub shell_token: String,
    /// `(route, tokens)` pairs, e.g. `("/receivables/pending", ["invoices", ...])`.
    pub routes: Vec<(String, Vec<String>)>,
}

impl RouteFloors {
    pub fn new<R, T>(
        shell_token: impl Into<String>,
        routes: impl IntoIterator<Item = (R, Vec<T>)>,
    ) -> Self
    where
        R: Into<String>,
        T: Into<String>,
    {
        Self {
            shell_token: shell_token.into(),
            routes: routes
                .into_iter()
                .map(|(route, tokens)| (route.into(), tokens.into_iter().map(Into::into).collect()))
                .collect(),
        }
    }

    /// The floor for a pathname: exact match first, otherwise the longest route whose
    /// `<route>/` prefixes the pathname (so `/a/b/42` inherits `/a/b`, `/a/b-x` does not);
    /// the shell token is prepended when absent. No match gives `[]` (unscoped).
    pub fn floor(&self, pathname: &str) -> Vec<String> {
        let mut exact = None;
        // The longest prefixing route; of equally long ones the last, as `max_by_key` chose.
        let mut longest: Option<(usize, &Vec<String>)> = None;
        for (route, tokens) in &self.routes {
            if route == pathname {
                exact = Some(tokens);
                break;
            }
            let prefixes = pathname.len() > route.len()
                && pathname.starts_with(route.as_str())
                && pathname.as_bytes()[route.len()] == b'/';
            if prefixes && longest.is_none_or(|(len, _)| route.len() >= len) {
                longest = Some((route.len(), tokens));
            }
        }
        let Some(tokens) = exact.or(longest.map(|(_, tokens)| tokens)) else {
            return Vec::new();
        };
        let mut floor = Vec::with_capacity(tokens.len() + 1);
        if !tokens.contains(&self.shell_token) {
            floor.push(self.shell_token.clone());
        }
        floor.extend(tokens.iter().cloned());
        floor
    }

    /// The effective scope for a pathname and the browser's request (D3).
    pub fn resolve(&self, pathname: &str, requested: Option<&[String]>) -> Vec<String> {
        resolve_scope(&self.floor(pathname), requested, &self.shell_token)
    }
}

/// D3: an empty floor is unscoped (the request is ignored); an absent or empty request gets
/// the floor; otherwise the floor tokens (in floor order) that the request names, falling
/// back to the whole floor when none match, with the shell token prepended. It can only
/// narrow, never widen.
pub fn resolve_scope(
    floor: &[String],
    requested: Option<&[String]>,
    shell_token: &str,
) -> Vec<String> {
    if floor.is_empty() {
        return Vec::new();
    }
    let requested = match requested {
        Some(r) if !r.is_empty() => r,
        _ => return floor.to_vec(),
    };
    let kept: Vec<String> = floor
        .iter()
        .filter(|t| requested.contains(t))
        .cloned()
        .collect();
    if kept.is_empty() {
        return floor.to_vec();
    }
    if kept.iter().any(|t| t == shell_token) {
        kept
    } else {
        let mut scoped = Vec::with_capacity(kept.len() + 1);
        scoped.push(shell_token.to_owned());
        scoped.extend(kept);
        scoped
    }
}

#[cfg(test)]
mod tests {
    use crate::test_support::reference_route_floors;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn d2_floors() {
        let t = reference_route_floors();
        assert_eq!(
            t.floor("/receivables/pending"),
            s(&["app", "invoices", "reporting", "collections"])
        );
        assert_eq!(
            t.floor("/receivables/all"),
            s(&["app", "invoices", "reporting"])
        );
        assert_eq!(
            t.floor("/receivables/clients/42"),
            s(&["app", "clients", "invoices"])
        );
        assert_eq!(
            t.floor("/receivables/pending-archive"),
            Vec::<String>::new()
        );
        assert_eq!(t.floor("/architecture"), s(&["app"]));
        assert_eq!(t.floor("/"), Vec::<String>::new());
        assert_eq!(t.floor(""), Vec::<String>::new());
    }

    #[test]
    fn d3_verified_examples() {
        let t = reference_route_floors();
        assert_eq!(
            t.resolve("/receivables/pending", Some(&s(&["invoices"]))),
            s(&["app", "invoices"])
        );
        assert_eq!(
            t.resolve("/receivables/pending", Some(&s(&["bogus"]))),
            s(&["app", "invoices", "reporting", "collections"])
        );
        assert_eq!(
            t.resolve("/receivables/clients/42", None),
            s(&["app", "clients", "invoices"])
        );
        assert_eq!(
            t.resolve("/", Some(&s(&["invoices"]))),
            Vec::<String>::new()
        );
    }

    #[test]
    fn d3_narrowing_only() {
        let t = reference_route_floors();
        // An empty request means "no request".
        assert_eq!(
            t.resolve("/receivables/all", Some(&[])),
            s(&["app", "invoices", "reporting"])
        );
        // Tokens outside the floor never widen it; floor order wins over request order.
        assert_eq!(
            t.resolve(
                "/receivables/all",
                Some(&s(&["reporting", "clients", "invoices"]))
            ),
            s(&["app", "invoices", "reporting"])
        );
        assert_eq!(
            t.resolve("/receivables/all", Some(&s(&["app"]))),
            s(&["app"])
        );
        // v1 has an empty pathname: unscoped.
        assert_eq!(t.resolve("", Some(&s(&["invoices"]))), Vec::<String>::new());
    }
}
