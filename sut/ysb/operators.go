package ysb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/cloudprofiler-go/cp/dataflow"
	"github.com/cloudprofiler-go/cp/stage"
	cpbenthos "github.com/cloudprofiler-go/cp/sut/benthos"
)

// FieldCampaign is the campaign's id that the join adds to an event.
const FieldCampaign = "campaign_id"

// Operator names in a job's accounting (docs/dataflow.md): the filter of
// each input copy (filter, filter.1, ...) feeds its join (join, join.1,
// ...), and every join the window.
const (
	OpFilter = "filter"
	OpJoin   = "join"
	OpWindow = "window"
)

// registerOperators adds ysb_filter, ysb_redis_join and
// ysb_window_count to env, each accounted in df (nil: not accounted).
func registerOperators(env *service.Environment, df *dataflow.Job) error {
	chains := &chainedFilters{byName: map[string]*dataflow.Operator{}}
	return errors.Join(
		env.RegisterBatchProcessor("ysb_filter", service.NewConfigSpec().
			Summary("YSB's filter: keeps the views (event_type == \"view\"), accounted as an operator.").
			Field(workField("work_per_tuple", "each event")).
			Field(service.NewBoolField("chained").Default(false).Advanced().
				Description("the join runs after it on its thread (processors of one input): the filter is blocked on its output until the join is done with its views, and the join marks it waiting then")),
			func(conf *service.ParsedConfig, _ *service.Resources) (service.BatchProcessor, error) {
				return newFilter(conf, df, chains)
			}),
		env.RegisterBatchProcessor("ysb_redis_join", service.NewConfigSpec().
			Summary("YSB's join: each event's ad_id looked up in a Redis hash of ad -> campaign, one HMGET per batch; an unknown ad is dropped and counted.").
			Field(service.NewStringField("address").Description("HOST:PORT of the Redis that holds the campaigns")).
			Field(service.NewStringField("hash").Default(CampaignsHash)).
			Field(workField("work_per_tuple", "each event")).
			Field(service.NewDurationField("lookup_delay").Default("0s").Advanced().
				Description("an injected limit: wait this long more for each lookup, as against a Redis that answers slowly (0: none)")),
			func(conf *service.ParsedConfig, mgr *service.Resources) (service.BatchProcessor, error) {
				return newJoin(conf, mgr, df, chains)
			}),
		env.RegisterBatchProcessor("ysb_window_count", service.NewConfigSpec().
			Summary("YSB's count: a window's events grouped by campaign, one message per campaign with its count, the window's end, and the identity of the latest event counted.").
			Field(workField("work_per_tuple", "each view counted")),
			func(conf *service.ParsedConfig, _ *service.Resources) (service.BatchProcessor, error) {
				return newWindowCount(conf, df)
			}),
	)
}

// connectCopy joins op to the operator of the same input copy named
// base (its suffix: join.2's filter is filter.2), made before it.
func connectCopy(df *dataflow.Job, base, opBase string, op *dataflow.Operator) error {
	if op == nil { // not accounted
		return nil
	}
	if from := df.Op(sameCopy(base, opBase, op)); from != nil {
		return df.Connect(from, op)
	}
	return nil
}

// sameCopy is the name of the operator called base of op's input copy.
func sameCopy(base, opBase string, op *dataflow.Operator) string {
	return base + strings.TrimPrefix(op.Name(), opBase)
}

// chainedFilters are one job's filters that a join follows on their
// thread (ysb_filter's chained), by operator name: the join marks its
// copy's filter waiting when it is done. Made per environment, shared by
// its processors' constructors.
type chainedFilters struct {
	mu     sync.Mutex
	byName map[string]*dataflow.Operator
}

func (c *chainedFilters) add(op *dataflow.Operator) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byName[op.Name()] = op
}

func (c *chainedFilters) of(join *dataflow.Operator) *dataflow.Operator {
	if join == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byName[sameCopy(OpFilter, OpJoin, join)]
}

