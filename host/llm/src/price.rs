//! Estimated cost of a call, from list prices in USD per million tokens (input, output).
//! Estimates only: prices change, and cached or batched tokens cost less.

use crate::Usage;

/// Longest prefix first, so that `gpt-4o-mini` is not priced as `gpt-4o`.
const PRICES: &[(&str, f64, f64)] = &[
    ("claude-opus-4-5", 5.0, 25.0),
    ("claude-opus-4", 15.0, 75.0),
    ("claude-sonnet-4", 3.0, 15.0),
    ("claude-3-7-sonnet", 3.0, 15.0),
    ("claude-3-5-sonnet", 3.0, 15.0),
    ("claude-haiku-4", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("gpt-5-nano", 0.05, 0.4),
    ("gpt-5-mini", 0.25, 2.0),
    ("gpt-5", 1.25, 10.0),
    ("gpt-4.1-nano", 0.1, 0.4),
    ("gpt-4.1-mini", 0.4, 1.6),
    ("gpt-4.1", 2.0, 8.0),
    ("gpt-4o-mini", 0.15, 0.6),
    ("gpt-4o", 2.5, 10.0),
    ("o4-mini", 1.1, 4.4),
    ("o3", 2.0, 8.0),
];

/// None for a model the table does not list (local models cost nothing we can know).
pub fn estimate(model: &str, usage: &Usage) -> Option<f64> {
    let (_, input, output) = PRICES
        .iter()
        .filter(|(prefix, _, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())?;
    Some((usage.input_tokens as f64 * input + usage.output_tokens as f64 * output) / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_listed_prefix_prices_a_model() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
        };
        assert_eq!(estimate("gpt-4o-mini-2024-07-18", &usage), Some(0.75));
        assert_eq!(estimate("gpt-4o", &usage), Some(12.5));
        assert_eq!(estimate("claude-sonnet-4-5", &usage), Some(18.0));
        assert_eq!(estimate("llama3.2", &usage), None);
    }
}
