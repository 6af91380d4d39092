// KIP-848 consumer group scenarios (group.protocol=consumer) for franz-go.
//
// franz-go v1.22.3 speaks KIP-848 with kgo.ServerSideBalancer() and a range or sticky balancer
// first in Balancers (the default cooperative-sticky one asks for the broker's "uniform"
// assignor); against a broker that does not advertise ConsumerGroupHeartbeat v1 it silently
// uses the classic protocol, so every scenario checks through ConsumerGroupDescribe that the
// group really is a consumer group. Each member polls in its own goroutine; the member of
// cg848_session_expiry that is killed is a child process (scenario cg848_child), SIGKILLed.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The broker settings the harness gives both brokers (harness/brokers.py COMMON_PROPERTIES).
const (
	cgSessionTimeoutMs    = 8000
	cgHeartbeatIntervalMs = 500
	// The group epoch Kafka 4.4 gives a new group once its first member has joined.
	cgFirstJoinEpoch = 2
)

// owners records which member owns each partition, as the members' callbacks report it: a
// partition assigned to one member while another still owns it is a violation.
type owners struct {
	mu         sync.Mutex
	owner      map[string]string
	violations []string
}

func newOwners() *owners { return &owners{owner: map[string]string{}} }

func (o *owners) acquire(member string, m map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for t, ps := range m {
		for _, p := range ps {
			k := fmt.Sprintf("%s:%d", t, p)
			if prev, ok := o.owner[k]; ok && prev != member {
				o.violations = append(o.violations, fmt.Sprintf("%s assigned to %s while %s owned it", k, member, prev))
			}
			o.owner[k] = member
		}
	}
}

func (o *owners) release(member string, m map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for t, ps := range m {
		for _, p := range ps {
			k := fmt.Sprintf("%s:%d", t, p)
			if o.owner[k] == member {
				delete(o.owner, k)
			}
		}
	}
}

func (o *owners) violated() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.violations...)
}

// cgMember is a group member: its rebalance events (non-empty sets only), what it owns, the
// records it consumed, and a commit of what it consumed before revoked partitions move.
type cgMember struct {
	name           string
	cl             *kgo.Client
	own            *owners
	mu             sync.Mutex
	events         []string
	owned          map[string]map[int32]bool
	records        []*kgo.Record
	commitOnRevoke bool
	stop           chan struct{}
	done           sync.WaitGroup
	closed         bool
}

// showParts prints one topic t's partitions as "[0 2]", several topics as "[re-a:0 re-b:0]".
func showParts(m map[string][]int32) string {
	if len(m) == 1 {
		for t, ps := range m {
			if t == topic("t") {
				s := append([]int32(nil), ps...)
				sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
				return fmt.Sprint(s)
			}
		}
	}
	var out []string
	for t, ps := range m {
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s:%d", strings.TrimPrefix(t, prefix+"-"), p))
		}
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

func countParts(m map[string][]int32) int {
	n := 0
	for _, ps := range m {
		n += len(ps)
	}
	return n
}

// newMember joins the group with the consumer protocol (classic when classic is true), subscribed
// to topics (a regex when regex is true), and starts polling.
func newMember(name string, own *owners, topics []string, classic, regex bool, extra ...kgo.Opt) *cgMember {
	m := &cgMember{name: name, own: own, owned: map[string]map[int32]bool{}, commitOnRevoke: true, stop: make(chan struct{})}
	opts := []kgo.Opt{kgo.ConsumeTopics(topics...), kgo.ConsumerGroup(group("g")),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(300 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { m.apply("assigned", a) }),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, r map[string][]int32) {
			if countParts(r) > 0 && m.commitOnRevoke {
				must(cl.CommitUncommittedOffsets(ctx), m.name+": commit before revoking")
			}
			m.apply("revoked", r)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, l map[string][]int32) { m.apply("lost", l) }),
	}
	if classic {
		opts = append(opts, kgo.Balancers(kgo.RangeBalancer()), kgo.SessionTimeout(10*time.Second),
			kgo.HeartbeatInterval(500*time.Millisecond))
	} else {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	if regex {
		opts = append(opts, kgo.ConsumeRegex())
	}
	if os.Getenv("COMPAT_FRANZ_DEBUG") != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stdout, kgo.LogLevelInfo, func() string { return name + " " })))
	}
	m.cl = newClient(append(opts, extra...)...)
	m.done.Add(1)
	go func() {
		defer m.done.Done()
		for {
			select {
			case <-m.stop:
				return
			default:
			}
			fs := m.cl.PollRecords(ctxT(200*time.Millisecond), 100)
			m.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { m.records = append(m.records, r) })
			m.mu.Unlock()
		}
	}()
	return m
}

