package main

// The transactions scenario: commit, abort, read_committed isolation, and offsets committed
// inside a transaction (franz-go sends them through a GroupTransactSession).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// readValues returns partition 0's values from the start: until `want` arrived, then a
// second more to catch any record that should not be there.
func readValues(t string, isolation kgo.IsolationLevel, want int) []string {
	cl := newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{t: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(isolation))
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fetches := cl.PollFetches(ctx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) >= want && deadline.Sub(time.Now()) > time.Second {
			deadline = time.Now().Add(time.Second)
		}
	}
	return got
}

func scenarioTransactions() {
	adm, admCl := newAdmin()
	defer admCl.Close()
	t, g := topic("t"), group("g")
	createTopic(adm, t, 1, nil)
	cl := newClient(kgo.TransactionalID(prefix+"-txn"), kgo.DefaultProduceTopic(t))
	txn := func(values []string, commit bool) {
		must(cl.BeginTransaction(), "begin transaction")
		for _, v := range values {
			must(cl.ProduceSync(ctxT(30*time.Second), &kgo.Record{Value: []byte(v), Partition: 0}).FirstErr(), "produce")
		}
		must(cl.EndTransaction(ctxT(30*time.Second), kgo.TransactionEndTry(commit)), "end transaction")
	}
	txn([]string{"c0", "c1"}, true) // c0 0, c1 1, COMMIT 2
	txn([]string{"a0"}, false)      // a0 3, ABORT 4
	txn([]string{"c2"}, true)       // c2 5, COMMIT 6
	txn([]string{"a1"}, false)      // a1 7, ABORT 8
	cl.Close()

	ends, err := adm.ListCommittedOffsets(ctxT(30*time.Second), t)
	must(err, "list committed offsets (LSO)")
	lso, _ := ends.Lookup(t, 0)
	check(lso.Offset == 9, "read_committed end offset (LSO): expected 9, got %d", lso.Offset)
	committed := readValues(t, kgo.ReadCommitted(), 3)
	check(equalStrings(committed, []string{"c0", "c1", "c2"}), "read_committed values: %v", committed)
	uncommitted := readValues(t, kgo.ReadUncommitted(), 5)
	check(equalStrings(uncommitted, []string{"c0", "c1", "a0", "c2", "a1"}), "read_uncommitted values: %v", uncommitted)

	// Read-process-write: the consumed offsets commit with the produced record.
	out := topic("out")
	createTopic(adm, out, 1, nil)
	sess, err := kgo.NewGroupTransactSession(append([]kgo.Opt{kgo.SeedBrokers(bootstrap),
		kgo.TransactionalID(prefix + "-rpw"), kgo.ConsumerGroup(g), kgo.ConsumeTopics(t),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic(out), kgo.RecordPartitioner(kgo.ManualPartitioner())}, securityOpts()...)...)
	must(err, "group transact session")
	defer sess.Close()
	var consumed []string
	deadline := time.Now().Add(30 * time.Second)
	for len(consumed) < 3 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fetches := sess.PollFetches(ctx)
		cancel()
		fetches.EachRecord(func(r *kgo.Record) { consumed = append(consumed, string(r.Value)) })
	}
	check(equalStrings(consumed, []string{"c0", "c1", "c2"}), "consumed in the session: %v", consumed)
	must(sess.Begin(), "begin session transaction")
	must(sess.ProduceSync(ctxT(30*time.Second), &kgo.Record{Value: []byte("copied"), Partition: 0}).FirstErr(), "produce")
	committedTxn, err := sess.End(ctxT(30*time.Second), kgo.TryCommit)
	must(err, "end session transaction")
	check(committedTxn, "the session transaction committed")
	offsets, err := adm.FetchOffsets(ctxT(30*time.Second), g)
	must(err, "fetch offsets")
	o, ok := offsets.Lookup(t, 0)
	check(ok && o.At == 6, "offset committed in the transaction: expected 6 (after c2), got %+v", o)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
