// franz-go scenarios of the Shale compatibility suite.
//
// Usage: compat-franz --version | --bootstrap HOST:PORT --scenario NAME --prefix PREFIX
// Exit code: 0 pass, 77 not applicable, anything else fail.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	notApplicable      = 77
	largeValueBytes    = 1_000_000
	tooLargeValueBytes = 1_200_000
)

var (
	bootstrap string
	prefix    string
)

type errNotApplicable struct{ reason string }

func (e errNotApplicable) Error() string { return e.reason }

func fail(format string, args ...any) { panic(fmt.Errorf(format, args...)) }

func check(cond bool, format string, args ...any) {
	if !cond {
		fail(format, args...)
	}
}

func must(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func waitUntil(timeout time.Duration, what string, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	fail("timed out after %v waiting for %s", timeout, what)
}

func topic(suffix string) string { return prefix + "-" + suffix }
func group(suffix string) string { return prefix + "-" + suffix + "-group" }

func ctxT(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	_ = cancel // released when the process exits; every scenario is a short-lived process
	return ctx
}

func newClient(opts ...kgo.Opt) *kgo.Client {
	base := []kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.RequestTimeoutOverhead(20 * time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner())}
	base = append(base, securityOpts()...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	must(err, "new client")
	return cl
}

func newAdmin() (*kadm.Client, *kgo.Client) {
	cl := newClient()
	return kadm.NewClient(cl), cl
}

func hasLeaders(adm *kadm.Client, t string, partitions int) bool {
	details, err := adm.ListTopics(ctxT(10*time.Second), t)
	if err != nil {
		return false
	}
	d, ok := details[t]
	if !ok || d.Err != nil || len(d.Partitions) != partitions {
		return false
	}
	for _, p := range d.Partitions {
		if p.Leader < 0 {
			return false
		}
	}
	return true
}

func createTopic(adm *kadm.Client, t string, partitions int, configs map[string]*string) {
	resp, err := adm.CreateTopics(ctxT(30*time.Second), int32(partitions), 1, configs, t)
	must(err, "create topics")
	must(resp[t].Err, "create topic "+t)
	waitUntil(20*time.Second, "leaders for "+t, func() bool { return hasLeaders(adm, t, partitions) })
}

type rec struct {
	key, value []byte
	headers    []kgo.RecordHeader
	ts         time.Time
}

// makeRecords mirrors python/common.py make_records.
func makeRecords(n int) []rec {
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	out := make([]rec, n)
	for i := 0; i < n; i++ {
		r := rec{ts: base.Add(time.Duration(i) * time.Second)}
		if i%4 != 0 {
			r.key = append([]byte{byte(i), 0, 255, 128}, []byte(fmt.Sprintf("key-%d", i))...)
		}
		if i != 5 {
			r.value = make([]byte, 1+i*37)
			for j := range r.value {
				r.value[j] = byte((i*7 + j) % 256)
			}
		}
		if i%3 != 0 {
			r.headers = []kgo.RecordHeader{{Key: "h1", Value: []byte(fmt.Sprintf("v%d", i))},
				{Key: "h-bin", Value: []byte{0, 1, 2, 255}}, {Key: "h1", Value: []byte("dup")}}
		}
		out[i] = r
	}
	return out
}

func produce(cl *kgo.Client, t string, recs []rec) []int64 {
	krs := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: t, Partition: 0, Key: r.key, Value: r.value, Headers: r.headers, Timestamp: r.ts}
	}
	results := cl.ProduceSync(ctxT(30*time.Second), krs...)
	must(results.FirstErr(), "produce")
	offsets := make([]int64, len(results))
	for i, res := range results {
		offsets[i] = res.Record.Offset
	}
	return offsets
}