func (m *cgMember) apply(kind string, parts map[string][]int32) {
	if countParts(parts) == 0 {
		return
	}
	if kind == "assigned" {
		m.own.acquire(m.name, parts)
	} else {
		m.own.release(m.name, parts)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for t, ps := range parts {
		if m.owned[t] == nil {
			m.owned[t] = map[int32]bool{}
		}
		for _, p := range ps {
			if kind == "assigned" {
				m.owned[t][p] = true
			} else {
				delete(m.owned[t], p)
			}
		}
	}
	m.events = append(m.events, kind+" "+showParts(parts))
}

// ownedOf lists the partitions of topic t the member owns, sorted.
func (m *cgMember) ownedOf(t string) []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.owned[t] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (m *cgMember) ownedT() []int32 { return m.ownedOf(topic("t")) }

// ownedAll is every owned partition as "topic-suffix:p", sorted.
func (m *cgMember) ownedAll() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for t, ps := range m.owned {
		for p := range ps {
			out = append(out, fmt.Sprintf("%s:%d", strings.TrimPrefix(t, prefix+"-"), p))
		}
	}
	sort.Strings(out)
	return out
}

func (m *cgMember) eventList() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.events...)
}

func (m *cgMember) clearEvents() { m.mu.Lock(); m.events = nil; m.mu.Unlock() }

func (m *cgMember) recordList() []*kgo.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*kgo.Record(nil), m.records...)
}

func (m *cgMember) recordCount() int { m.mu.Lock(); defer m.mu.Unlock(); return len(m.records) }

func (m *cgMember) memberID() string { id, _ := m.cl.GroupMetadata(); return id }

// close stops polling, then leaves the group (epoch -1, or -2 for a static member) and closes.
func (m *cgMember) close() {
	if m.closed {
		return
	}
	m.closed = true
	close(m.stop)
	m.done.Wait()
	m.cl.Close()
}

func (m *cgMember) state() string {
	return fmt.Sprintf("%s owns %v events %v", m.name, m.ownedAll(), m.eventList())
}

func waitMembers(timeout time.Duration, what string, ms []*cgMember, cond func() bool) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	var states []string
	for _, m := range ms {
		states = append(states, m.state())
	}
	fail("timed out after %v waiting for %s; %s", timeout, what, strings.Join(states, "; "))
}

