//! Local relevance ranking (BM25 over weighted fields), for finding saved workflows and node
//! types by what they do, without an LLM: `find`, `registry find` and the planner's catalog.
//!
//! A document is a few fields of text, each with a weight (a workflow's name counts more than
//! its description). Terms are lower-cased words split at anything not alphanumeric, so
//! `fetch-github-issues` and `fetch_github_issues` are the words `fetch`, `github`, `issues`;
//! a plural `s` is dropped so that `issue` finds `issues`.

use std::collections::HashMap;

/// BM25's term-frequency saturation and length normalisation, at their usual values.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Words that say nothing about what a workflow or node does.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "from", "into", "by",
    "is", "it", "its", "that", "this", "then", "them", "each", "all", "are", "be", "as", "at",
    "use", "using", "my", "me", "i",
];

/// Short forms and near-synonyms in the vocabulary of workflows, each to the words it means.
const SYNONYMS: &[(&str, &str)] = &[
    ("pr", "pull request"),
    ("prs", "pull request"),
    ("repo", "repository"),
    ("db", "database"),
    ("photo", "image"),
    ("picture", "image"),
    ("img", "image"),
    ("pic", "image"),
    ("smaller", "resize"),
    ("shrink", "resize"),
    ("site", "website"),
    ("doc", "document"),
    ("msg", "message"),
    ("mail", "email"),
    ("gh", "github"),
];

/// The words of `text` that count for ranking: lower-cased, split at anything not
/// alphanumeric, stop words dropped, short forms spelled out, stemmed (Snowball English, so
/// `summary` and `summarize` meet).
pub fn terms(text: &str) -> Vec<String> {
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    let mut terms = Vec::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
    {
        let spelled = SYNONYMS
            .iter()
            .find(|(short, _)| *short == word)
            .map_or(word.as_str(), |(_, long)| long);
        for word in spelled.split(' ') {
            if !STOP_WORDS.contains(&word) {
                terms.push(stemmer.stem(word).into_owned());
            }
        }
    }
    terms
}

/// One document's terms with their weighted frequencies, and its weighted length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Weighed {
    pub terms: HashMap<String, f64>,
    pub length: f64,
}

/// A document given as `(text, weight)` fields, weighed for ranking.
pub fn weigh<'a>(fields: impl IntoIterator<Item = (&'a str, f64)>) -> Weighed {
    let mut weighed = Weighed::default();
    for (text, weight) in fields {
        for term in terms(text) {
            *weighed.terms.entry(term).or_default() += weight;
            weighed.length += weight;
        }
    }
    weighed
}

/// Documents indexed for ranking.
pub struct Ranker {
    /// Per document: weighted frequency of each term.
    documents: Vec<HashMap<String, f64>>,
    lengths: Vec<f64>,
    average_length: f64,
    /// In how many documents each term appears.
    document_frequency: HashMap<String, usize>,
}

impl Ranker {
    /// Indexes documents given as `(text, weight)` fields.
    pub fn new<'a>(documents: impl IntoIterator<Item = Vec<(&'a str, f64)>>) -> Ranker {
        Ranker::from_weighed(documents.into_iter().map(weigh))
    }

    /// Indexes documents already weighed with [`weigh`] (kept from an earlier run).
    pub fn from_weighed(documents: impl IntoIterator<Item = Weighed>) -> Ranker {
        let mut indexed = Vec::new();
        let mut lengths = Vec::new();
        let mut document_frequency: HashMap<String, usize> = HashMap::new();
        for Weighed { terms, length } in documents {
            for term in terms.keys() {
                *document_frequency.entry(term.clone()).or_default() += 1;
            }
            indexed.push(terms);
            lengths.push(length);
        }
        let average_length = if lengths.is_empty() {
            0.0
        } else {
            lengths.iter().sum::<f64>() / lengths.len() as f64
        };
        Ranker {
            documents: indexed,
            lengths,
            average_length,
            document_frequency,
        }
    }

    /// The documents that share a term with `query`, best first (ties in document order), with
    /// their scores.
    pub fn rank(&self, query: &str) -> Vec<(usize, f64)> {
        let mut query_terms = terms(query);
        query_terms.sort();
        query_terms.dedup();
        let count = self.documents.len() as f64;
        let mut scored: Vec<(usize, f64)> = self
            .documents
            .iter()
            .enumerate()
            .filter_map(|(index, frequencies)| {
                let length_factor = if self.average_length > 0.0 {
                    1.0 - B + B * self.lengths[index] / self.average_length
                } else {
                    1.0
                };
                let score: f64 = query_terms
                    .iter()
                    .filter_map(|term| {
                        let frequency = *frequencies.get(term)?;
                        let documents_with = self.document_frequency[term] as f64;
                        let idf =
                            (1.0 + (count - documents_with + 0.5) / (documents_with + 0.5)).ln();
                        Some(idf * frequency * (K1 + 1.0) / (frequency + K1 * length_factor))
                    })
                    .sum();
                (score > 0.0).then_some((index, score))
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_weigh_more_and_plurals_and_separators_match() {
        let ranker = Ranker::new([
            vec![
                ("summarize-report", 3.0),
                ("Summarizes a weekly report about issues", 1.0),
            ],
            vec![
                ("fetch-github-issues", 3.0),
                ("Lists the open issues of a repository", 1.0),
            ],
            vec![
                ("resize_images", 3.0),
                ("Resizes every image in a folder", 1.0),
            ],
        ]);
        let ranked = ranker.rank("get the GitHub issue list");
        assert_eq!(ranked[0].0, 1, "{ranked:?}");
        assert_eq!(ranker.rank("resize image")[0].0, 2);
        assert!(ranker.rank("the and of").is_empty());
    }
}