func consumeAssigned(t string, partition int32, n int) []*kgo.Record {
	cl := newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{t: {partition: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	var got []*kgo.Record
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		fs := cl.PollFetches(ctxT(2 * time.Second))
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				fail("fetch error %s[%d]: %v", e.Topic, e.Partition, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	return got
}

func compare(expected []rec, got []*kgo.Record, what string) {
	check(len(got) == len(expected), "%s: count %d != %d", what, len(got), len(expected))
	for i, e := range expected {
		g := got[i]
		check(g.Offset == int64(i), "%s[%d]: offset %d", what, i, g.Offset)
		check(bytes.Equal(g.Key, e.key) && (g.Key == nil) == (e.key == nil), "%s[%d]: key %v != %v", what, i, g.Key, e.key)
		check(bytes.Equal(g.Value, e.value) && (g.Value == nil) == (e.value == nil), "%s[%d]: value differs (null %v vs %v)",
			what, i, g.Value == nil, e.value == nil)
		check(g.Timestamp.Equal(e.ts), "%s[%d]: timestamp %v != %v", what, i, g.Timestamp, e.ts)
		check(len(g.Headers) == len(e.headers), "%s[%d]: header count %d != %d", what, i, len(g.Headers), len(e.headers))
		for h := range e.headers {
			check(g.Headers[h].Key == e.headers[h].Key && bytes.Equal(g.Headers[h].Value, e.headers[h].Value),
				"%s[%d]: header %d differs", what, i, h)
		}
	}
}

// ---------- scenarios ----------

func scenarioMetadata() {
	adm, cl := newAdmin()
	defer cl.Close()
	md, err := adm.BrokerMetadata(ctxT(30 * time.Second))
	must(err, "metadata")
	check(len(md.Brokers) == 1, "broker count %d", len(md.Brokers))
	b := md.Brokers[0]
	check(fmt.Sprintf("%s:%d", b.Host, b.Port) == bootstrap, "advertised %s:%d", b.Host, b.Port)
	check(md.Controller == b.NodeID, "controller %d", md.Controller)
	versions, err := adm.ApiVersions(ctxT(30 * time.Second))
	must(err, "api versions")
	versions.Each(func(v kadm.BrokerApiVersions) {
		must(v.Err, "api versions of broker")
		for _, key := range []int16{0, 1, 3, 18} { // Produce, Fetch, Metadata, ApiVersions
			_, max, ok := v.KeyVersions(key)
			check(ok && max >= 0, "key %d advertised", key)
		}
	})
	t := topic("t")
	createTopic(adm, t, 3, nil)
	details, err := adm.ListTopics(ctxT(10*time.Second), t)
	must(err, "list topics")
	check(len(details[t].Partitions) == 3, "partitions %d", len(details[t].Partitions))
	check(details[t].ID != [16]byte{}, "topic id assigned")
}

func scenarioTopics() {
	adm, cl := newAdmin()
	defer cl.Close()
	t := topic("t")
	ret := "123456789"
	createTopic(adm, t, 2, map[string]*string{"retention.ms": &ret})
	resp, err := adm.CreateTopics(ctxT(30*time.Second), 1, 1, nil, t)
	must(err, "create again")
	check(errors.Is(resp[t].Err, kerr.TopicAlreadyExists), "duplicate create: %v", resp[t].Err)
	pr, err := adm.UpdatePartitions(ctxT(30*time.Second), 5, t)
	must(err, "update partitions")
	must(pr[t].Err, "update partitions of "+t)
	waitUntil(20*time.Second, "5 partitions", func() bool { return hasLeaders(adm, t, 5) })
	dr, err := adm.DeleteTopics(ctxT(30*time.Second), t)
	must(err, "delete")
	must(dr[t].Err, "delete "+t)
	waitUntil(20*time.Second, "topic gone", func() bool {
		d, err := adm.ListTopics(ctxT(10*time.Second), t)
		return err == nil && (d[t].Err != nil || len(d[t].Partitions) == 0)
	})
	dr, err = adm.DeleteTopics(ctxT(30*time.Second), t)
	must(err, "delete again")
	check(errors.Is(dr[t].Err, kerr.UnknownTopicOrPartition), "delete missing topic: %v", dr[t].Err)
}

func codecOf(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

func scenarioCodecs() {
	adm, acl := newAdmin()
	defer acl.Close()
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t := topic(codec)
		createTopic(adm, t, 1, nil)
		recs := makeRecords(12)
		cl := newClient(kgo.ProducerBatchCompression(codecOf(codec)), kgo.ProducerLinger(50*time.Millisecond))
		offsets := produce(cl, t, recs)
		cl.Close()
		for i, o := range offsets {
			check(o == int64(i), "%s: offset %d", codec, o)
		}
		compare(recs, consumeAssigned(t, 0, len(recs)), codec)
		fmt.Println(codec, "ok")
	}
}

func scenarioLarge() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 1, nil)
	r := rec{key: []byte("big"), value: make([]byte, largeValueBytes), ts: time.Now().Truncate(time.Millisecond),
		headers: []kgo.RecordHeader{{Key: "h", Value: []byte("1")}}}
	for i := range r.value {
		r.value[i] = byte(i % 251)
	}
	cl := newClient(kgo.ProducerBatchMaxBytes(2_000_000))
	produce(cl, t, []rec{r})
	cl.Close()
	compare([]rec{r}, consumeAssigned(t, 0, 1), "large")
}

func scenarioIdempotent() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 1, nil)
	cl := newClient(kgo.RequiredAcks(kgo.AllISRAcks())) // idempotent by default
	recs := make([]rec, 500)
	for i := range recs {
		recs[i] = rec{value: []byte(fmt.Sprintf("m-%d", i)), ts: time.Now()}
	}
	offsets := produce(cl, t, recs)
	cl.Close()
	for i, o := range offsets {
		check(o == int64(i), "offset %d at %d", o, i)
	}
	got := consumeAssigned(t, 0, 500)
	check(len(got) == 500, "count %d", len(got))
	for i, g := range got {
		check(string(g.Value) == fmt.Sprintf("m-%d", i), "value %d", i)
		check(g.ProducerID >= 0, "record carries a producer id")
	}
}

