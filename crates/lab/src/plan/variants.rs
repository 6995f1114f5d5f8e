//! `[[variants]]`: what differs between the load points' variants (a recipe, a method, headers,
//! a body), each named once.

use std::path::Path;

use super::raw::RawVariant;
use super::{slug, Doc, PlanError, Variant};

impl Doc<'_> {
    pub(super) fn variants(&self, raw: Vec<RawVariant>, dir: &Path) -> Result<Vec<Variant>, PlanError> {
        let mut variants = Vec::new();
        for (i, v) in raw.into_iter().enumerate() {
            let clash = |o: &Variant| slug(&o.name) == slug(&v.name);
            if variants.iter().any(clash) || slug(&v.name).is_empty() {
                return Err(PlanError {
                    file: self.file.into(),
                    line: self.nth_table_line("[[variants]]", i),
                    message: format!(
                        "variants: name {:?} is empty or used twice (names differing only in case or punctuation count as one)",
                        v.name
                    ),
                });
            }
            let recipe = match v.recipe.as_deref() {
                Some(r) => Some(
                    self.file("variants.recipe", dir, r)
                        .map_err(|e| PlanError { line: self.nth_table_line("[[variants]]", i), ..e })?,
                ),
                None => None,
            };
            variants.push(Variant {
                name: v.name,
                recipe,
                method: v.method,
                headers: v.headers,
                body: v.body.map(String::into_bytes),
            });
        }
        Ok(variants)
    }
}
