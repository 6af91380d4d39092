//! The expected lists are what Kafka 4.4's PersisterStateBatchCombiner returns for the same
//! input (run on a JVM).

use proptest::prelude::*;

use super::*;
use crate::state::{DeliveryState, StateBatch};

/// `(first, last, state id, delivery count)`, the order Kafka prints them in.
type Row = (i64, i64, i8, i16);

fn batches(rows: &[Row]) -> Vec<StateBatch> {
    rows.iter()
        .map(
            |&(first_offset, last_offset, state, delivery_count)| StateBatch {
                first_offset,
                last_offset,
                delivery_state: DeliveryState::from_id(state).unwrap_or(DeliveryState::Available),
                delivery_count,
            },
        )
        .collect()
}

#[test]
fn combined_lists_match_kafka() {
    #[allow(clippy::type_complexity)]
    let cases: &[(&[Row], &[Row], i64, &[Row])] = &[
        (&[], &[], -1, &[]),
        (&[(0, 10, 0, 1)], &[], -1, &[(0, 10, 0, 1)]),
        (&[(0, 10, 0, 1)], &[], 5, &[(5, 10, 0, 1)]),
        (&[(0, 10, 0, 1)], &[], 11, &[]),
        // Adjacent with the same state merge; a gap or another state keeps them apart.
        (&[(0, 10, 0, 1)], &[(11, 20, 0, 1)], -1, &[(0, 20, 0, 1)]),
        (
            &[(0, 10, 0, 1)],
            &[(12, 20, 0, 1)],
            -1,
            &[(0, 10, 0, 1), (12, 20, 0, 1)],
        ),
        (
            &[(0, 10, 0, 1)],
            &[(11, 20, 2, 1)],
            -1,
            &[(0, 10, 0, 1), (11, 20, 2, 1)],
        ),
        // The same offsets: the higher state wins, whichever came first.
        (&[(0, 10, 0, 1)], &[(0, 10, 2, 1)], -1, &[(0, 10, 2, 1)]),
        (&[(0, 10, 2, 1)], &[(0, 10, 0, 1)], -1, &[(0, 10, 2, 1)]),
        (&[(0, 10, 0, 1)], &[(0, 10, 0, 1)], -1, &[(0, 10, 0, 1)]),
        // A batch inside another splits it, or vanishes when it loses.
        (
            &[(0, 10, 0, 1)],
            &[(3, 5, 2, 1)],
            -1,
            &[(0, 2, 0, 1), (3, 5, 2, 1), (6, 10, 0, 1)],
        ),
        (&[(0, 10, 2, 1)], &[(3, 5, 0, 1)], -1, &[(0, 10, 2, 1)]),
        (
            &[(0, 10, 0, 1)],
            &[(3, 5, 0, 2)],
            -1,
            &[(0, 2, 0, 1), (3, 5, 0, 2), (6, 10, 0, 1)],
        ),
        // Partial overlaps on either side.
        (
            &[(0, 10, 0, 1)],
            &[(5, 15, 4, 1)],
            -1,
            &[(0, 4, 0, 1), (5, 15, 4, 1)],
        ),
        (
            &[(0, 10, 4, 1)],
            &[(5, 15, 0, 1)],
            -1,
            &[(0, 10, 4, 1), (11, 15, 0, 1)],
        ),
        (&[(0, 10, 0, 1)], &[(0, 15, 2, 1)], -1, &[(0, 15, 2, 1)]),
        (
            &[(0, 15, 0, 1)],
            &[(0, 10, 2, 1)],
            -1,
            &[(0, 10, 2, 1), (11, 15, 0, 1)],
        ),
        (
            &[(0, 10, 0, 1)],
            &[(5, 10, 2, 1)],
            -1,
            &[(0, 4, 0, 1), (5, 10, 2, 1)],
        ),
        // A higher delivery count beats a higher state.
        (&[(0, 10, 0, 3)], &[(5, 10, 2, 1)], -1, &[(0, 10, 0, 3)]),
        // Kafka's non-sequential update: moving the start offset past the first batch keeps
        // the second.
        (
            &[(100, 109, 0, 1), (110, 119, 0, 2), (120, 129, 0, 0)],
            &[(120, 129, 2, 1)],
            110,
            &[(110, 119, 0, 2), (120, 129, 2, 1)],
        ),
        (
            &[(0, 5, 0, 1), (10, 15, 0, 1)],
            &[(3, 12, 2, 2)],
            -1,
            &[(0, 2, 0, 1), (3, 12, 2, 2), (13, 15, 0, 1)],
        ),
        (
            &[(0, 5, 0, 1), (10, 15, 0, 1)],
            &[(6, 9, 0, 1)],
            -1,
            &[(0, 15, 0, 1)],
        ),
        (
            &[(0, 100, 0, 1)],
            &[(10, 20, 2, 1), (30, 40, 4, 1), (50, 60, 0, 2)],
            15,
            &[
                (15, 20, 2, 1),
                (21, 29, 0, 1),
                (30, 40, 4, 1),
                (41, 49, 0, 1),
                (50, 60, 0, 2),
                (61, 100, 0, 1),
            ],
        ),
        (
            &[(0, 10, 0, 1)],
            &[(20, 30, 0, 1), (5, 25, 2, 1)],
            -1,
            &[(0, 4, 0, 1), (5, 25, 2, 1), (26, 30, 0, 1)],
        ),
        (
            &[(5, 5, 0, 1)],
            &[(5, 5, 2, 1), (5, 5, 4, 1)],
            -1,
            &[(5, 5, 4, 1)],
        ),
        (
            &[(0, 10, 0, 1)],
            &[(2, 4, 2, 1), (6, 8, 2, 1)],
            3,
            &[(3, 4, 2, 1), (5, 5, 0, 1), (6, 8, 2, 1), (9, 10, 0, 1)],
        ),
    ];
    for (so_far, new, start_offset, expected) in cases {
        assert_eq!(
            combine_state_batches(&batches(so_far), &batches(new), *start_offset),
            batches(expected),
            "{so_far:?} + {new:?} from {start_offset}"
        );
    }
}