func produceParts(t string, partitions, perPartition, from int) {
	cl := newClient()
	defer cl.Close()
	var krs []*kgo.Record
	for p := 0; p < partitions; p++ {
		for i := from; i < from+perPartition; i++ {
			krs = append(krs, &kgo.Record{Topic: t, Partition: int32(p), Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	must(cl.ProduceSync(ctxT(30*time.Second), krs...).FirstErr(), "produce")
}

func describeCG(adm *kadm.Client) kadm.DescribedConsumerGroup {
	described, err := adm.DescribeConsumerGroups(ctxT(30*time.Second), group("g"))
	must(err, "describe consumer groups")
	d := described[group("g")]
	must(d.Err, "described group")
	return d
}

func describeCGWhen(adm *kadm.Client, what string, cond func(kadm.DescribedConsumerGroup) bool) kadm.DescribedConsumerGroup {
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		described, err := adm.DescribeConsumerGroups(ctxT(30*time.Second), group("g"))
		if err == nil && described[group("g")].Err == nil {
			d := described[group("g")]
			if cond(d) {
				return d
			}
			last = showCG(d)
		} else {
			last = fmt.Sprintf("error %v / %v", err, described[group("g")].Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fail("timed out waiting for the description to show %s: %s", what, last)
	return kadm.DescribedConsumerGroup{}
}

func showCG(d kadm.DescribedConsumerGroup) string {
	var ms []string
	for _, m := range d.Members {
		inst := "-"
		if m.InstanceID != nil {
			inst = *m.InstanceID
		}
		ms = append(ms, fmt.Sprintf("{%s %s epoch %d type %d %v}", m.MemberID, inst, m.MemberEpoch, m.MemberType, m.Assignment.Sorted()))
	}
	return fmt.Sprintf("state=%s epoch=%d assignmentEpoch=%d assignor=%s members=%v", d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName, ms)
}

func partsIn(s kadm.TopicsSet, t string) []int32 {
	var out []int32
	for p := range s[t] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func cgMemberByID(d kadm.DescribedConsumerGroup, id string) kadm.ConsumerGroupMember {
	for _, m := range d.Members {
		if m.MemberID == id {
			return m
		}
	}
	fail("member %s not in the description %s", id, showCG(d))
	return kadm.ConsumerGroupMember{}
}

// stableWith: Stable, n members, and (when given) these sizes of assignment of topic t.
func stableWith(n int, sizes ...int) func(kadm.DescribedConsumerGroup) bool {
	return func(d kadm.DescribedConsumerGroup) bool {
		if d.State != "Stable" || len(d.Members) != n {
			return false
		}
		if len(sizes) == 0 {
			return true
		}
		var got []int
		for _, m := range d.Members {
			got = append(got, setSize(m.Assignment))
		}
		sort.Ints(got)
		want := append([]int(nil), sizes...)
		sort.Ints(want)
		return fmt.Sprint(got) == fmt.Sprint(want)
	}
}

func setSize(s kadm.TopicsSet) int {
	n := 0
	for _, ps := range s {
		n += len(ps)
	}
	return n
}

func groupType(adm *kadm.Client) string {
	listed, err := adm.ListGroups(ctxT(30 * time.Second))
	must(err, "list groups")
	return listed[group("g")].GroupType
}

func checkOnce(ms []*cgMember, expected int, what string) {
	counts := map[string]int{}
	for _, m := range ms {
		for _, r := range m.recordList() {
			counts[fmt.Sprintf("%s:%d:%d", r.Topic, r.Partition, r.Offset)]++
		}
	}
	check(len(counts) == expected, "%s: distinct records consumed %d, expected %d", what, len(counts), expected)
	for k, n := range counts {
		check(n == 1, "%s: %s consumed %d times", what, k, n)
	}
}

func totalRecords(ms []*cgMember) int {
	n := 0
	for _, m := range ms {
		n += m.recordCount()
	}
	return n
}

func eq(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func minus(all []int32, some []int32) []int32 {
	drop := map[int32]bool{}
	for _, p := range some {
		drop[p] = true
	}
	var out []int32
	for _, p := range all {
		if !drop[p] {
			out = append(out, p)
		}
	}
	return out
}

func disjoint(a, b []int32) bool { return len(minus(a, b)) == len(a) }

func cgJoinConsume() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 3, nil)
	produceParts(t, 3, 3, 0)
	own := newOwners()
	a := newMember("a", own, []string{t}, false, false)
	defer a.close()
	ms := []*cgMember{a}
	waitMembers(30*time.Second, "9 records", ms, func() bool { return a.recordCount() >= 9 })
	check(eq(a.ownedT(), []int32{0, 1, 2}), "assignment %v", a.ownedT())
	check(eq(a.eventList(), []string{"assigned [0 1 2]"}), "rebalance events %v", a.eventList())
	var got []string
	for _, r := range a.recordList() {
		got = append(got, fmt.Sprintf("%d@%d=%s", r.Partition, r.Offset, r.Value))
	}
	sort.Strings(got)
	var want []string
	for p := 0; p < 3; p++ {
		for i := 0; i < 3; i++ {
			want = append(want, fmt.Sprintf("%d@%d=p%d-%d", p, i, p, i))
		}
	}
	check(eq(got, want), "records %v, expected %v", got, want)
	d := describeCGWhen(adm, "Stable with the member's 3 partitions", stableWith(1, 3))
	fmt.Println("described:", showCG(d))
	check(groupType(adm) == "consumer", "group type %q", groupType(adm))
	check(d.AssignorName == "uniform", "assignor %q", d.AssignorName)
	m := d.Members[0]
	check(m.MemberID == a.memberID(), "member id %s, the client's %s", m.MemberID, a.memberID())
	check(m.InstanceID == nil, "instance id %v", m.InstanceID)
	check(eq(partsIn(m.Assignment, t), a.ownedT()), "member assignment %v", m.Assignment.Sorted())
	check(eq(partsIn(m.TargetAssignment, t), a.ownedT()), "member target assignment %v", m.TargetAssignment.Sorted())
	check(m.MemberType == 1, "member type %d (1: consumer protocol)", m.MemberType)
	// Kafka 4.4's first bump of a new group is "Bumped group epoch to 2" (its log), and Stable
	// means the member has reconciled that epoch's target assignment.
	check(d.Epoch == cgFirstJoinEpoch && d.AssignmentEpoch == cgFirstJoinEpoch && m.MemberEpoch == cgFirstJoinEpoch,
		"epochs: group %d, assignment %d, member %d", d.Epoch, d.AssignmentEpoch, m.MemberEpoch)
	a.close()
	d = describeCG(adm)
	check(d.State == "Empty" && len(d.Members) == 0, "after close: %s", showCG(d))
	check(groupType(adm) == "consumer", "group type after close %q", groupType(adm))
}

func cgSecondMember() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 3, nil)
	produceParts(t, 3, 4, 0)
	own := newOwners()
	a := newMember("a", own, []string{t}, false, false)
	defer a.close()
	waitMembers(30*time.Second, "a consumes 12", []*cgMember{a}, func() bool { return a.recordCount() >= 12 })
	must(a.cl.CommitRecords(ctxT(30*time.Second), a.recordList()...), "commit")
	a.clearEvents()
	b := newMember("b", own, []string{t}, false, false)
	defer b.close()
	ms := []*cgMember{a, b}
	waitMembers(30*time.Second, "2/1 split", ms, func() bool {
		return len(a.ownedT()) == 2 && len(b.ownedT()) == 1 && disjoint(a.ownedT(), b.ownedT())
	})
	moved := b.ownedT()
	check(eq(a.eventList(), []string{fmt.Sprintf("revoked %v", moved)}), "a's events (only the moved partition revoked): %v", a.eventList())
	check(eq(b.eventList(), []string{fmt.Sprintf("assigned %v", moved)}), "b's events: %v", b.eventList())
	check(len(own.violated()) == 0, "partitions owned by two members at once: %v", own.violated())
	check(eq(a.ownedT(), minus([]int32{0, 1, 2}, moved)), "a keeps the others: %v", a.ownedT())
	produceParts(t, 3, 4, 4)
	waitMembers(30*time.Second, "24 records", ms, func() bool { return totalRecords(ms) >= 24 })
	checkOnce(ms, 24, "records")
	var bGot []string
	for _, r := range b.recordList() {
		bGot = append(bGot, fmt.Sprintf("%d:%d", r.Partition, r.Offset))
	}
	sort.Strings(bGot)
	var bWant []string
	for i := 4; i < 8; i++ {
		bWant = append(bWant, fmt.Sprintf("%d:%d", moved[0], i))
	}
	check(eq(bGot, bWant), "b starts at the committed offset of its partition: %v", bGot)
	d := describeCGWhen(adm, "Stable with 2 members holding 2 and 1", stableWith(2, 2, 1))
	check(eq(partsIn(cgMemberByID(d, a.memberID()).Assignment, t), a.ownedT()), "a's described assignment: %s", showCG(d))
	check(eq(partsIn(cgMemberByID(d, b.memberID()).Assignment, t), b.ownedT()), "b's described assignment: %s", showCG(d))
}

// cgTwoMembers: a owns all 3 partitions of t, then b (made by mk) joins; until the 2/1 split.
func cgTwoMembers(adm *kadm.Client, a *cgMember, mk func() *cgMember) *cgMember {
	waitMembers(30*time.Second, "a owns 3", []*cgMember{a}, func() bool { return len(a.ownedT()) == 3 })
	b := mk()
	waitMembers(30*time.Second, "2/1 split", []*cgMember{a, b}, func() bool {
		return len(a.ownedT()) == 2 && len(b.ownedT()) == 1 && disjoint(a.ownedT(), b.ownedT())
	})
	describeCGWhen(adm, "2 members holding 2 and 1", stableWith(2, 2, 1))
	return b
}

func cgLeave() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 3, nil)
	own := newOwners()
	a := newMember("a", own, []string{t}, false, false)
	defer a.close()
	b := cgTwoMembers(adm, a, func() *cgMember { return newMember("b", own, []string{t}, false, false) })
	bOwned := b.ownedT()
	a.clearEvents()
	t0 := time.Now()
	b.close()
	waitMembers(30*time.Second, "a owns 3 after b left", []*cgMember{a}, func() bool { return len(a.ownedT()) == 3 })
	took := time.Since(t0)
	fmt.Println("moved", took.Milliseconds(), "ms after b closed")
	check(took < cgSessionTimeoutMs*time.Millisecond, "a leave moves the partitions at once, not after the session: %v", took)
	check(eq(a.eventList(), []string{fmt.Sprintf("assigned %v", bOwned)}), "a's events (b's partitions assigned, nothing revoked): %v", a.eventList())
	check(len(own.violated()) == 0, "partitions owned by two members at once: %v", own.violated())
	d := describeCGWhen(adm, "one member with 3 partitions", stableWith(1, 3))
	check(d.Members[0].MemberID == a.memberID(), "remaining member %s", showCG(d))
	produceParts(t, 3, 1, 0)
	waitMembers(30*time.Second, "3 records", []*cgMember{a}, func() bool { return a.recordCount() >= 3 })
	checkOnce([]*cgMember{a}, 3, "records after the leave")
}

func cgSessionExpiry() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 3, nil)
	own := newOwners()
	a := newMember("a", own, []string{t}, false, false)
	defer a.close()
	waitMembers(30*time.Second, "a owns 3", []*cgMember{a}, func() bool { return len(a.ownedT()) == 3 })
	self, err := os.Executable()
	must(err, "own executable")
	child := exec.Command(self, "--bootstrap", bootstrap, "--scenario", "cg848_child", "--prefix", prefix)
	out, err := child.StdoutPipe()
	must(err, "child stdout")
	child.Stderr = child.Stdout
	must(child.Start(), "start the child member")
	defer func() { _ = child.Process.Kill() }()
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Println("child:", sc.Text())
		}
		_ = child.Wait()
		close(exited)
	}()
	waitMembers(40*time.Second, "2/1 split with the child", []*cgMember{a}, func() bool { return len(a.ownedT()) == 2 })
	childOwned := minus([]int32{0, 1, 2}, a.ownedT())
	before := describeCGWhen(adm, "2 members holding 2 and 1", stableWith(2, 2, 1))
	childID := ""
	for _, m := range before.Members {
		if m.MemberID != a.memberID() {
			childID = m.MemberID
		}
	}
	check(eq(partsIn(cgMemberByID(before, childID).Assignment, t), childOwned), "the child's described assignment: %s", showCG(before))
	a.clearEvents()
	must(child.Process.Kill(), "SIGKILL the child") // no leave heartbeat
	t0 := time.Now()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		fail("the killed child did not exit")
	}
	right := describeCG(adm)
	check(len(right.Members) == 2, "members right after the kill (the dead one until its session expires): %s", showCG(right))
	check(eq(partsIn(cgMemberByID(right, childID).Assignment, t), childOwned), "the killed member keeps its assignment until expiry: %s", showCG(right))
	waitMembers(40*time.Second, "a owns 3 after the child's session expired", []*cgMember{a}, func() bool { return len(a.ownedT()) == 3 })
	took := time.Since(t0)
	fmt.Println("moved", took.Milliseconds(), "ms after the kill")
	// The session runs from the child's last heartbeat, at most one interval before the kill.
	check(took >= (cgSessionTimeoutMs-cgHeartbeatIntervalMs-500)*time.Millisecond, "moved before group.consumer.session.timeout.ms: %v", took)
	check(eq(a.eventList(), []string{fmt.Sprintf("assigned %v", childOwned)}), "a's events (the dead member's partitions assigned): %v", a.eventList())
	d := describeCGWhen(adm, "one member with 3 partitions", stableWith(1, 3))
	check(d.Members[0].MemberID == a.memberID(), "remaining member %s", showCG(d))
}