func newFilter(conf *service.ParsedConfig, df *dataflow.Job, chains *chainedFilters) (*filter, error) {
	work, err := conf.FieldDuration("work_per_tuple")
	if err != nil {
		return nil, err
	}
	chained, err := conf.FieldBool("chained")
	if err != nil {
		return nil, err
	}
	op, err := df.Declare(OpFilter, nil)
	if err != nil {
		return nil, err
	}
	if err := connectCopy(df, stage.InputOperator, OpFilter, op); err != nil {
		return nil, err
	}
	if chained && op != nil {
		chains.add(op)
	}
	return &filter{op: op, work: work, chained: chained}, nil
}

func newJoin(conf *service.ParsedConfig, mgr *service.Resources, df *dataflow.Job, chains *chainedFilters) (*redisJoin, error) {
	addr, err := conf.FieldString("address")
	if err != nil {
		return nil, err
	}
	hash, err := conf.FieldString("hash")
	if err != nil {
		return nil, err
	}
	work, err := conf.FieldDuration("work_per_tuple")
	if err != nil {
		return nil, err
	}
	delay, err := conf.FieldDuration("lookup_delay")
	if err != nil {
		return nil, err
	}
	op, err := df.Declare(OpJoin, nil)
	if err != nil {
		return nil, err
	}
	// after its copy's filter, or its input in the count part (no filter)
	from := OpFilter
	if op != nil && df.Op(sameCopy(OpFilter, OpJoin, op)) == nil {
		from = stage.InputOperator
	}
	if err := connectCopy(df, from, OpJoin, op); err != nil {
		return nil, err
	}
	if w := df.Op(OpWindow); w != nil {
		if err := df.Connect(op, w); err != nil {
			return nil, err
		}
	}
	filter := chains.of(op)
	if filter != nil { // one thread runs both, one after the other
		if err := df.OnThread(copyThread(op), filter, op); err != nil {
			return nil, err
		}
	}
	c, err := connectRedis(addr)
	if err != nil {
		return nil, err
	}
	return &redisJoin{c: c, hash: hash, unknown: mgr.Metrics().NewCounter("ysb_unknown_ads"), op: op, filter: filter, work: work, delay: delay}, nil
}

// copyThread names the thread that runs an input copy's processors
// (join: pipeline thread 0, join.1: pipeline thread 1).
func copyThread(op *dataflow.Operator) string {
	n := "0"
	if _, suffix, ok := strings.Cut(op.Name(), "."); ok {
		n = suffix
	}
	return "pipeline thread " + n
}

// redisConnectTimeout bounds the join's first connection to Redis.
const redisConnectTimeout = 10 * time.Second

// connectRedis connects the join before the job reads its first event: a
// connection made at the first lookup held the trial's first views for as
// long as its name took to resolve (seconds in a container network whose
// DNS forwards what it does not know to an unreachable upstream), past
// the windows' lateness, so the engine dropped them as late and the trial
// owed every count (CI, 2026-11-27). The name is resolved once, here: the
// pool opens more connections when more pipeline threads look up at once
// (a faster trial), and each new one resolved the name again, with the
// same delay, at the start of a trial (CI, 2026-11-28: the first window of
// the 4 k/s trial lost).
func connectRedis(addr string) (*redis.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), redisConnectTimeout)
	defer cancel()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("ysb_redis_join: Redis address %q: %w", addr, err)
	}
	ips, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("ysb_redis_join: resolve Redis at %s: %w", addr, err)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("ysb_redis_join: resolve Redis at %s: no address", addr)
	}
	resolved := net.JoinHostPort(ips[0], port)
	var d net.Dialer
	c := redis.NewClient(&redis.Options{Addr: addr, Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, resolved)
	}})
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("ysb_redis_join: connect to Redis at %s: %w", addr, err)
	}
	return c, nil
}

func newWindowCount(conf *service.ParsedConfig, df *dataflow.Job) (windowCount, error) {
	work, err := conf.FieldDuration("work_per_tuple")
	if err != nil {
		return windowCount{}, err
	}
	op, err := df.Declare(OpWindow, nil)
	if err != nil {
		return windowCount{}, err
	}
	for _, e := range joins(df) {
		if err := df.Connect(e, op); err != nil {
			return windowCount{}, err
		}
	}
	return windowCount{op: op, work: work}, nil
}

// workField is an operator's injected work: CPU spent on what of, an
// experiment's known limit (docs/sut.md), never in a benchmark's job.
func workField(name, what string) *service.ConfigField {
	return service.NewDurationField(name).Default("0s").Advanced().
		Description("an injected limit: spin the CPU this long on " + what + " (0: none)")
}

