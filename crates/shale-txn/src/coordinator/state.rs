//! Transaction states and Kafka's legal transitions between them.

/// The state of a transactional id at its coordinator (Kafka's `TransactionState`; the ids
/// are the values stored in `__transaction_state` records).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    /// No transaction running (new, or after InitProducerId).
    Empty,
    /// Partitions were added; the transaction is running.
    Ongoing,
    /// EndTxn(commit) was logged; markers are being written.
    PrepareCommit,
    /// EndTxn(abort), a timeout or a fence was logged; markers are being written.
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    /// The transactional id expired and its tombstone is being written.
    Dead,
    /// An ongoing transaction is being aborted with a bumped epoch to fence its producer.
    /// Never logged: it is only ever a pending state on the way to `PrepareAbort`.
    PrepareEpochFence,
}

impl TxnState {
    pub const ALL: [TxnState; 8] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::Dead,
        TxnState::PrepareEpochFence,
    ];

    /// The state byte in `__transaction_state` values.
    pub fn id(self) -> u8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    pub fn from_id(id: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.id() == id)
    }

    /// The name DescribeTransactions and ListTransactions report.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.name() == name)
    }

    /// States from which this state may be entered (Kafka's `validPreviousStates`). The
    /// transitions from Empty and Complete* into PrepareAbort exist for transaction version
    /// 2 clients, which may abort without knowing whether a transaction is open.
    pub fn valid_previous_states(self) -> &'static [TxnState] {
        use TxnState::*;
        match self {
            Empty => &[Empty, CompleteCommit, CompleteAbort],
            Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
            PrepareCommit => &[Ongoing],
            PrepareAbort => &[
                Ongoing,
                PrepareEpochFence,
                Empty,
                CompleteCommit,
                CompleteAbort,
            ],
            CompleteCommit => &[PrepareCommit],
            CompleteAbort => &[PrepareAbort],
            Dead => &[Empty, CompleteAbort, CompleteCommit],
            PrepareEpochFence => &[Ongoing],
        }
    }

    pub fn can_transition_to(self, next: TxnState) -> bool {
        next.valid_previous_states().contains(&self)
    }

    /// Whether an idle transactional id in this state may expire.
    pub fn is_expiration_allowed(self) -> bool {
        matches!(
            self,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_names_round_trip() {
        for state in TxnState::ALL {
            assert_eq!(TxnState::from_id(state.id()), Some(state));
            assert_eq!(TxnState::from_name(state.name()), Some(state));
        }
        assert_eq!(TxnState::from_id(8), None);
        assert_eq!(TxnState::from_name("Stable"), None);
    }

    #[test]
    fn transition_table_matches_kafka() {
        use TxnState::*;
        // Every legal (from, to) pair; everything else must be refused.
        let legal = [
            (Empty, Empty),
            (CompleteCommit, Empty),
            (CompleteAbort, Empty),
            (Ongoing, Ongoing),
            (Empty, Ongoing),
            (CompleteCommit, Ongoing),
            (CompleteAbort, Ongoing),
            (Ongoing, PrepareCommit),
            (Ongoing, PrepareAbort),
            (PrepareEpochFence, PrepareAbort),
            (Empty, PrepareAbort),
            (CompleteCommit, PrepareAbort),
            (CompleteAbort, PrepareAbort),
            (PrepareCommit, CompleteCommit),
            (PrepareAbort, CompleteAbort),
            (Empty, Dead),
            (CompleteAbort, Dead),
            (CompleteCommit, Dead),
            (Ongoing, PrepareEpochFence),
        ];
        for from in TxnState::ALL {
            for to in TxnState::ALL {
                assert_eq!(
                    from.can_transition_to(to),
                    legal.contains(&(from, to)),
                    "{from:?} -> {to:?}"
                );
            }
        }
        // Dead and the prepare states lead nowhere but forward.
        assert!(TxnState::ALL.iter().all(|&to| !Dead.can_transition_to(to)));
    }

    #[test]
    fn only_idle_states_expire() {
        let expiring: Vec<_> = TxnState::ALL
            .into_iter()
            .filter(|s| s.is_expiration_allowed())
            .collect();
        assert_eq!(
            expiring,
            vec![
                TxnState::Empty,
                TxnState::CompleteCommit,
                TxnState::CompleteAbort
            ]
        );
    }
}