func fill(adm *kadm.Client, t string, partitions, perPartition int) {
	createTopic(adm, t, partitions, nil)
	cl := newClient()
	defer cl.Close()
	var krs []*kgo.Record
	for p := 0; p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			krs = append(krs, &kgo.Record{Topic: t, Partition: int32(p), Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	must(cl.ProduceSync(ctxT(30*time.Second), krs...).FirstErr(), "fill")
}

func groupClient(t, g string, opts ...kgo.Opt) *kgo.Client {
	base := []kgo.Opt{kgo.ConsumeTopics(t), kgo.ConsumerGroup(g), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.FetchMaxWait(300 * time.Millisecond)}
	return newClient(append(base, opts...)...)
}

func pollN(cl *kgo.Client, n int) []*kgo.Record {
	var got []*kgo.Record
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		fs := cl.PollRecords(ctxT(time.Second), n-len(got))
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	return got
}

func scenarioGroup() {
	adm, acl := newAdmin()
	defer acl.Close()
	t, g := topic("t"), group("g")
	fill(adm, t, 2, 10)
	cl := groupClient(t, g)
	first := pollN(cl, 8)
	check(len(first) == 8, "first batch %d", len(first))
	must(cl.CommitRecords(ctxT(30*time.Second), first...), "commit")
	cl.LeaveGroup()
	cl.Close()
	offsets, err := adm.FetchOffsets(ctxT(30*time.Second), g)
	must(err, "fetch offsets")
	var sum int64
	offsets.Each(func(o kadm.OffsetResponse) { must(o.Err, "offset"); sum += o.At })
	check(sum == 8, "committed sum %d", sum)
	cl = groupClient(t, g)
	rest := pollN(cl, 12)
	check(len(rest) == 12, "after resume %d", len(rest))
	seen := map[string]bool{}
	for _, r := range append(first, rest...) {
		seen[fmt.Sprintf("%d:%d", r.Partition, r.Offset)] = true
	}
	check(len(seen) == 20, "each record once: %d", len(seen))
	must(cl.CommitUncommittedOffsets(ctxT(30*time.Second)), "commit")
	cl.LeaveGroup()
	cl.Close()
	described, err := adm.DescribeGroups(ctxT(30*time.Second), g)
	must(err, "describe groups")
	check(described[g].State == "Empty", "state after leave: %s", described[g].State)
}

type tracker struct {
	mu     sync.Mutex
	owned  map[int32]bool
	events []string
}

func newTracker() *tracker { return &tracker{owned: map[int32]bool{}} }

func (tr *tracker) opts() []kgo.Opt {
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { tr.apply("assigned", m, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { tr.apply("revoked", m, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { tr.apply("lost", m, false) }),
	}
}

func (tr *tracker) apply(kind string, m map[string][]int32, add bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var ps []int
	for _, parts := range m {
		for _, p := range parts {
			ps = append(ps, int(p))
			if add {
				tr.owned[p] = true
			} else {
				delete(tr.owned, p)
			}
		}
	}
	sort.Ints(ps)
	tr.events = append(tr.events, fmt.Sprintf("%s %v", kind, ps))
}

func (tr *tracker) count() int { tr.mu.Lock(); defer tr.mu.Unlock(); return len(tr.owned) }

func (tr *tracker) snapshot() (map[int32]bool, []string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	owned := map[int32]bool{}
	for k := range tr.owned {
		owned[k] = true
	}
	return owned, append([]string(nil), tr.events...)
}

// pollLoop keeps a group member polling (franz-go runs callbacks from polls) until stop closes.
func pollLoop(cl *kgo.Client, stop chan struct{}, done *sync.WaitGroup) {
	done.Add(1)
	go func() {
		defer done.Done()
		for {
			select {
			case <-stop:
				return
			default:
				cl.PollRecords(ctxT(200*time.Millisecond), 100)
			}
		}
	}()
}

func rebalanceWith(balancer kgo.GroupBalancer, cooperative, static bool) {
	adm, acl := newAdmin()
	defer acl.Close()
	t, g := topic("t"), group("g")
	fill(adm, t, 4, 2)
	member := func(tr *tracker, instance string) (*kgo.Client, chan struct{}, *sync.WaitGroup) {
		opts := append(tr.opts(), kgo.Balancers(balancer))
		if static {
			opts = append(opts, kgo.InstanceID(instance), kgo.SessionTimeout(20*time.Second))
		}
		cl := groupClient(t, g, opts...)
		stop, wg := make(chan struct{}), &sync.WaitGroup{}
		pollLoop(cl, stop, wg)
		return cl, stop, wg
	}
	stopMember := func(cl *kgo.Client, stop chan struct{}, wg *sync.WaitGroup, leave bool) {
		close(stop)
		wg.Wait()
		if leave {
			cl.LeaveGroup()
		}
		cl.Close()
	}
	ta, tb := newTracker(), newTracker()
	ca, sa, wa := member(ta, "member-a")
	waitUntil(30*time.Second, "a owns 4", func() bool { return ta.count() == 4 })
	_, eventsBefore := ta.snapshot()
	cb, sb, wb := member(tb, "member-b")
	waitUntil(40*time.Second, "2/2 split", func() bool { return ta.count() == 2 && tb.count() == 2 })
	if cooperative {
		_, events := ta.snapshot()
		for _, e := range events[len(eventsBefore):] {
			check(e != "revoked [0 1 2 3]", "eager revoke with cooperative-sticky: %v", events)
		}
	}
	if static {
		before, _ := ta.snapshot()
		bBefore, bEvents := tb.snapshot()
		described, err := adm.DescribeGroups(ctxT(30*time.Second), g)
		must(err, "describe")
		var ids []string
		for _, m := range described[g].Members {
			if m.InstanceID != nil {
				ids = append(ids, *m.InstanceID)
			}
		}
		sort.Strings(ids)
		check(fmt.Sprint(ids) == "[member-a member-b]", "instance ids %v", ids)
		stopMember(ca, sa, wa, false)
		ta2 := newTracker()
		ca2, sa2, wa2 := member(ta2, "member-a")
		waitUntil(30*time.Second, "restarted static member assigned", func() bool { return ta2.count() == 2 })
		after, _ := ta2.snapshot()
		check(fmt.Sprint(after) == fmt.Sprint(before), "static member keeps partitions: %v != %v", after, before)
		bAfter, bEventsAfter := tb.snapshot()
		check(fmt.Sprint(bAfter) == fmt.Sprint(bBefore) && len(bEventsAfter) == len(bEvents),
			"other member undisturbed: %v", bEventsAfter)
		stopMember(ca2, sa2, wa2, true)
		stopMember(cb, sb, wb, true)
		return
	}
	stopMember(cb, sb, wb, true)
	waitUntil(30*time.Second, "a owns 4 after b left", func() bool { return ta.count() == 4 })
	stopMember(ca, sa, wa, true)
}

func scenarioOffsetsForTimes() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 1, nil)
	recs := makeRecords(10)
	cl := newClient()
	produce(cl, t, recs)
	cl.Close()
	base := recs[0].ts.UnixMilli()
	listed, err := adm.ListOffsetsAfterMilli(ctxT(30*time.Second), base+2500, t)
	must(err, "list offsets after milli")
	o, _ := listed.Lookup(t, 0)
	must(o.Err, "listed offset")
	check(o.Offset == 3 && o.Timestamp == base+3000, "offset for base+2500: %d @%d", o.Offset, o.Timestamp)
	start, err := adm.ListStartOffsets(ctxT(30*time.Second), t)
	must(err, "start offsets")
	s, _ := start.Lookup(t, 0)
	check(s.Offset == 0, "earliest %d", s.Offset)
	end, err := adm.ListEndOffsets(ctxT(30*time.Second), t)
	must(err, "end offsets")
	e, _ := end.Lookup(t, 0)
	check(e.Offset == 10, "latest %d", e.Offset)
	after, err := adm.ListOffsetsAfterMilli(ctxT(30*time.Second), base+10_000_000, t)
	must(err, "after last")
	a, _ := after.Lookup(t, 0)
	check(a.Offset == 10, "offset after the last timestamp is the end offset (franz-go maps -1): %d", a.Offset)
}

func topicConfig(adm *kadm.Client, t string) map[string]*kadm.Config {
	rcs, err := adm.DescribeTopicConfigs(ctxT(30*time.Second), t)
	must(err, "describe configs")
	rc, err := rcs.On(t, nil)
	must(err, "config resource")
	must(rc.Err, "config resource error")
	out := map[string]*kadm.Config{}
	for i := range rc.Configs {
		out[rc.Configs[i].Key] = &rc.Configs[i]
	}
	return out
}

func scenarioConfigs() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 1, nil)
	cfg := topicConfig(adm, t)
	check(cfg["retention.ms"].MaybeValue() == "604800000", "default retention.ms %q", cfg["retention.ms"].MaybeValue())
	check(cfg["max.message.bytes"].MaybeValue() == "1048588", "default max.message.bytes %q", cfg["max.message.bytes"].MaybeValue())
	v := "3600000"
	resp, err := adm.AlterTopicConfigs(ctxT(30*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: &v}}, t)
	must(err, "alter configs")
	for _, r := range resp {
		must(r.Err, "alter config response")
	}
	cfg = topicConfig(adm, t)
	check(cfg["retention.ms"].MaybeValue() == "3600000", "altered retention.ms %q", cfg["retention.ms"].MaybeValue())
	check(cfg["retention.ms"].Source.String() == "DYNAMIC_TOPIC_CONFIG", "source %s", cfg["retention.ms"].Source)
	brokers, err := adm.DescribeBrokerConfigs(ctxT(30*time.Second), 1)
	must(err, "broker configs")
	found := false
	for _, rc := range brokers {
		for _, c := range rc.Configs {
			if c.Key == "num.partitions" || c.Key == "log.retention.hours" {
				found = true
			}
		}
	}
	check(found, "broker configs described")
}