// spin keeps the CPU busy for d: injected work (workField).
func spin(d time.Duration) {
	if d <= 0 {
		return
	}
	for start := time.Now(); time.Since(start) < d; {
	}
}

// joins are df's join operators declared so far.
func joins(df *dataflow.Job) []*dataflow.Operator {
	var out []*dataflow.Operator
	for i := 0; ; i++ {
		name := OpJoin
		if i > 0 {
			name = fmt.Sprintf("%s.%d", OpJoin, i)
		}
		op := df.Op(name)
		if op == nil {
			return out
		}
		out = append(out, op)
	}
}

type filter struct {
	op      *dataflow.Operator // nil: not accounted
	work    time.Duration      // injected per event (workField)
	chained bool               // a join follows on its thread and marks it waiting
}

// ProcessBatch keeps a batch's views, busy while it does.
//
// Then it waits for its next batch, or, chained and with views to pass
// on, is blocked on its output until the join has done with them: the
// engine gives it no batch before. As waiting, a join's stall read as the
// filter's (the filter "waiting" with its input blocked).
func (f *filter) ProcessBatch(_ context.Context, batch service.MessageBatch) (out []service.MessageBatch, err error) {
	f.op.Busy()
	defer func() {
		if f.chained && len(out) > 0 {
			f.op.Blocked()
		} else {
			f.op.Waiting()
		}
	}()
	logPoints(f.op, batch)
	defer f.op.Processed(1, uint64(len(batch)))
	spin(f.work * time.Duration(len(batch)))
	views := batch[:0]
	for i, m := range batch {
		v, err := m.AsStructured()
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, fmt.Errorf("ysb_filter: message %d is not an object (%v)", i, err)
		}
		if obj[cpbenthos.FieldEventType] == "view" {
			views = append(views, m)
		}
	}
	if len(views) == 0 {
		return nil, nil
	}
	return []service.MessageBatch{views}, nil
}

func (*filter) Close(context.Context) error { return nil }

type redisJoin struct {
	c       *redis.Client
	hash    string
	unknown *service.MetricCounter
	op      *dataflow.Operator // nil: not accounted
	filter  *dataflow.Operator // its copy's filter when chained (ysb_filter's chained), else nil
	work    time.Duration      // injected per event (workField)
	delay   time.Duration      // injected per lookup (lookup_delay)
}

// ProcessBatch is the join of one batch: busy from its start to its end,
// each tuple's point logged as it arrives (the operator waits between
// batches: the engine does not say whether it is held by its output).
func (j *redisJoin) ProcessBatch(ctx context.Context, batch service.MessageBatch) ([]service.MessageBatch, error) {
	j.op.Busy()
	defer j.filter.Waiting() // on this thread: the filter may take its next batch
	defer j.op.Waiting()
	logPoints(j.op, batch)
	defer j.op.Processed(1, uint64(len(batch))) // finished: counted at the end, while busy
	spin(j.work * time.Duration(len(batch)))
	return j.join(ctx, batch)
}

// logPoints logs each message's tuple id at op's point.
func logPoints(op *dataflow.Operator, batch service.MessageBatch) {
	if !op.Profiled() { // a metadata lookup per tuple costs when nothing logs it
		return
	}
	for _, m := range batch {
		if id, ok := m.MetaGetMut(cpbenthos.MetaTupleID); ok {
			if v, ok := id.(uint64); ok {
				op.Log(v)
			}
		}
	}
}

func (j *redisJoin) join(ctx context.Context, batch service.MessageBatch) ([]service.MessageBatch, error) {
	ads := make([]string, len(batch))
	objs := make([]map[string]any, len(batch))
	for i, m := range batch {
		v, err := m.AsStructuredMut()
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, fmt.Errorf("ysb_redis_join: message %d is not an object (%v)", i, err)
		}
		objs[i] = obj
		ads[i], _ = obj[cpbenthos.FieldAdID].(string)
	}
	if j.delay > 0 {
		time.Sleep(j.delay)
	}
	campaigns, err := j.c.HMGet(ctx, j.hash, ads...).Result()
	if err != nil {
		return nil, fmt.Errorf("ysb_redis_join: HMGET %s: %w", j.hash, err)
	}
	out := batch[:0]
	for i, m := range batch {
		c, ok := campaigns[i].(string)
		if !ok {
			j.unknown.Incr(1)
			continue
		}
		objs[i][FieldCampaign] = c
		m.SetStructuredMut(objs[i])
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return []service.MessageBatch{out}, nil
}