// cgChild is the member cg848_session_expiry kills: it joins and polls until killed (60 s at most).
func cgChild() {
	m := newMember("child", newOwners(), []string{topic("t")}, false, false)
	seen := 0
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if ev := m.eventList(); len(ev) != seen {
			seen = len(ev)
			fmt.Println("OWNED", m.ownedT())
		}
		time.Sleep(50 * time.Millisecond)
	}
	m.close()
}

// franzStaticLeaveDefect: franz-go v1.22.3's leave848 sends MemberEpoch -2 without the
// InstanceID, which Kafka refuses with INVALID_REQUEST ("InstanceId can't be null."), so the
// closed static member stays active and its restart is refused with UNRELEASED_INSTANCE_ID until
// the session expires. cgStaticRestart is kept for a franz-go that sends the instance id.
const franzStaticLeaveDefect = "franz-go v1.22.3 sends its static leave (ConsumerGroupHeartbeat epoch -2) without the " +
	"instance id; Kafka answers INVALID_REQUEST (InstanceId can't be null), so a restart within the session is refused " +
	"with UNRELEASED_INSTANCE_ID"

func cgStaticRestart() {
	if version() == "franz-go v1.22.3" {
		panic(errNotApplicable{franzStaticLeaveDefect})
	}
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 3, nil)
	own := newOwners()
	a := newMember("a", own, []string{t}, false, false, kgo.InstanceID("member-a"))
	b := cgTwoMembers(adm, a, func() *cgMember { return newMember("b", own, []string{t}, false, false, kgo.InstanceID("member-b")) })
	defer b.close()
	aBefore, oldID := a.ownedT(), a.memberID()
	a.close()
	bBefore := b.ownedT()
	b.clearEvents()
	// A static member that closes leaves with epoch -2: the coordinator keeps it, and its
	// partitions, for the session timeout.
	during := describeCG(adm)
	fmt.Println("after a's static leave:", showCG(during))
	check(len(during.Members) == 2, "members while member-a is away: %s", showCG(during))
	// member-a's epoch (-2) is not the group's: the group is Reconciling until it is back.
	check(during.State == "Reconciling", "state while member-a is away: %s", showCG(during))
	var away *kadm.ConsumerGroupMember
	for i, m := range during.Members {
		if m.InstanceID != nil && *m.InstanceID == "member-a" {
			away = &during.Members[i]
		}
	}
	check(away != nil, "member-a still described: %s", showCG(during))
	check(eq(partsIn(away.Assignment, t), aBefore), "member-a's partitions kept while it is away: %s", showCG(during))
	t0 := time.Now()
	a2 := newMember("a2", own, []string{t}, false, false, kgo.InstanceID("member-a"))
	defer a2.close()
	waitMembers(30*time.Second, "restarted member-a assigned", []*cgMember{a2, b}, func() bool { return len(a2.ownedT()) > 0 })
	took := time.Since(t0)
	check(took < cgSessionTimeoutMs*time.Millisecond, "rejoined within the session: %v", took)
	check(eq(a2.ownedT(), aBefore), "member-a gets the same partitions: %v, before %v", a2.ownedT(), aBefore)
	check(eq(a2.eventList(), []string{fmt.Sprintf("assigned %v", aBefore)}), "member-a's events: %v", a2.eventList())
	check(eq(b.ownedT(), bBefore), "member-b undisturbed: %v", b.ownedT())
	check(len(b.eventList()) == 0, "member-b's events: %v", b.eventList())
	d := describeCGWhen(adm, "2 members, member-a back", func(x kadm.DescribedConsumerGroup) bool {
		if !stableWith(2)(x) {
			return false
		}
		for _, m := range x.Members {
			if m.MemberID == a2.memberID() {
				return true
			}
		}
		return false
	})
	m := cgMemberByID(d, a2.memberID())
	check(m.InstanceID != nil && *m.InstanceID == "member-a", "instance id of the restarted member: %s", showCG(d))
	check(eq(partsIn(m.Assignment, t), aBefore), "described assignment of member-a: %s", showCG(d))
	check(a2.memberID() != oldID, "the restarted member has a new member id")
	check(len(own.violated()) == 0, "partitions owned by two members at once: %v", own.violated())
}