#[test]
fn a_batch_ending_before_it_starts_covers_nothing() {
    let combined = combine_state_batches(&batches(&[(0, 10, 0, 1)]), &batches(&[(8, 3, 4, 9)]), -1);
    assert_eq!(combined, batches(&[(0, 10, 0, 1)]));
}

fn arb_batch() -> impl Strategy<Value = Row> {
    (
        0i64..40,
        0i64..10,
        prop::sample::select(vec![0i8, 2, 4]),
        0i16..4,
    )
        .prop_map(|(first, len, state, count)| (first, first + len, state, count))
}

/// The meaning of the combiner, offset by offset: the best batch covering each offset.
fn model(rows: &[Row], start_offset: i64) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    for offset in 0..60 {
        if start_offset != -1 && offset < start_offset {
            continue;
        }
        let best = rows
            .iter()
            .filter(|(first, last, _, _)| *first <= offset && offset <= *last)
            .max_by_key(|(_, _, state, count)| (*count, *state));
        let Some(&(_, _, state, count)) = best else {
            continue;
        };
        match out.last_mut() {
            Some(last) if last.1 + 1 == offset && last.2 == state && last.3 == count => {
                last.1 = offset;
            }
            _ => out.push((offset, offset, state, count)),
        }
    }
    out
}

proptest! {
    #[test]
    fn every_offset_takes_the_best_covering_batch(
        so_far in prop::collection::vec(arb_batch(), 0..6),
        new in prop::collection::vec(arb_batch(), 0..6),
        start_offset in prop::sample::select(vec![-1i64, 0, 5, 17, 30]),
    ) {
        let all: Vec<Row> = so_far.iter().chain(&new).copied().collect();
        let combined = combine_state_batches(&batches(&so_far), &batches(&new), start_offset);
        let pruned_count = all
            .iter()
            .filter(|(_, last, _, _)| start_offset == -1 || *last >= start_offset)
            .count();
        // Kafka leaves a lone surviving batch as it is; with two or more, the result is the
        // offset-by-offset winner, coalesced.
        if pruned_count >= 2 {
            prop_assert_eq!(combined, batches(&model(&all, start_offset)));
        }
    }
}

fn parse_rows(text: &str) -> Vec<StateBatch> {
    let rows: Vec<Row> = text
        .split(';')
        .map(str::trim)
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let fields: Vec<i64> = piece
                .split(',')
                .map(|field| field.trim().parse().expect("a number"))
                .collect();
            (fields[0], fields[1], fields[2] as i8, fields[3] as i16)
        })
        .collect();
    batches(&rows)
}

/// Random inputs and the lists Kafka 4.4's combiner made of them, one a line:
/// `so far | new | start offset => combined`.
#[test]
fn random_lists_match_kafka() {
    let cases = include_str!("combiner_kafka_cases.txt");
    for line in cases.lines() {
        let (input, expected) = line.split_once("=>").expect("an arrow");
        let parts: Vec<&str> = input.split('|').collect();
        let start_offset: i64 = parts[2].trim().parse().expect("a start offset");
        assert_eq!(
            combine_state_batches(&parse_rows(parts[0]), &parse_rows(parts[1]), start_offset),
            parse_rows(expected),
            "{line}"
        );
    }
    assert_eq!(cases.lines().count(), 300);
}