func scenarioDeleteRecords() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 1, nil)
	recs := make([]rec, 10)
	for i := range recs {
		recs[i] = rec{value: []byte(fmt.Sprintf("r%d", i)), ts: time.Now()}
	}
	cl := newClient()
	produce(cl, t, recs)
	cl.Close()
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: t, Partition: 0, At: 4})
	resp, err := adm.DeleteRecords(ctxT(30*time.Second), offsets)
	must(err, "delete records")
	r, _ := resp.Lookup(t, 0)
	must(r.Err, "delete records partition")
	check(r.LowWatermark == 4, "low watermark %d", r.LowWatermark)
	got := consumeAssigned(t, 0, 6)
	check(len(got) == 6, "remaining %d", len(got))
	for i, g := range got {
		check(g.Offset == int64(i+4) && string(g.Value) == fmt.Sprintf("r%d", i+4), "record %d: %d %s", i, g.Offset, g.Value)
	}
}

func scenarioErrors() {
	adm, acl := newAdmin()
	defer acl.Close()
	missing := topic("missing")
	dr, err := adm.DeleteTopics(ctxT(30*time.Second), missing)
	must(err, "delete missing")
	check(errors.Is(dr[missing].Err, kerr.UnknownTopicOrPartition), "delete missing topic: %v", dr[missing].Err)
	bogus := "bogus"
	bad := topic("bad-config")
	cr, err := adm.CreateTopics(ctxT(30*time.Second), 1, 1, map[string]*string{"cleanup.policy": &bogus}, bad)
	must(err, "create bad config")
	check(errors.Is(cr[bad].Err, kerr.InvalidConfig), "invalid config: %v", cr[bad].Err)
	cr, err = adm.CreateTopics(ctxT(30*time.Second), 1, 1, nil, "bad/name")
	must(err, "create bad name")
	check(errors.Is(cr["bad/name"].Err, kerr.InvalidTopicException), "invalid topic: %v", cr["bad/name"].Err)
	t := topic("t")
	createTopic(adm, t, 1, nil)
	// franz-go compresses with snappy by default; send the batch uncompressed and incompressible.
	cl := newClient(kgo.ProducerBatchMaxBytes(4_000_000), kgo.RecordRetries(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer cl.Close()
	big := make([]byte, tooLargeValueBytes)
	state := uint32(12345)
	for i := range big {
		state = state*1664525 + 1013904223
		big[i] = byte(state >> 24)
	}
	res := cl.ProduceSync(ctxT(30*time.Second), &kgo.Record{Topic: t, Partition: 0, Value: big})
	check(errors.Is(res.FirstErr(), kerr.MessageTooLarge), "record too large: %v", res.FirstErr())
	details, err := adm.ListTopics(ctxT(10*time.Second), missing)
	must(err, "metadata of missing")
	check(errors.Is(details[missing].Err, kerr.UnknownTopicOrPartition), "metadata of a missing topic: %v", details[missing].Err)
}

func version() string {
	info, ok := debug.ReadBuildInfo()
	if ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/twmb/franz-go" {
				return "franz-go " + dep.Version
			}
		}
	}
	return "franz-go (unknown version)"
}