func cgRegex() {
	adm, acl := newAdmin()
	defer acl.Close()
	ta, tb, other := topic("re-a"), topic("re-b"), topic("other")
	createTopic(adm, ta, 2, nil)
	createTopic(adm, other, 1, nil)
	produceParts(ta, 2, 1, 0)
	produceParts(other, 1, 1, 0)
	own := newOwners()
	a := newMember("a", own, []string{"^" + prefix + "-re-.*"}, false, true)
	defer a.close()
	ms := []*cgMember{a}
	waitMembers(30*time.Second, "re-a's 2 records", ms, func() bool { return a.recordCount() >= 2 })
	check(eq(a.ownedAll(), []string{"re-a:0", "re-a:1"}), "assignment before re-b exists: %v", a.ownedAll())
	createTopic(adm, tb, 1, nil)
	produceParts(tb, 1, 1, 0)
	waitMembers(40*time.Second, "re-b picked up and its record consumed", ms, func() bool { return a.recordCount() >= 3 })
	check(eq(a.ownedAll(), []string{"re-a:0", "re-a:1", "re-b:0"}), "assignment once re-b exists: %v", a.ownedAll())
	check(eq(a.eventList(), []string{"assigned [re-a:0 re-a:1]", "assigned [re-b:0]"}), "rebalance events: %v", a.eventList())
	checkOnce(ms, 3, "records")
	for _, r := range a.recordList() {
		check(r.Topic != other, "consumed the unmatched topic")
	}
	d := describeCGWhen(adm, "the member with re-a and re-b", stableWith(1, 3))
	m := d.Members[0]
	check(eq(partsIn(m.Assignment, ta), []int32{0, 1}) && eq(partsIn(m.Assignment, tb), []int32{0}), "described assignment: %s", showCG(d))
	// franz-go sends its patterns wrapped for the broker's whole-name match; the broker keeps it as sent.
	sent := ".*(?:(?:^" + prefix + "-re-.*)).*"
	check(m.SubscribedTopicRegex != nil && *m.SubscribedTopicRegex == sent, "described subscribed regex %v, sent %s",
		m.SubscribedTopicRegex, sent)
}

