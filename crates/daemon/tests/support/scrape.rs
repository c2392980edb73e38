//! `/metrics` text as a scraper reads it: parsed by a strict OpenMetrics parser
//! (`openmetrics-parser`, which conforms to the OpenMetrics test suite), so a malformed line, a
//! counter without `_total`, a histogram without `+Inf` or a missing `# EOF` fails the test.
//!
//! Shared by the daemon's integration tests and its unit tests (included by path there).

#![allow(dead_code)] // Each includer uses a different part.

use std::collections::{BTreeMap, BTreeSet};

use openmetrics_parser::{OpenMetricsType, OpenMetricsValue};

/// What a scrape holds, by family name (counters without `_total`).
pub struct Scrape {
    pub families: BTreeMap<String, Family>,
}

/// One metric family.
pub struct Family {
    pub kind: OpenMetricsType,
    /// Its label names, in order.
    pub labels: Vec<String>,
    pub series: Vec<Series>,
}

/// One series of a family.
pub struct Series {
    pub labels: BTreeMap<String, String>,
    pub value: OpenMetricsValue,
}

impl Scrape {
    /// Parses `text`; panics, showing the text, if it is not valid OpenMetrics.
    pub fn parse(text: &str) -> Scrape {
        let exposition = openmetrics_parser::openmetrics::parse_openmetrics(text)
            .unwrap_or_else(|e| panic!("not valid OpenMetrics ({e}):\n{text}"));
        let families = exposition
            .families
            .into_iter()
            .map(|(name, f)| {
                let labels = f.get_label_names().to_vec();
                let series = f
                    .iter_samples()
                    .map(|s| Series {
                        labels: s
                            .get_labelset()
                            .expect("a parsed sample has label names")
                            .iter()
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect(),
                        value: s.value.clone(),
                    })
                    .collect();
                (
                    name,
                    Family {
                        kind: f.family_type,
                        labels,
                        series,
                    },
                )
            })
            .collect();
        Scrape { families }
    }

    /// The family `name`; panics if absent.
    pub fn family(&self, name: &str) -> &Family {
        self.families.get(name).unwrap_or_else(|| {
            panic!(
                "no family {name} among {:?}",
                self.families.keys().collect::<Vec<_>>()
            )
        })
    }

    /// The series of `name` whose labels include `labels`; panics unless exactly one matches.
    pub fn series(&self, name: &str, labels: &[(&str, &str)]) -> &Series {
        let matching: Vec<&Series> = self
            .family(name)
            .series
            .iter()
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .collect();
        assert_eq!(
            matching.len(),
            1,
            "{name}{labels:?}: {} series match",
            matching.len()
        );
        matching[0]
    }

    /// The value of a gauge or counter series (see [`Scrape::series`]).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        number(name, &self.series(name, labels).value)
    }

    /// The value of a gauge or counter series, if the scrape has exactly one matching.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let f = self.families.get(name)?;
        let mut matching = f.series.iter().filter(|s| {
            labels
                .iter()
                .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        });
        match (matching.next(), matching.next()) {
            (Some(s), None) => Some(number(name, &s.value)),
            _ => None,
        }
    }

    /// The number of observations of a histogram series (see [`Scrape::series`]).
    pub fn observations(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match &self.series(name, labels).value {
            OpenMetricsValue::Histogram(h) => {
                let count = h.count.expect("a histogram has a count");
                let inf = h
                    .buckets
                    .iter()
                    .find(|b| b.upper_bound.is_infinite())
                    .expect("a +Inf bucket");
                assert_eq!(
                    inf.count.as_f64(),
                    count as f64,
                    "{name}: +Inf is the count"
                );
                count
            }
            v => panic!("{name} is not a histogram: {v:?}"),
        }
    }

    /// Every sample name the text has, as PromQL sees them (`x_total`, `x_bucket`, …).
    pub fn sample_names(&self) -> BTreeSet<String> {
        let mut names = BTreeSet::new();
        for (name, f) in &self.families {
            let suffixes: &[&str] = match f.kind {
                OpenMetricsType::Counter => &["_total"],
                OpenMetricsType::Histogram => &["_bucket", "_sum", "_count"],
                _ => &[""],
            };
            for s in suffixes {
                names.insert(format!("{name}{s}"));
            }
        }
        names
    }
}

fn number(name: &str, v: &OpenMetricsValue) -> f64 {
    match v {
        OpenMetricsValue::Gauge(n) | OpenMetricsValue::Unknown(n) => n.as_f64(),
        OpenMetricsValue::Counter(c) => c.value.as_f64(),
        v => panic!("{name} is not a gauge or counter: {v:?}"),
    }
}