func (j *redisJoin) Close(context.Context) error { return j.c.Close() }

type windowCount struct {
	op   *dataflow.Operator // nil: not accounted
	work time.Duration      // injected per view counted (workField)
}

// window is one campaign's count in a window.
type window struct {
	count    int64
	id       uint64 // the highest tuple id counted
	intended int64  // the latest intended send time counted
}

// windowChunk is how many views the window reports done at a time: a
// window's batch is the whole window (the buffer's), its work can last
// longer than the accounting's period (4,767 views at 300 µs each took
// 1.4 s), and a batch said done only at its end showed busy periods that
// processed nothing, then one that processed everything: the service
// rates' periods missed it when the end fell outside a trial.
const windowChunk = 64

// ProcessBatch counts one window's batch, busy while it does; with
// injected work, its views are reported done a chunk at a time.
func (w windowCount) ProcessBatch(_ context.Context, batch service.MessageBatch) ([]service.MessageBatch, error) {
	w.op.Busy()
	defer w.op.Waiting()
	logPoints(w.op, batch)
	if w.work <= 0 { // counting alone takes microseconds a view
		defer w.op.Processed(1, uint64(len(batch)))
		return count(batch)
	}
	for done := 0; done < len(batch); {
		n := min(windowChunk, len(batch)-done)
		spin(w.work * time.Duration(n))
		done += n
		var batches uint64
		if done == len(batch) {
			batches = 1
		}
		w.op.Processed(batches, uint64(n))
	}
	return count(batch)
}

// count groups a window's events by campaign.
func count(batch service.MessageBatch) ([]service.MessageBatch, error) {
	if len(batch) == 0 {
		return nil, nil
	}
	endStamp, ok := batch[0].MetaGet("window_end_timestamp")
	end, err := time.Parse(time.RFC3339Nano, endStamp)
	if !ok || err != nil {
		return nil, fmt.Errorf("ysb_window_count: the batch has no window end (%q, %v): put it after a system_window buffer", endStamp, err)
	}
	// the buffer's windows are (start, end]: with the job's half
	// millisecond, end is the contract's exclusive end
	endMs := end.UnixMilli()
	byKey := map[string]*window{}
	for i, m := range batch {
		v, err := m.AsStructured()
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, fmt.Errorf("ysb_window_count: message %d is not an object (%v)", i, err)
		}
		key, _ := obj[FieldCampaign].(string)
		id, _ := m.MetaGetMut(cpbenthos.MetaTupleID)
		intended, _ := m.MetaGetMut(cpbenthos.MetaIntendedNs)
		idv, ok1 := id.(uint64)
		tv, ok2 := intended.(int64)
		if key == "" || !ok1 || !ok2 {
			return nil, fmt.Errorf("ysb_window_count: message %d lacks a campaign or its tuple identity", i)
		}
		w := byKey[key]
		if w == nil {
			w = &window{}
			byKey[key] = w
		}
		w.count++
		w.id, w.intended = max(w.id, idv), max(w.intended, tv)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	// in the order of their latest events' ids: each sender's stream then
	// reaches the receivers in its order, as the analyses' per-tuple joins
	// read it (a stream's tuples in order at every point)
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(byKey[a].id, byKey[b].id) })
	out := make(service.MessageBatch, 0, len(keys))
	for _, k := range keys {
		w := byKey[k]
		m := service.NewMessage(nil)
		m.SetStructuredMut(map[string]any{cpbenthos.FieldKey: k, cpbenthos.FieldWindowEnd: endMs, cpbenthos.FieldCount: w.count})
		m.MetaSetMut(cpbenthos.MetaTupleID, w.id)
		m.MetaSetMut(cpbenthos.MetaIntendedNs, w.intended)
		out = append(out, m)
	}
	return []service.MessageBatch{out}, nil
}

func (windowCount) Close(context.Context) error { return nil }