func cgCommitResume() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 3, nil)
	produceParts(t, 3, 5, 0)
	own := newOwners()
	a := newMember("a", own, []string{t}, false, false)
	a.commitOnRevoke = false // only the explicit commit below
	waitMembers(30*time.Second, "15 records", []*cgMember{a}, func() bool { return a.recordCount() >= 15 })
	commit := map[string]map[int32]kgo.EpochOffset{t: {0: {Epoch: -1, Offset: 3}, 1: {Epoch: -1, Offset: 3}, 2: {Epoch: -1, Offset: 3}}}
	var commitErr error
	a.cl.CommitOffsetsSync(ctxT(30*time.Second), commit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		if err == nil {
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 {
						commitErr = fmt.Errorf("partition %d: error %d", rp.Partition, rp.ErrorCode)
					}
				}
			}
		}
	})
	must(commitErr, "commit offsets 3")
	a.close()
	fetched := func() string {
		offsets, err := adm.FetchOffsets(ctxT(30*time.Second), group("g"))
		must(err, "fetch offsets")
		var out []string
		offsets.Each(func(o kadm.OffsetResponse) {
			must(o.Err, "offset")
			out = append(out, fmt.Sprintf("%d=%d", o.Partition, o.At))
		})
		sort.Strings(out)
		return fmt.Sprint(out)
	}
	check(fetched() == "[0=3 1=3 2=3]", "committed offsets seen by the admin client: %s", fetched())
	d := describeCG(adm)
	check(d.State == "Empty" && groupType(adm) == "consumer", "state and type after close: %s, %s", showCG(d), groupType(adm))
	b := newMember("b", own, []string{t}, false, false)
	defer b.close()
	waitMembers(30*time.Second, "6 records", []*cgMember{b}, func() bool { return b.recordCount() >= 6 })
	var got []string
	for _, r := range b.recordList() {
		got = append(got, fmt.Sprintf("%d@%d=%s", r.Partition, r.Offset, r.Value))
	}
	sort.Strings(got)
	var want []string
	for p := 0; p < 3; p++ {
		for i := 3; i < 5; i++ {
			want = append(want, fmt.Sprintf("%d@%d=p%d-%d", p, i, p, i))
		}
	}
	check(eq(got, want), "the new member resumes at the committed offsets: %v", got)
	must(b.cl.CommitRecords(ctxT(30*time.Second), b.recordList()...), "commit")
	check(fetched() == "[0=5 1=5 2=5]", "committed at the end: %s", fetched())
}