func main() {
	showVersion := flag.Bool("version", false, "print the client version")
	scenario := flag.String("scenario", "", "scenario name")
	flag.StringVar(&bootstrap, "bootstrap", "", "host:port")
	flag.StringVar(&prefix, "prefix", fmt.Sprintf("compat-%d", time.Now().Unix()), "name prefix")
	flag.Parse()
	if *showVersion {
		fmt.Println(version())
		return
	}
	scenarios := map[string]func(){
		"metadata":          scenarioMetadata,
		"topics":            scenarioTopics,
		"codecs":            scenarioCodecs,
		"large":             scenarioLarge,
		"idempotent":        scenarioIdempotent,
		"group":             scenarioGroup,
		"rebalance":         func() { rebalanceWith(kgo.RangeBalancer(), false, false) },
		"cooperative":       func() { rebalanceWith(kgo.CooperativeStickyBalancer(), true, false) },
		"static":            func() { rebalanceWith(kgo.RangeBalancer(), false, true) },
		"offsets_for_times": scenarioOffsetsForTimes,
		"configs":           scenarioConfigs,
		"delete_records":    scenarioDeleteRecords,
		"errors":            scenarioErrors,
		"transactions":      scenarioTransactions,
		"auth_failure":      scenarioAuthFailure,
	}
	for name, fn := range cg848Scenarios {
		scenarios[name] = fn
	}
	fn, ok := scenarios[*scenario]
	if !ok {
		fmt.Printf("N/A: scenario %q is not expressible with this client\n", *scenario)
		os.Exit(notApplicable)
	}
	defer func() {
		if r := recover(); r != nil {
			if na, ok := r.(errNotApplicable); ok {
				fmt.Println("N/A:", na.reason)
				os.Exit(notApplicable)
			}
			fmt.Println("FAIL:", r)
			os.Exit(1)
		}
	}()
	done := make(chan struct{})
	go func() {
		defer func() {
			if r := recover(); r != nil {
				if na, ok := r.(errNotApplicable); ok {
					fmt.Println("N/A:", na.reason)
					os.Exit(notApplicable)
				}
				fmt.Println("FAIL:", r)
				os.Exit(1)
			}
		}()
		fn()
		close(done)
	}()
	select {
	case <-done:
		fmt.Println("PASS")
	case <-time.After(140 * time.Second):
		fmt.Println("FAIL: scenario timed out")
		os.Exit(1)
	}
}