func cgMixedMigration() {
	adm, acl := newAdmin()
	defer acl.Close()
	t := topic("t")
	createTopic(adm, t, 4, nil)
	produceParts(t, 4, 2, 0)
	own := newOwners()
	k := newMember("classic", own, []string{t}, true, false)
	defer k.close()
	waitMembers(30*time.Second, "the classic member consumes 8", []*cgMember{k}, func() bool { return k.recordCount() >= 8 })
	listed, err := adm.ListGroups(ctxT(30 * time.Second))
	must(err, "list groups")
	check(listed[group("g")].GroupType == "classic" && listed[group("g")].State == "Stable", "before: %+v", listed[group("g")])
	must(k.cl.CommitRecords(ctxT(30*time.Second), k.recordList()...), "commit")
	n := newMember("consumer", own, []string{t}, false, false)
	defer n.close()
	ms := []*cgMember{k, n}
	waitMembers(40*time.Second, "2/2 split", ms, func() bool {
		return len(k.ownedT()) == 2 && len(n.ownedT()) == 2 && disjoint(k.ownedT(), n.ownedT())
	})
	d := describeCGWhen(adm, "consumer group, Stable, 2 members holding 2 each", stableWith(2, 2, 2))
	fmt.Println("converted:", showCG(d))
	check(groupType(adm) == "consumer", "type once converted: %q", groupType(adm))
	km, nm := cgMemberByID(d, k.memberID()), cgMemberByID(d, n.memberID())
	check(km.MemberType == 0 && nm.MemberType == 1, "member types (0 classic, 1 consumer): %s", showCG(d))
	check(eq(partsIn(km.Assignment, t), k.ownedT()) && eq(partsIn(nm.Assignment, t), n.ownedT()), "described assignments: %s", showCG(d))
	all := append(k.ownedT(), n.ownedT()...)
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	check(eq(all, []int32{0, 1, 2, 3}), "every partition assigned once: %v", all)
	check(len(own.violated()) == 0, "partitions owned by two members at once: %v", own.violated())
	produceParts(t, 4, 2, 2)
	waitMembers(30*time.Second, "16 records", ms, func() bool { return totalRecords(ms) >= 16 })
	checkOnce(ms, 16, "records")
	for _, r := range n.recordList() {
		check(r.Offset >= 2, "the consumer member reads only new records: %d:%d", r.Partition, r.Offset)
	}
	n.close()
	// The last consumer-protocol member left: the group goes back to classic.
	waitMembers(30*time.Second, "the classic member owns 4 again", []*cgMember{k}, func() bool { return len(k.ownedT()) == 4 })
	waitUntil(20*time.Second, "the group back to classic", func() bool { return groupType(adm) == "classic" })
	check(len(own.violated()) == 0, "partitions owned by two members at once: %v", own.violated())
}

var cg848Scenarios = map[string]func(){
	"cg848_join_consume":    cgJoinConsume,
	"cg848_second_member":   cgSecondMember,
	"cg848_leave":           cgLeave,
	"cg848_session_expiry":  cgSessionExpiry,
	"cg848_child":           cgChild,
	"cg848_static_restart":  cgStaticRestart,
	"cg848_regex":           cgRegex,
	"cg848_commit_resume":   cgCommitResume,
	"cg848_mixed_migration": cgMixedMigration,
}
